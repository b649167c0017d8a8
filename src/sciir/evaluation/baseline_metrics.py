"""Baseline image-text metrics: CLIPScore (Hessel et al. 2021) and VQAScore (Lin et al. 2024).

CLIPScore is ``2.5 * max(cos(image embedding, text embedding), 0)`` from a local CLIP model
(:class:`sciir.backends.clip_score.CLIPScorer`). VQAScore is the probability that a vision-language
model answers "Yes" to a yes/no question about the prompt, read from the log-probabilities of the first
answer token (the ``vqascore`` task, ``sciir.tasks.vqascore``).

A metric is computed only when its model is configured; otherwise it is skipped with one log line and
contributes no rows (:func:`baseline_scores`). A failed model call or an unreadable image is a ``failed``
row with its reason, never a score.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
from PIL import Image

from sciir.aibench.params import BaselineMetricsSettings, ClipSettings, VQAScoreSettings
from sciir.backends.base import VisionLanguageModel
from sciir.backends.clip_score import CLIPScorer
from sciir.evaluation.generated_images import (
    ExpectedImage,
    ImageLoaders,
    NoImageError,
    expected_images,
    load_image,
)
from sciir.evaluation.per_image_requests import ask_per_image
from sciir.tasks.vqascore import build_vqascore_request, vqascore_from_result

logger = logging.getLogger(__name__)

CLIPSCORE = "clipscore"
VQASCORE = "vqascore"
BASELINE_COLUMNS = ("model", "sample_id", "metric", "score", "status", "reason")

CLIP_SKIPPED = "CLIPScore skipped: no CLIP model configured (aibench.baseline_metrics.clip.model_path)"
VQASCORE_SKIPPED = "VQAScore skipped: no VQA model configured (aibench.baseline_metrics.vqascore.backend)"


# ---- the ``baseline_scores`` table


def scored_row(
    model: str, sample_id: str, metric: str, score: float, note: str | None = None
) -> dict[str, Any]:
    return {
        "model": model,
        "sample_id": sample_id,
        "metric": metric,
        "score": score,
        "status": "ok",
        "reason": note,
    }


def failed_row(model: str, sample_id: str, metric: str, reason: str) -> dict[str, Any]:
    return {
        "model": model,
        "sample_id": sample_id,
        "metric": metric,
        "score": None,
        "status": "failed",
        "reason": reason,
    }


def baseline_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """``baseline_scores`` (empty, with these columns, when no metric is configured)."""
    return pd.DataFrame(list(rows), columns=list(BASELINE_COLUMNS)).astype({"score": "float64"})


def baseline_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model and metric: the mean score over scored images, coverage (scored / all) and image count."""
    rows = []
    for (model, metric), frame in scores.groupby(["model", "metric"], sort=True):
        scored = frame["status"] == "ok"
        mean = float(frame.loc[scored, "score"].mean()) if scored.any() else math.nan
        rows.append(
            {
                "model": model,
                "metric": metric,
                "mean": mean,
                "coverage": float(scored.mean()),
                "n": len(frame),
            }
        )
    return pd.DataFrame(rows, columns=["model", "metric", "mean", "coverage", "n"])


# ---- the metrics of each image


def clip_rows(
    jobs: Sequence[ExpectedImage],
    generations: ImageLoaders,
    prompts: Mapping[str, str],
    settings: ClipSettings,
) -> list[dict[str, Any]]:
    """CLIPScore of each image against its benchmark prompt (the model is loaded first: a wrong
    model folder stops the run with its path, as a misconfigured judge would)."""
    scorer = CLIPScorer(
        str(settings.model_path),
        device=settings.device,
        batch_size=settings.batch_size,
        text_prefix=settings.text_prefix,
    )
    scorer.load()
    rows: list[dict[str, Any]] = []
    for start in range(0, len(jobs), settings.batch_size):
        loaded: list[tuple[ExpectedImage, Image.Image]] = []
        for job in jobs[start : start + settings.batch_size]:
            try:
                loaded.append((job, load_image(job, generations)))
            except NoImageError as error:
                rows.append(failed_row(job.model, job.sample_id, CLIPSCORE, str(error)))
        if not loaded:
            continue
        try:
            scores = scorer.score(
                [image for _, image in loaded], [prompts[job.sample_id] for job, _ in loaded]
            )
        except (RuntimeError, ValueError) as error:  # this batch fails, the others go on
            rows += [
                failed_row(job.model, job.sample_id, CLIPSCORE, f"CLIP failed on {job.image_id}: {error}")
                for job, _ in loaded
            ]
            continue
        rows += [
            scored_row(job.model, job.sample_id, CLIPSCORE, score)
            for (job, _), score in zip(loaded, scores, strict=True)
        ]
    return rows


def vqascore_rows(
    jobs: Sequence[ExpectedImage],
    generations: ImageLoaders,
    prompts: Mapping[str, str],
    model: VisionLanguageModel,
    settings: VQAScoreSettings,
) -> list[dict[str, Any]]:
    """VQAScore of each image: P(yes) to the question built from its benchmark prompt."""
    asked = ask_per_image(
        jobs,
        generations,
        model,
        lambda job: {VQASCORE: build_vqascore_request(prompts[job.sample_id])},
        settings.window,
        "vqascore",
    )
    rows = []
    for item in asked:
        job = item.job
        if item.unavailable is not None:
            rows.append(failed_row(job.model, job.sample_id, VQASCORE, item.unavailable))
            continue
        try:
            probability = vqascore_from_result(item.results[VQASCORE])
        except ValueError as error:
            rows.append(
                failed_row(job.model, job.sample_id, VQASCORE, f"VQAScore of {job.image_id}: {error}")
            )
            continue
        rows.append(scored_row(job.model, job.sample_id, VQASCORE, probability.value, probability.note))
    return rows


def baseline_scores(
    generations: ImageLoaders,
    benchmark: pd.DataFrame,
    settings: BaselineMetricsSettings,
    vqascore_model: Callable[[VQAScoreSettings], VisionLanguageModel],
) -> pd.DataFrame:
    """``baseline_scores``: CLIPScore and VQAScore of every model's image of every benchmark sample, each
    metric where configured (one log line for each that is not); ``vqascore_model`` builds the
    configured VQA model, after CLIPScore is done."""
    prompts = dict(zip(benchmark["sample_id"], benchmark["prompt"], strict=True))
    jobs = expected_images(generations, list(benchmark["sample_id"]))
    rows: list[dict[str, Any]] = []
    if settings.clip.model_path:
        rows += clip_rows(jobs, generations, prompts, settings.clip)
    else:
        logger.info(CLIP_SKIPPED)
    if settings.vqascore.backend:
        model = vqascore_model(settings.vqascore)
        rows += vqascore_rows(jobs, generations, prompts, model, settings.vqascore)
    else:
        logger.info(VQASCORE_SKIPPED)
    return baseline_frame(rows)
