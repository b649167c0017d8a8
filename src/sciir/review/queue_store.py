"""What every queue does with its items and answers, whatever it asks.

- **The next item** for a rater: never one they have answered (an undone answer no longer counts); the item
  of their latest undo first; then items that some raters but fewer than ``per_item`` have answered, then new
  ones, then the rest, each group in the rater's own order (a shuffle seeded by the queue's seed and the rater,
  stable as items are added). So each item reaches ``per_item`` raters before more items are opened.
- **An answer** is one row, in the caller's transaction; refused (``Refused``, nothing stored) for an item the
  queue does not hold, an item this rater has a live answer to, or a form older than the rater's last answer
  or undo (``Rater.version``, moved on atomically by each of them).
- **Undo** marks the rater's last live answer in the queue undone; the row stays.
- **The live answers** of a queue as a table (``live_answers``), and Krippendorff's alpha between its raters
  (``agreement_of``, as human_corr computes it).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from sciir.review.models import Answer, Item, Queue, Rater, utc_now
from sciir.stats.agreement import Agreement, Level, krippendorff_alpha, reliability_matrix

LIVE_COLUMNS = ("key", "rater", "score", "detail", "answered_at", "context")


class Refused(ValueError):
    """An answer or undo the app refuses; nothing was stored. ``status``: the HTTP status for the page."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Progress:
    """How far a rater and everyone are: the rater's live answers, the items, the items with ``per_item``
    raters or more, and every live answer."""

    mine: int
    items: int
    covered: int
    answers: int


def queue_named(session: Session, name: str) -> Queue | None:
    return session.scalar(select(Queue).where(Queue.name == name))


def ensure_queue(session: Session, name: str, kind: str, config: dict[str, Any]) -> Queue:
    """The queue ``name`` with ``config`` (created when new)."""
    queue = queue_named(session, name)
    if queue is None:
        queue = Queue(name=name, kind=kind, config=config)
        session.add(queue)
    else:
        queue.config = config
    session.flush()
    return queue


def has_answers(session: Session, queue: Queue) -> bool:
    found = session.scalar(select(Answer.id).join(Item).where(Item.queue_id == queue.id).limit(1))
    return found is not None


def item_count(session: Session, queue: Queue) -> int:
    return int(session.scalar(select(func.count()).select_from(Item).where(Item.queue_id == queue.id)) or 0)


def order_key(seed: int, rater_id: int, item_id: int) -> str:
    """The place of an item in a rater's order: a hash, so the order is a stable shuffle per rater."""
    return hashlib.sha256(f"{seed}/{rater_id}/{item_id}".encode()).hexdigest()


def _live(queue: Queue) -> Any:
    return (Item.queue_id == queue.id) & Answer.undone_at.is_(None)


def next_item(session: Session, queue: Queue, rater_id: int, per_item: int, seed: int) -> Item | None:
    """The item to show this rater next, or None when they have answered every item."""
    counts: dict[int, int] = {
        item_id: count
        for item_id, count in session.execute(
            select(Answer.item_id, func.count()).join(Item).where(_live(queue)).group_by(Answer.item_id)
        )
    }
    answered = set(
        session.scalars(select(Answer.item_id).join(Item).where(_live(queue), Answer.rater_id == rater_id))
    )
    open_ids = [
        i for i in session.scalars(select(Item.id).where(Item.queue_id == queue.id)) if i not in answered
    ]
    if not open_ids:
        return None
    redo = session.scalar(
        select(Answer.item_id)
        .join(Item)
        .where(Item.queue_id == queue.id, Answer.rater_id == rater_id, Answer.undone_at.is_not(None))
        .where(Answer.item_id.in_(open_ids))
        .order_by(Answer.undone_at.desc(), Answer.id.desc())
        .limit(1)
    )

    def rank(item_id: int) -> tuple[int, str]:
        count = counts.get(item_id, 0)
        group = 0 if item_id == redo else 1 if 0 < count < per_item else 2 if count == 0 else 3
        return group, order_key(seed, rater_id, item_id)

    return session.get(Item, min(open_ids, key=rank))


