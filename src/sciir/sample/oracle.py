"""Oracle ratings from ground truth: a stand-in for human raters on the embedded sample.

The embedded figures keep their ground truth beside them (``<image file stem>.truth.json``). For an
image a generator made, the oracle compares the panel's ``required_text`` with what the generator
reports it drew (``drawn_labels`` in the manifest meta; a generator that reports none drew no known
text) and with the faults it planted (``planted_faults``). On the 1-5 Likert scale of paper G.1:

    score = clip(1 + 4 * drawn_share - fault_penalty * structural_faults, 1, 5)

``drawn_share`` is the share of required strings drawn exactly (1 when nothing is required).
``structural_faults`` counts planted faults of kinds the drawn labels do not already show (a
reversed edge); misspelled or dropped labels lower ``drawn_share`` instead and are not counted twice.
These ratings carry the rater id ``oracle_ground_truth`` and are never presented as human ratings.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)

ORACLE_RATER_ID = "oracle_ground_truth"
LIKERT_MIN, LIKERT_MAX = 1.0, 5.0


class OracleInputError(ValueError):
    """Ground truth or generator meta that cannot be used to rate an image."""


class OracleConfig(BaseModel):
    """How planted faults lower the oracle score."""

    model_config = ConfigDict(extra="forbid")

    fault_penalty: float = Field(default=1.0, ge=0)
    # Faults that change the drawn labels, so drawn_share already counts them.
    text_fault_kinds: list[str] = Field(default_factory=lambda: ["misspell", "drop_node"])


def truth_path(image_path: str | Path) -> Path:
    """Where the ground truth of a source figure lies: ``<image path without suffix>.truth.json``."""
    path = Path(image_path)
    return path.with_name(f"{path.stem}.truth.json")


def panel_truth(image_path: str | Path, panel_index: int) -> dict[str, Any]:
    """The ground truth of one panel of a source figure; raises OracleInputError naming what is wrong."""
    path = truth_path(image_path)
    try:
        truth = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise OracleInputError(f"no ground truth file {path}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OracleInputError(f"ground truth file {path} is not valid JSON: {exc}") from exc
    panels = truth.get("panels") if isinstance(truth, dict) else None
    if not isinstance(panels, list):
        raise OracleInputError(f"ground truth file {path} has no 'panels' list")
    for panel in panels:
        if isinstance(panel, dict) and panel.get("panel_index") == panel_index:
            return panel
    raise OracleInputError(f"ground truth file {path} has no panel {panel_index}")


def _string_list(value: Any, what: str) -> list[str]:
    """A list of strings, or OracleInputError naming the field."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise OracleInputError(f"{what} is not a list of strings: {value!r}")
    return value


def drawn_share(required_text: Sequence[str], drawn_labels: Sequence[str]) -> float:
    """Share of the required strings drawn with exactly this spelling (1 when nothing is required)."""
    if not required_text:
        return 1.0
    drawn = set(drawn_labels)
    return sum(text in drawn for text in required_text) / len(required_text)


def structural_fault_count(planted_faults: Sequence[Mapping[str, Any]], config: OracleConfig) -> int:
    """Planted faults that the drawn labels do not show (e.g. a reversed edge)."""
    return sum(fault.get("kind") not in config.text_fault_kinds for fault in planted_faults)


def oracle_score(
    required_text: Sequence[str],
    drawn_labels: Sequence[str],
    planted_faults: Sequence[Mapping[str, Any]],
    config: OracleConfig,
) -> float:
    """The 1-5 oracle score of one image (formula in the module docstring)."""
    raw = (
        LIKERT_MIN
        + (LIKERT_MAX - LIKERT_MIN) * drawn_share(required_text, drawn_labels)
        - config.fault_penalty * structural_fault_count(planted_faults, config)
    )
    return min(LIKERT_MAX, max(LIKERT_MIN, raw))


def generator_meta(meta: Any) -> dict[str, Any]:
    """A manifest ``meta`` cell (JSON text, a dict or empty) as a dict."""
    if meta is None or (isinstance(meta, str) and not meta.strip()):
        return {}
    parsed = json.loads(meta) if isinstance(meta, str) else meta
    if not isinstance(parsed, dict):
        raise OracleInputError(f"generator meta is not a JSON object: {meta!r}")
    return parsed


def rate_image(image_path: str | Path, panel_index: int, meta: Any, config: OracleConfig) -> float:
    """Oracle score of one generated image from its source panel's truth and its generator's meta."""
    truth = panel_truth(image_path, panel_index)
    try:
        details = generator_meta(meta)
    except json.JSONDecodeError as exc:
        raise OracleInputError(f"generator meta is not valid JSON: {exc}") from exc
    required = _string_list(truth.get("required_text", []), f"required_text of {truth_path(image_path)}")
    drawn = _string_list(details.get("drawn_labels", []), "drawn_labels in generator meta")
    faults = details.get("planted_faults", [])
    if not isinstance(faults, list) or not all(isinstance(fault, dict) for fault in faults):
        raise OracleInputError(f"planted_faults in generator meta is not a list of objects: {faults!r}")
    return oracle_score(required, drawn, faults, config)


def _generated_panels(
    generation_manifest: pd.DataFrame, benchmark: pd.DataFrame, curated: pd.DataFrame, figures: pd.DataFrame
) -> pd.DataFrame:
    """Benchmark images a generator made, with the source figure path and panel they stand for."""
    made = generation_manifest[
        (generation_manifest["status"] == "ok")
        & generation_manifest["sample_id"].isin(benchmark["sample_id"])
    ]
    panels = curated[["sample_id", "figure_uid", "panel_index"]].drop_duplicates("sample_id")
    sources = figures[["figure_uid", "image_path"]].drop_duplicates("figure_uid")
    return made.merge(panels, on="sample_id", how="left").merge(sources, on="figure_uid", how="left")


def _rate_generated_panel(row: Any, config: OracleConfig) -> float:
    """Oracle score of one generated panel; OracleInputError names the image when it cannot be rated."""
    image_id = f"{row.model}/{row.sample_id}"
    if pd.isna(row.image_path) or pd.isna(row.panel_index):
        raise OracleInputError(f"{image_id}: no curated panel or source figure for sample {row.sample_id}")
    try:
        return rate_image(row.image_path, int(row.panel_index), row.meta, config)
    except OracleInputError as exc:
        raise OracleInputError(f"{image_id}: {exc}") from exc


def oracle_ratings(
    generation_manifest: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    figures: pd.DataFrame,
    config: OracleConfig,
) -> pd.DataFrame:
    """Ratings (image_id, rater_id, score) of every benchmark image a generator made, by the oracle.

    Failed generations have no image to rate. An image whose ground truth or meta cannot be used
    gets no rating; each is logged with its reason.
    """
    made = generation_manifest[generation_manifest["status"] == "ok"]
    logger.info(
        "oracle: %d generations failed and have no image to rate", len(generation_manifest) - len(made)
    )
    rows, skipped = [], []
    for row in _generated_panels(generation_manifest, benchmark, curated, figures).itertuples(index=False):
        try:
            score = _rate_generated_panel(row, config)
        except OracleInputError as exc:
            skipped.append(str(exc))
            continue
        rows.append({"image_id": f"{row.model}/{row.sample_id}", "rater_id": ORACLE_RATER_ID, "score": score})
    for reason in skipped:
        logger.warning("oracle could not rate %s", reason)
    logger.info("oracle rated %d images, skipped %d", len(rows), len(skipped))
    return pd.DataFrame(rows, columns=["image_id", "rater_id", "score"])
