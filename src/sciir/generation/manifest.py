"""The generation manifest (one row per generator and sample: role, status, reason, meta), the seconds
from each request's sending to its image, and generate's metrics (with each generator's wall seconds).

The seconds differ on every run, so they are a table of their own (``generation_timings``, logged to
MLflow only) and never a column of the DVC-tracked manifest: a rerun writes the manifest byte for byte.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pandas as pd

from sciir.backends.base import GenerationResult, ImageGenerator

logger = logging.getLogger(__name__)

MANIFEST_COLUMNS = ["model", "sample_id", "backend", "role", "seed", "status", "reason", "meta"]
TIMING_COLUMNS = ["model", "sample_id", "seconds"]


def manifest_row(
    model: str, generator: ImageGenerator, seed: int, result: GenerationResult, reason: str | None
) -> dict[str, Any]:
    """One manifest row, with the generator's role; ``reason`` set means the generation failed."""
    return {
        "model": model,
        "sample_id": result.sample_id,
        "backend": result.meta.get("backend") or generator.identity()["backend"],
        "role": generator.role,
        "seed": seed,
        "status": "failed" if reason else "ok",
        "reason": reason,
        "meta": json.dumps({**result.meta, "cached": result.cached}, sort_keys=True, default=str),
    }


def timing_row(model: str, sample_id: str, seconds: float) -> dict[str, Any]:
    """One row of the timings table: the seconds from the request's sending to its image (0 for a sample
    never sent)."""
    return {"model": model, "sample_id": sample_id, "seconds": seconds}


def generation_metrics(
    manifest: pd.DataFrame, seconds: Mapping[str, float], generators: dict[str, ImageGenerator]
) -> dict[str, float]:
    """Per model: ok and failed counts, the wall seconds it took (``seconds``), and response-cache
    hits/misses when it is cached."""
    metrics: dict[str, float] = {}
    for model, generator in generators.items():
        rows = manifest[manifest["model"] == model]
        metrics[f"{model}.ok"] = float((rows["status"] == "ok").sum())
        metrics[f"{model}.failed"] = float((rows["status"] == "failed").sum())
        metrics[f"{model}.seconds"] = float(seconds.get(model, 0.0))
        if generator.stats:  # empty when it is not cached
            metrics[f"{model}.cache_hits"] = float(generator.stats.get("hits", 0))
            metrics[f"{model}.cache_misses"] = float(generator.stats.get("misses", 0))
    return metrics


def log_aibench_failures(manifest: pd.DataFrame) -> None:
    """One line per generator that could not draw some AIBench papers, with its first reason."""
    failed = manifest[manifest["status"] == "failed"]
    for model, rows in failed.groupby("model", sort=True):
        logger.warning(
            "AIBench generation: %s failed on %d of %d papers (first reason: %s)",
            model,
            len(rows),
            int((manifest["model"] == model).sum()),
            rows["reason"].iloc[0],
        )


def warn_if_nothing_drawn(manifest: pd.DataFrame, samples: int) -> None:
    """One warning when generate draws no image of a benchmark of ``samples`` samples: every request failed
    (each reason is in the manifest), or there was nothing to draw. The run still completes: the manifest is
    written and the image folder left empty, which evaluate reports as missing images, never as scores."""
    if (manifest["status"] == "ok").any():
        return
    if samples == 0:
        logger.warning("generate drew no image: the benchmark holds no sample")
    elif not manifest.empty:
        logger.warning(
            "generate drew no image: all %d requests of %d generators failed; each reason is in the "
            "generation manifest, e.g. %s",
            len(manifest),
            manifest["model"].nunique(),
            manifest["reason"].dropna().iloc[0],
        )