def progress(session: Session, queue: Queue, rater_id: int, per_item: int) -> Progress:
    counts = list(
        session.scalars(
            select(func.count()).select_from(Answer).join(Item).where(_live(queue)).group_by(Answer.item_id)
        )
    )
    mine = session.scalar(
        select(func.count()).select_from(Answer).join(Item).where(_live(queue), Answer.rater_id == rater_id)
    )
    return Progress(
        mine=int(mine or 0),
        items=item_count(session, queue),
        covered=sum(c >= per_item for c in counts),
        answers=sum(counts),
    )


def rater_version(session: Session, rater_id: int) -> int:
    version = session.scalar(select(Rater.version).where(Rater.id == rater_id))
    return int(version or 0)


def item_by_public_id(session: Session, queue: Queue, public_id: str) -> Item | None:
    return session.scalar(select(Item).where(Item.queue_id == queue.id, Item.public_id == public_id))


def _claim_version(session: Session, rater_id: int, form_version: int) -> None:
    """Move the rater's version on from the form's; Refused when the form is older than their last change."""
    moved = session.execute(
        update(Rater)
        .where(Rater.id == rater_id, Rater.version == form_version)
        .values(version=Rater.version + 1)
        .execution_options(synchronize_session=False)
    )
    if getattr(moved, "rowcount", 0) != 1:
        raise Refused("this page is older than your last answer (another tab?): nothing was stored", 409)


def record_answer(
    session: Session,
    queue: Queue,
    rater_id: int,
    public_id: str,
    form_version: int,
    score: int | None = None,
    detail: str | None = None,
) -> Answer:
    """Store one answer (in the caller's transaction, which a Refused rolls back)."""
    item = item_by_public_id(session, queue, public_id)
    if item is None:
        raise Refused("unknown item: nothing was stored", 404)
    _claim_version(session, rater_id, form_version)
    already = session.scalar(
        select(Answer.id).where(
            Answer.item_id == item.id, Answer.rater_id == rater_id, Answer.undone_at.is_(None)
        )
    )
    if already is not None:
        raise Refused("you have already answered this item: nothing was stored", 409)
    answer = Answer(item_id=item.id, rater_id=rater_id, score=score, detail=detail, created_at=utc_now())
    session.add(answer)
    session.flush()
    return answer


def undo_last(session: Session, queue: Queue, rater_id: int, form_version: int) -> Answer:
    """Mark the rater's last live answer in the queue undone (in the caller's transaction)."""
    _claim_version(session, rater_id, form_version)
    last = session.scalar(
        select(Answer)
        .join(Item)
        .where(_live(queue), Answer.rater_id == rater_id)
        .order_by(Answer.id.desc())
        .limit(1)
    )
    if last is None:
        raise Refused("nothing to undo", 409)
    last.undone_at = utc_now()
    session.flush()
    return last


def live_answers(session: Session, queue_name: str) -> pd.DataFrame:
    """Every live answer of queue ``queue_name``: the item's key, the rater's name, score, detail, when, and
    the item's context; sorted by item, then rater. Empty (with these columns) when there is no such queue."""
    rows = session.execute(
        select(Item.key, Rater.name, Answer.score, Answer.detail, Answer.created_at, Item.context)
        .select_from(Answer)
        .join(Item, Item.id == Answer.item_id)
        .join(Queue, Queue.id == Item.queue_id)
        .join(Rater, Rater.id == Answer.rater_id)
        .where(Queue.name == queue_name, Answer.undone_at.is_(None))
        .order_by(Item.key, Rater.name)
    ).all()
    return pd.DataFrame([tuple(row) for row in rows], columns=list(LIVE_COLUMNS))


def agreement_of(values: pd.DataFrame, level: Level) -> Agreement:
    """Krippendorff's alpha (``sciir.stats``, as human_corr computes it) of a table of ``unit, rater, value``
    rows (NaN with the reason when it is not defined: no answers yet, one rater, nothing to pair)."""
    if values.empty:
        return Agreement("krippendorff_alpha", level, math.nan, 0, 0, 0, "", "no answers yet")
    table = pd.DataFrame(
        {"image_id": values["unit"], "rater_id": values["rater"], "score": values["value"].astype(float)}
    )
    return krippendorff_alpha(reliability_matrix(table).to_numpy(), level, warn=False)
