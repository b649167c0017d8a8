"""Panel review: curate's review queue, each panel beside its figure and caption, KEEP or REJECT with a note.

Filled from curate's outputs: its review queue (``data/03_primary/review_queue.csv``: the panels its screen was
unsure of and the seeded spot check of its KEEPs), the panels (``data/03_primary/images/<sample_id>.png``) and
ingest's figures table (``image_path`` of each figure, found by ``doi`` and ``figure_id``). An item's key is the
panel's sample id; what the page shows beside it (caption, figure, the screen's answer) is its context. Rows a
person already decided in the file are not queued. Curate reads the answers back through the catalog
(``sciir.catalog.review_decisions_dataset``); the export is the queue's own layout with ``decision`` and
``note`` filled, the file ``curate.review.decisions`` takes.
"""

from __future__ import annotations

import logging
import secrets
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from sciir.figures.review import REVIEW_COLUMNS
from sciir.review.models import Item, Queue
from sciir.review.panel_table import DECISIONS, NAME, SCORES, answer_detail, decisions_table, panel_answers
from sciir.review.queue_store import Refused, agreement_of, ensure_queue
from sciir.review.settings import PanelsSettings
from sciir.stats.agreement import Agreement

logger = logging.getLogger(__name__)

KIND = "panel_review"
NOTE_MAX = 500
CONTEXT_COLUMNS = (
    "queue",
    "doi",
    "figure_id",
    "caption",
    "model_decision",
    "model_confidence",
    "model_reason",
)


@dataclass(frozen=True)
class Filled:
    """What a start added: new panels, panels already decided in the file, panels whose image is missing."""

    added: int
    decided_in_file: int
    without_image: int


def open_queue(session: Session, settings: PanelsSettings) -> Queue:
    config = {"raters_per_item": settings.raters_per_item, "seed": settings.seed}
    return ensure_queue(session, NAME, KIND, config)


def _resolved(path: str, near: Path) -> Path | None:
    """A figure's file: absolute as it is, or relative to the project (a folder above the figures table)."""
    candidate = Path(path)
    if candidate.is_absolute():
        return candidate if candidate.is_file() else None
    for base in near.parents:
        if (base / candidate).is_file():
            return (base / candidate).resolve()
    return None


def figure_files(figures: str | None) -> dict[tuple[str, str], Path]:
    """(doi, figure_id) -> the figure's file, from ingest's figures table; {} without one."""
    if figures is None or not Path(figures).is_file():
        if figures is not None:
            logger.warning(
                "panel review: no figures table at %s, so panels are shown without their figure", figures
            )
        return {}
    table = pd.read_parquet(figures, columns=["doi", "figure_id", "image_path"])
    found: dict[tuple[str, str], Path] = {}
    for doi, figure_id, image_path in table.itertuples(index=False):
        path = _resolved(str(image_path), Path(figures)) if isinstance(image_path, str) else None
        if path is not None:
            found.setdefault((str(doi), str(figure_id)), path)
    return found


def read_queue_file(path: str) -> pd.DataFrame | None:
    """curate's review queue (every cell text); None when the file does not exist yet."""
    if not Path(path).is_file():
        return None
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"sample_id", *CONTEXT_COLUMNS} - set(table.columns)
    if missing:
        raise ValueError(f"panel review: {path} is not curate's review queue (no column {sorted(missing)})")
    return table


def fill(session: Session, queue: Queue, settings: PanelsSettings) -> Filled:
    """Add the panels of curate's review queue not queued yet (and not decided in the file)."""
    table = read_queue_file(settings.queue_file)
    if table is None:
        logger.warning("panel review: no review queue at %s (run curate first)", settings.queue_file)
        return Filled(0, 0, 0)
    known = set(session.scalars(select(Item.key).where(Item.queue_id == queue.id)))
    figures = figure_files(settings.figures)
    added = decided = missing = 0
    for row in table.to_dict("records"):
        sample_id = str(row["sample_id"])
        if sample_id in known:
            continue
        if str(row.get("decision", "")).strip():
            decided += 1
            continue
        panel = Path(settings.images) / (str(row.get("image", "")) or f"{sample_id}.png")
        if not panel.is_file() or Path(str(row.get("image", ""))).name != str(row.get("image", "")):
            missing += 1
            continue
        figure = figures.get((str(row["doi"]), str(row["figure_id"])))
        context: dict[str, Any] = {column: str(row[column]) for column in CONTEXT_COLUMNS}
        context["figure_path"] = None if figure is None else str(figure)
        session.add(
            Item(
                queue_id=queue.id,
                public_id=secrets.token_urlsafe(12),
                key=sample_id,
                path=str(panel.resolve()),
                context=context,
            )
        )
        known.add(sample_id)
        added += 1
    session.flush()
    return Filled(added, decided, missing)


def checked_answer(fields: dict[str, str]) -> tuple[int, str]:
    """The score and detail of a KEEP or REJECT with its note; Refused for anything else (nothing stored)."""
    decision = fields.get("decision", "")
    if decision not in DECISIONS:
        raise Refused(f"a decision is KEEP or REJECT, not {decision[:20]!r}: nothing was stored", 400)
    note = unicodedata.normalize("NFC", fields.get("note", "").strip())
    if len(note) > NOTE_MAX:
        raise Refused(f"a note has at most {NOTE_MAX} characters: nothing was stored", 400)
    if any(unicodedata.category(char).startswith("C") for char in note):
        raise Refused("a note cannot hold control characters: nothing was stored", 400)
    return SCORES[decision], answer_detail(decision, note)


def agreement(session: Session) -> Agreement:
    """Krippendorff's alpha (nominal: KEEP or REJECT) between the raters of the queue so far."""
    answers = panel_answers(session)
    values = pd.DataFrame(
        {
            "unit": answers["sample_id"],
            "rater": answers["rater_id"],
            "value": answers["decision"].map(SCORES),
        }
    )
    return agreement_of(values, "nominal")


def decisions_file(session: Session) -> pd.DataFrame:
    """The queue in curate's review-queue layout (``REVIEW_COLUMNS``) with each panel's decision and note, the
    file ``curate.review.decisions`` takes; panels nobody decided keep both empty."""
    decided = decisions_table(session).set_index("sample_id")
    items = session.scalars(select(Item).join(Queue).where(Queue.name == NAME).order_by(Item.key)).all()
    rows = []
    for item in items:
        context = item.context or {}
        known = item.key in decided.index
        rows.append(
            {
                **{column: context.get(column, "") for column in CONTEXT_COLUMNS},
                "sample_id": item.key,
                "image": Path(item.path).name,
                "decision": decided.at[item.key, "decision"] if known else "",
                "note": decided.at[item.key, "note"] if known else "",
            }
        )
    return pd.DataFrame(rows, columns=list(REVIEW_COLUMNS))
