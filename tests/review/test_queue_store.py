"""What every queue does: the next item (never one answered, k raters before new items, each rater's own stable
order, the undone item again), answers refused with nothing stored, undo. Against SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from sciir.review.models import Answer, Item, Queue, Rater
from sciir.review.queue_store import (
    Refused,
    ensure_queue,
    next_item,
    order_key,
    progress,
    rater_version,
    record_answer,
    undo_last,
)
from sciir.review.store import Store, open_store

ITEMS = 6


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    store = open_store(store_url)
    with store.writing() as session:
        queue = ensure_queue(session, "ratings", "likert", {})
        session.add_all(
            Item(queue_id=queue.id, public_id=f"p{i}", key=f"m/s{i}", path="/x") for i in range(ITEMS)
        )
        session.add_all(Rater(name=name, version=0) for name in ("ann", "bo", "cy", "di"))
    yield store
    store.close()


def _ids(store: Store) -> tuple[Queue, dict[str, int]]:
    with store.reading() as session:
        queue = session.scalars(select(Queue)).one()
        return queue, {name: id_ for id_, name in session.execute(select(Rater.id, Rater.name))}


def _answer(store: Store, rater: int, public_id: str | None = None, score: int = 3) -> str:
    """Answer the rater's next item (or ``public_id``) at their current version; the item's public id."""
    queue, _ = _ids(store)
    with store.writing() as session:
        chosen = public_id or next_item(session, queue, rater, per_item=2, seed=0).public_id
        record_answer(session, queue, rater, chosen, rater_version(session, rater), score=score)
    return chosen


def _next(store: Store, rater: int, per_item: int = 2, seed: int = 0) -> str | None:
    queue, _ = _ids(store)
    with store.reading() as session:
        item = next_item(session, queue, rater, per_item, seed)
        return None if item is None else item.public_id


def test_each_image_reaches_k_raters_before_new_images_are_shown(store: Store) -> None:
    _, raters = _ids(store)
    first = _answer(store, raters["ann"])
    assert _next(store, raters["bo"]) == first  # started, one rater short of k = 2
    _answer(store, raters["bo"])
    assert _next(store, raters["cy"]) != first  # complete: cy opens a new one
    opened = _answer(store, raters["cy"])
    assert _next(store, raters["ann"]) == opened  # ann's next is cy's incomplete item, not a new one
    assert _next(store, raters["di"], per_item=1) not in (first, opened)  # with k = 1 both are complete


def test_an_answered_item_is_never_shown_to_that_rater_again(store: Store) -> None:
    _, raters = _ids(store)
    seen = [_answer(store, raters["ann"]) for _ in range(ITEMS)]
    assert len(set(seen)) == ITEMS
    assert _next(store, raters["ann"]) is None
    assert _next(store, raters["bo"]) is not None


def test_each_raters_order_is_a_stable_shuffle_of_their_own(store: Store) -> None:
    _, raters = _ids(store)
    orders = {}
    for name in ("ann", "bo", "cy", "di"):
        assert _next(store, raters[name], per_item=1) == _next(store, raters[name], per_item=1)
        orders[name] = _next(store, raters[name], per_item=1)
    assert len(set(orders.values())) > 1  # not everyone starts with the same image
    ann_order = sorted(range(ITEMS), key=lambda item: order_key(0, raters["ann"], item))
    assert ann_order != sorted(range(ITEMS), key=lambda item: order_key(1, raters["ann"], item))  # the seed


def test_undo_marks_only_the_raters_last_answer_and_shows_its_item_again(store: Store) -> None:
    queue, raters = _ids(store)
    ann, bo = raters["ann"], raters["bo"]
    a1 = _answer(store, ann, score=1)
    a2 = _answer(store, ann, score=2)
    _answer(store, bo, a2, score=5)
    with store.writing() as session:
        undone = undo_last(session, queue, ann, rater_version(session, ann))
    assert undone.score == 2 and undone.undone_at is not None
    assert _next(store, ann) == a2  # the undone item comes back first
    with store.reading() as session:
        rows = session.execute(
            select(Rater.name, Item.public_id, Answer.score, Answer.undone_at.is_(None))
            .join(Item)
            .join(Rater)
        ).all()
        assert progress(session, queue, ann, 2).mine == 1
    assert sorted(rows) == [("ann", a1, 1, True), ("ann", a2, 2, False), ("bo", a2, 5, True)]


def test_refused_answers_store_nothing(store: Store) -> None:
    queue, raters = _ids(store)
    ann = raters["ann"]
    answered = _answer(store, ann)
    cases = [
        ("p-unknown", lambda version: version, "unknown item", 404),
        (answered, lambda version: version, "already answered", 409),
        (
            "p5",
            lambda version: version - 1,
            "older than your last answer",
            409,
        ),  # a form from before the answer
    ]
    for public_id, version_of, message, status in cases:
        with store.writing() as session:
            version = rater_version(session, ann)
        with pytest.raises(Refused, match=message) as refused, store.writing() as session:
            record_answer(session, queue, ann, public_id, version_of(version), score=4)
        assert refused.value.status == status
        with store.reading() as session:
            assert session.scalar(select(func.count()).select_from(Answer)) == 1
            assert rater_version(session, ann) == version  # the version did not move either
    with pytest.raises(Refused, match="nothing to undo"), store.writing() as session:
        undo_last(session, queue, raters["bo"], 0)
