"""The curated table: one row per panel region of every kept figure, kept or rejected with its reason, or a
single rejected row when the image cannot be read or holds no content; the counts of its statuses, and
the warning of a run that kept no panel.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, cast

import pandas as pd

from sciir.figures.figure_work import FigureOutcome, PanelOutcome
from sciir.figures.ids import sample_id
from sciir.figures.isolated import Failed
from sciir.figures.panel_split import Box
from sciir.figures.shard_store import ShardStore
from sciir.images.payload import ImageFile

logger = logging.getLogger(__name__)

CURATED_COLUMNS = [
    "sample_id", "figure_uid", "panel_index", "n_panels", "x0", "y0", "x1", "y1", "doi", "url",
    "figure_id", "caption", "licence_name", "licence_url", "methods_text", "status", "reason", "changes",
]  # fmt: skip
_BOX_COLUMNS = ["x0", "y0", "x1", "y1"]


def _panel_row(
    figure: dict[str, Any],
    methods_text: str | None,
    *,
    panel_index: int,
    n_panels: int,
    box: Box | None,
    reason: str | None,
    changes: tuple[str, ...] = (),
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
        # What was done to the source pixels (paper A.4's list of changes); kept panels only.
        "changes": None if reason else json.dumps(list(changes)),
    }


def _whole_figure_rejected(figure: dict[str, Any], methods_text: str | None, reason: str) -> dict[str, Any]:
    """The single row of a figure that yields no panel regions at all."""
    return _panel_row(figure, methods_text, panel_index=0, n_panels=0, box=None, reason=reason)


def figure_rows(
    figure: dict[str, Any], methods_text: str | None, outcome: FigureOutcome | Failed
) -> tuple[list[dict[str, Any]], dict[str, ImageFile]]:
    """Rows for every panel region of one figure, and the standardised images of the kept ones."""
    where = f"{figure['figure_id']} in {figure['doi']}"
    problem = outcome.reason if isinstance(outcome, Failed) else outcome.problem
    if problem is not None:
        reason = f"figure {where}: image file {figure['image_path']}: {problem}"
        return [_whole_figure_rejected(figure, methods_text, reason)], {}
    panels = cast(FigureOutcome, outcome).panels  # a Failed outcome has a reason: it returned above
    rows, images = [], {}
    for panel_index, panel in enumerate(panels):
        rows.append(_outcome_row(figure, methods_text, panel_index, len(panels), panel, where))
        if panel.png is not None:
            images[rows[-1]["sample_id"]] = ImageFile.of_bytes(panel.png, f"{rows[-1]['sample_id']}.png")
    return rows, images


def _outcome_row(
    figure: dict[str, Any],
    methods_text: str | None,
    panel_index: int,
    n_panels: int,
    panel: PanelOutcome,
    where: str,
) -> dict[str, Any]:
    reason = f"panel {panel_index} of {where}: {panel.problem}" if panel.problem else None
    return _panel_row(
        figure,
        methods_text,
        panel_index=panel_index,
        n_panels=n_panels,
        box=panel.box,
        reason=reason,
        changes=panel.changes,
    )


def stored_curated(store: ShardStore, keys: Sequence[str]) -> tuple[pd.DataFrame, dict[str, ImageFile]]:
    """The curated table, from the rows of the shards ``keys`` in figure order, and a handle on each kept
    panel's image."""
    tables = [store.read_rows(key) for key in keys]
    curated = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=CURATED_COLUMNS)
    curated = curated.reindex(columns=CURATED_COLUMNS)
    curated[_BOX_COLUMNS] = curated[_BOX_COLUMNS].astype("Int64")
    images = {
        sample_id: ImageFile.at(store.shard_path(key, f"{sample_id}.png"))
        for key, table in zip(keys, tables, strict=True)
        for sample_id in table.loc[table["status"] == "kept", "sample_id"]
    }
    return curated, images


PANEL_STATUSES = {"kept": "panels_kept", "rejected": "panels_rejected", "review": "panels_awaiting_review"}


def panel_counts(curated: pd.DataFrame) -> dict[str, float]:
    """Counts of panel rows by status: kept, rejected and awaiting a person's review in the queue, which is
    neither kept nor rejected yet."""
    counts = curated["status"].value_counts()
    unknown = sorted(set(counts.index) - set(PANEL_STATUSES))
    if unknown:
        raise ValueError(f"curated: status {unknown} is none of {sorted(PANEL_STATUSES)}")
    return {
        "panels_total": float(len(curated)),
        **{metric: float(counts.get(status, 0)) for status, metric in PANEL_STATUSES.items()},
    }


def warn_if_no_panel_kept(curated: pd.DataFrame) -> None:
    """One warning when curate keeps no panel: how many were rejected or wait for review, and where each
    reason is. The run still completes: its tables are written and its image folder is left empty."""
    if (curated["status"] == "kept").any():
        return
    if curated.empty:
        logger.warning("curate kept no panel: ingest kept no figure to curate (see its figures table)")
        return
    rejected = curated[curated["status"] == "rejected"]
    waiting = len(curated) - len(rejected)
    outcome = f"all {len(curated)} panels were rejected"
    if waiting:  # the rest await a person's decision (status review)
        outcome = (
            f"{len(rejected)} of {len(curated)} panels were rejected, {waiting} wait in the review queue"
        )
    reasons = list(rejected["reason"].dropna())
    logger.warning(
        "curate kept no panel: %s; each reason is in the curated table%s",
        outcome,
        f", e.g. {reasons[0]}" if reasons else "",
    )
