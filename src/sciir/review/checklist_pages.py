"""Checklist review's pages: a benchmark sample's prompts and image beside its checklist, every question's text,
category, expected text and parents editable, deletable (keys 1-9), new questions added (n), the checklist saved
(s) as the rater's answer (``sciir.review.checklist_queue``), over the pages every queue shares
(``sciir.review.queue_pages``). A refused form comes back as it was typed."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from sciir.review import checklist_queue
from sciir.review.models import Answer, Item
from sciir.review.pages import ReviewContext
from sciir.review.queue_pages import QueuePage
from sciir.review.raters import SignedIn
from sciir.review.security import LARGE_FORM_BYTES, LARGE_FORM_FIELDS

PAGE = "/checklists"
SPARE_ROWS = 3


def _check(context: ReviewContext, item: Item, fields: dict[str, str]) -> tuple[int | None, str | None]:
    return checklist_queue.checked_answer(item, fields)


def _undone_rows(session: Session, item: Item, rater_id: int) -> list[dict[str, Any]] | None:
    """The rows of the rater's last undone answer to this item (the page after an undo shows them)."""
    detail = session.scalar(
        select(Answer.detail)
        .where(Answer.item_id == item.id, Answer.rater_id == rater_id, Answer.undone_at.is_not(None))
        .order_by(Answer.undone_at.desc(), Answer.id.desc())
        .limit(1)
    )
    rows: list[dict[str, Any]] | None = None if detail is None else json.loads(detail).get("rows")
    return rows


def _free_ids(rows: list[dict[str, Any]], count: int) -> list[str]:
    """Ids for new questions that no row uses: new1, new2, ..."""
    taken = {row["orig"] for row in rows} | {row["id"] for row in rows}
    return [f"new{n}" for n in range(1, len(taken) + count + 1) if f"new{n}" not in taken][:count]


def _extra(
    session: Session, context: ReviewContext, item: Item | None, who: SignedIn, posted: dict[str, str] | None
) -> dict[str, Any]:
    settings = context.settings.checklists
    values: dict[str, Any] = {"benchmark": settings.benchmark, "record": None, "rows": [], "spares": []}
    if item is None:
        return values
    questions = checklist_queue.original_questions(item)
    if posted is not None and posted.get("item") == item.public_id:
        rows = checklist_queue.rows_of_fields(posted)
    else:
        rows = _undone_rows(session, item, who.rater_id) or checklist_queue.rows_of_questions(questions)
    originals = {question["id"]: question for question in questions}
    for row in rows:
        row["polarity"] = originals.get(row["orig"], {}).get("polarity", "positive")
    values.update(
        record=(item.context or {}).get("record", {}),
        rows=rows,
        spares=_free_ids(rows, SPARE_ROWS),
    )
    return values


SPEC = QueuePage(
    name=lambda settings: checklist_queue.queue_name(settings.checklists.benchmark),
    path=PAGE,
    template="checklists.html",
    check=_check,
    agreement=lambda session, settings, name: checklist_queue.agreement(session, name),
    per_item=lambda settings: settings.checklists.raters_per_item,
    seed=lambda settings: settings.checklists.seed,
    extra=_extra,
    max_fields=LARGE_FORM_FIELDS,
    max_bytes=LARGE_FORM_BYTES,
)
