"""The review app's panel decisions as a Kedro dataset (the catalog's ``review_decisions``, which curate reads):
each panel's decision from its raters' live answers (majority; a tie decides nothing), an absent or unreachable
store as an empty table saying why (nothing created), read-only. Against SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from kedro.io import AbstractDataset, DatasetError

from sciir.catalog.review_decisions_dataset import ReviewDecisionsDataset
from sciir.review.models import Item, Rater
from sciir.review.panel_table import SCORES, answer_detail
from sciir.review.queue_store import ensure_queue, rater_version, record_answer, undo_last
from sciir.review.store import open_store

# panel -> each rater's decision, in the order given
GIVEN = {
    "p-keep": [("ann", "KEEP", "fine"), ("bo", "KEEP", "")],
    "p-reject": [("ann", "REJECT", "a photo"), ("bo", "REJECT", "private"), ("cy", "KEEP", "")],
    "p-tie": [("ann", "KEEP", ""), ("bo", "REJECT", "")],
}


def decided_store(url: str) -> str:
    """A store whose panel queue holds the panels of GIVEN and one nobody decided; ann also gave p-undone a
    REJECT and took it back."""
    store = open_store(url)
    with store.writing() as session:
        queue = ensure_queue(session, "panels", "panel_review", {})
        raters = {name: Rater(name=name, version=0) for name in ("ann", "bo", "cy")}
        session.add_all(raters.values())
        for key in [*GIVEN, "p-undecided", "p-undone"]:
            session.add(Item(queue_id=queue.id, public_id=f"id-{key}", key=key, path="/x.png", context={}))
        session.flush()
        for key, answers in [*GIVEN.items(), ("p-undone", [("ann", "REJECT", "")])]:
            for name, decision, note in answers:
                rater = raters[name].id
                version = rater_version(session, rater)
                detail = answer_detail(decision, note)
                record_answer(session, queue, rater, f"id-{key}", version, SCORES[decision], detail)
        undo_last(session, queue, raters["ann"].id, rater_version(session, raters["ann"].id))
    store.close()
    return url


def test_each_panels_decision_is_its_raters_majority(store_url: str) -> None:
    dataset = AbstractDataset.from_config(
        "review_decisions",
        {
            "type": "sciir.catalog.review_decisions_dataset.ReviewDecisionsDataset",
            "url": decided_store(store_url),
        },
    )
    table = dataset.load().set_index("sample_id")
    assert sorted(table.index) == ["p-keep", "p-reject", "p-tie"]  # nobody's, and the undone one, are absent
    assert table.loc["p-keep", ["decision", "note", "n_raters"]].tolist() == ["KEEP", "ann: fine", 2]
    assert table.loc["p-reject", ["decision", "n_keep", "n_reject"]].tolist() == ["REJECT", 1, 2]
    assert table.loc["p-reject", "note"] == "ann: a photo; bo: private"
    assert table.loc["p-tie", "decision"] == "" and table.loc["p-tie", "note"].startswith("raters disagree")
    assert table.attrs["absence"] is None and "queue panels" in table.attrs["source"] and dataset.exists()


def test_one_raters_note_is_the_note(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    store = open_store(url)
    with store.writing() as session:
        queue = ensure_queue(session, "panels", "panel_review", {})
        session.add(Rater(name="ann", version=0))
        session.add(Item(queue_id=queue.id, public_id="id-1", key="p1", path="/x.png"))
        session.flush()
        record_answer(session, queue, 1, "id-1", 0, 0, answer_detail("REJECT", "blurry"))
    store.close()
    table = ReviewDecisionsDataset(url=url).load()
    assert table[["sample_id", "decision", "note"]].values.tolist() == [["p1", "REJECT", "blurry"]]


def test_an_absent_store_loads_empty_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "data" / "review" / "review.sqlite"
    table = ReviewDecisionsDataset(url=f"sqlite:///{path}").load()
    assert table.empty and list(table.columns) == [
        "sample_id", "decision", "note", "n_raters", "n_keep", "n_reject"
    ]  # fmt: skip
    assert table.attrs["absence"] == "it does not exist yet" and not path.parent.exists()


def test_an_unreachable_store_loads_empty_saying_why() -> None:
    dataset = ReviewDecisionsDataset(url="postgresql+psycopg://u:s3cret@127.0.0.1:9/review?connect_timeout=2")
    table = dataset.load()
    assert table.empty and table.attrs["absence"].startswith("it cannot be reached")
    assert "s3cret" not in table.attrs["source"] and "s3cret" not in str(dataset._describe())


def test_it_is_read_only(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="read-only here"):
        ReviewDecisionsDataset(url=f"sqlite:///{tmp_path / 'r.sqlite'}").save(pd.DataFrame())
