"""The tables annotate writes from its samples (``sciir.annotation.sample_work``): ``annotations`` (one row
per kept curated sample, docs/data_contract.md), ``checklists`` (one row per question) and the run's
metrics.

A sample whose image cannot be read or whose answer is unusable is a ``failed`` row naming the sample and
the task; a sample with every track score below tau is an ``ok`` row without labels (low reasoning
content, appendix B.4). What was not answered is null.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from sciir.annotation.sample_work import SampleWork
from sciir.backends.cache import stats_metrics
from sciir.tasks.annotation import CHECKLIST_COLUMNS, TRACKS

logger = logging.getLogger(__name__)

ANNOTATION_COLUMNS = (
    "sample_id",
    *(f"score_{track}" for track in TRACKS),
    *(f"label_{track}" for track in TRACKS),
    "terms",
    "required_text",
    "relations",
    "laws",
    *(f"{part}_{track}" for track in TRACKS for part in ("terms", "visualizations")),
    "sci_rcot",
    "abstract_prompt",
    "status",
    "reason",
)


def _json(value: Any) -> str | None:
    return json.dumps(value, ensure_ascii=False) if value is not None else None


def annotation_row(work: SampleWork, tau: int) -> dict[str, Any]:
    """The ``annotations`` row of one sample (docs/data_contract.md); what was not answered is null."""
    scores, reasoning, labels = work.track_scores, work.reasoning, work.labels(tau)
    row: dict[str, Any] = {"sample_id": work.sample_id}
    for track in TRACKS:
        row[f"score_{track}"] = getattr(scores, track) if scores else None
        row[f"label_{track}"] = labels.get(track)
    row["terms"] = _json(reasoning.terms) if reasoning else None
    row["required_text"] = _json(reasoning.required_text) if reasoning else None
    row["relations"] = _json(reasoning.relations) if reasoning else None
    row["laws"] = _json(reasoning.laws) if reasoning else None
    # Per track, what the image shows (null when the annotator gave no per-track answer).
    evidence = reasoning.tracks if reasoning else None
    for track in TRACKS:
        shown = evidence.of(track) if evidence else None
        row[f"terms_{track}"] = _json(shown.terms) if shown else None
        row[f"visualizations_{track}"] = _json(shown.visualizations) if shown else None
    row["sci_rcot"] = reasoning.sci_rcot if reasoning else None
    row["abstract_prompt"] = work.abstract_prompt.prompt if work.abstract_prompt else None
    row["status"] = "failed" if work.failures else "ok"
    row["reason"] = "; ".join(work.failures) or (
        f"low reasoning content: every track score is below tau={tau}; no abstract prompt or checklist"
        if work.low_reasoning
        else None
    )
    return row


def checklist_rows(work: SampleWork) -> list[dict[str, Any]]:
    """The ``checklists`` rows of one sample, one per question (none for a failed sample)."""
    if work.checklist is None or work.failures:
        return []
    return [
        {
            "sample_id": work.sample_id,
            "question_id": q.id,
            "layer": q.layer,
            "track": q.track,
            "kind": q.kind,
            "polarity": q.polarity,
            "about": _json(q.about),
            "question": q.question,
            "expected_text": q.expected_text,
            "parent_ids": _json(q.parent_ids),
        }
        for q in work.checklist.questions
    ]


def annotations_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(ANNOTATION_COLUMNS))
    for track in TRACKS:
        frame[f"score_{track}"] = frame[f"score_{track}"].astype("Int64")
        frame[f"label_{track}"] = frame[f"label_{track}"].astype("boolean")
    return frame


def annotation_tables(samples: Sequence[SampleWork], tau: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``annotations`` and ``checklists`` of the samples; each failed sample's reason is logged."""
    annotations = annotations_frame([annotation_row(work, tau) for work in samples])
    checklists = pd.DataFrame(
        [row for work in samples for row in checklist_rows(work)], columns=list(CHECKLIST_COLUMNS)
    )
    for reason in annotations.loc[annotations["status"] == "failed", "reason"]:
        logger.warning("annotate: %s", reason)
    return annotations, checklists


def annotate_metrics(
    annotations: pd.DataFrame, checklists: pd.DataFrame, stats: Mapping[str, float]
) -> dict[str, float]:
    """Counts of the run, label counts per track, and the annotator's ``stats`` (when it is cached: its
    cache hits and misses with the HTTP requests, tokens and estimated cost of the calls sent; see
    ``stats_metrics``)."""
    ok = annotations["status"] == "ok"
    metrics = {
        "samples": float(len(annotations)),
        "annotated_ok": float(ok.sum()),
        "failed": float((annotations["status"] == "failed").sum()),
        "low_reasoning": float(
            (ok & ~annotations[[f"label_{t}" for t in TRACKS]].fillna(False).any(axis=1)).sum()
        ),
        "checklist_questions": float(len(checklists)),
    }
    for track in TRACKS:
        metrics[f"label_{track}"] = float(annotations[f"label_{track}"].fillna(False).sum())
    metrics.update(stats_metrics(stats))
    return metrics
