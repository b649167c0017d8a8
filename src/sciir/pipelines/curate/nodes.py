"""Curate nodes: split kept figures into panels, apply the geometric rules, standardise the survivors.

Every kept figure yields at least one ``curated`` row: one per panel region found, kept or rejected
with its reason, or a single rejected row when the image cannot be read or holds no content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.ids import sample_id
from sciir.imaging import (
    Box,
    GeometryRules,
    SplitSettings,
    UnreadableImageError,
    open_verified,
    panel_rejections,
    split_panels,
    standardise,
    to_srgb,
)

CURATED_COLUMNS = [
    "sample_id", "figure_uid", "panel_index", "n_panels", "x0", "y0", "x1", "y1", "doi", "url",
    "figure_id", "caption", "licence_name", "licence_url", "methods_text", "status", "reason",
]  # fmt: skip
_BOX_COLUMNS = ["x0", "y0", "x1", "y1"]


class StandardiseParams(BaseModel):
    """Output size and the padding rule of paper B.2."""

    model_config = ConfigDict(extra="forbid")

    size_px: int = 1024
    dominant_edge_share: float = 0.55


class CurateParams(BaseModel):
    """``params:curate`` (conf/base/parameters_curate.yml)."""

    model_config = ConfigDict(extra="forbid")

    split: SplitSettings = Field(default_factory=SplitSettings)
    geometry: GeometryRules = Field(default_factory=GeometryRules)
    standardise: StandardiseParams = Field(default_factory=StandardiseParams)


def _panel_row(
    figure: dict[str, Any],
    methods_text: str | None,
    *,
    panel_index: int,
    n_panels: int,
    box: Box | None,
    reason: str | None,
) -> dict[str, Any]:
    """One curated row: the figure's metadata chain plus one panel region and its outcome."""
    return {
        "sample_id": sample_id(figure["doi"], figure["figure_id"], panel_index),
        "figure_uid": figure["figure_uid"],
        "panel_index": panel_index,
        "n_panels": n_panels,
        "x0": box.x0 if box else None,
        "y0": box.y0 if box else None,
        "x1": box.x1 if box else None,
        "y1": box.y1 if box else None,
        "doi": figure["doi"],
        "url": figure["url"],
        "figure_id": figure["figure_id"],
        "caption": figure["caption"],
        "licence_name": figure["licence_name"],
        "licence_url": figure["licence_url"],
        "methods_text": methods_text,
        "status": "rejected" if reason else "kept",
        "reason": reason,
    }


def _whole_figure_rejected(figure: dict[str, Any], methods_text: str | None, reason: str) -> dict[str, Any]:
    """The single row of a figure that yields no panel regions at all."""
    return _panel_row(figure, methods_text, panel_index=0, n_panels=0, box=None, reason=reason)


def _curate_figure(
    figure: dict[str, Any], methods_text: str | None, settings: CurateParams
) -> tuple[list[dict[str, Any]], dict[str, Image.Image]]:
    """Rows for every panel region of one figure, and the standardised images of the kept ones."""
    where = f"{figure['figure_id']} in {figure['doi']}"
    try:
        image = to_srgb(open_verified(Path(figure["image_path"])))
    except UnreadableImageError as error:
        problem = f"image file {figure['image_path']}: {error}"
        return [_whole_figure_rejected(figure, methods_text, f"figure {where}: {problem}")], {}
    boxes = split_panels(image, settings.split)
    if not boxes:
        problem = f"{figure['image_path']} holds only background, no panel content"
        return [_whole_figure_rejected(figure, methods_text, f"figure {where}: {problem}")], {}
    rows, images = [], {}
    problems = panel_rejections(boxes, image.size, settings.geometry)
    for panel_index, (box, problem) in enumerate(zip(boxes, problems, strict=True)):
        reason = f"panel {panel_index} of {where}: {problem}" if problem else None
        row = _panel_row(
            figure, methods_text, panel_index=panel_index, n_panels=len(boxes), box=box, reason=reason
        )
        if problem is None:
            crop = image.crop((box.x0, box.y0, box.x1, box.y1))
            images[row["sample_id"]] = standardise(
                crop,
                settings.standardise.size_px,
                settings.split.background_tolerance,
                settings.standardise.dominant_edge_share,
            )
        rows.append(row)
    return rows, images


def curate_figures(
    figures: pd.DataFrame, articles: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, Image.Image]]:
    """Split, filter and standardise every kept figure (``curated``, ``curated_images``).

    Figures rejected by ingest are not listed again: their reasons stay in ``figures``.
    """
    settings = CurateParams.model_validate(params)
    methods_by_article = dict(zip(articles["article_id"], articles["methods_text"], strict=True))
    rows: list[dict[str, Any]] = []
    images: dict[str, Image.Image] = {}
    for figure in figures[figures["status"] == "kept"].to_dict("records"):
        figure_rows, figure_images = _curate_figure(
            figure, methods_by_article.get(figure["article_id"]), settings
        )
        rows.extend(figure_rows)
        images.update(figure_images)
    curated = pd.DataFrame(rows, columns=CURATED_COLUMNS)
    curated[_BOX_COLUMNS] = curated[_BOX_COLUMNS].astype("Int64")
    return curated, images


def summarise_curate(curated: pd.DataFrame) -> dict[str, float]:
    """Counts of panel rows, for MLflow (``curate_metrics``)."""
    kept = int((curated["status"] == "kept").sum())
    return {
        "panels_total": float(len(curated)),
        "panels_kept": float(kept),
        "panels_rejected": float(len(curated) - kept),
    }
