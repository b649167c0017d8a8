"""The ratings queue: filled from a folder and a benchmark's prompts (new images added, none twice), its scale,
its answers as human_corr's ratings table, and Krippendorff's alpha as sciir.stats computes it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from sciir.review.models import Answer, Item, Rater
from sciir.review.queue_store import Refused, has_answers
from sciir.review.ratings_queue import (
    QueueSettingsError,
    agreement,
    checked_score,
    fill,
    image_files,
    open_queue,
    prompts_of,
)
from sciir.review.ratings_table import ratings_table
from sciir.review.settings import RatingsSettings
from sciir.review.store import Store, open_store
from sciir.stats.agreement import agreement_table


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(f"sqlite:///{tmp_path / 'review.sqlite'}")


def test_the_images_of_a_folder_are_keyed_by_their_path_without_suffix(images: Path) -> None:
    found = image_files(images)
    assert list(found) == [
        f"{model}/{sample}" for model in ("secretmodelA", "secretmodelB") for sample in ("s1", "s2", "s3")
    ]
    assert found["secretmodelA/s1"] == images / "secretmodelA" / "s1.png"


def test_prompts_come_from_bench_selects_table_or_a_benchmark_file(benchmark: Path, tmp_path: Path) -> None:
    assert prompts_of(str(benchmark))["s1"] == "Draw a block on an incline."
    jsonl = tmp_path / "bench.jsonl"
    record = {
        "sample_id": "s9",
        "prompt": "Draw a lens.",
        "questions": [{"id": "q1", "text": "Is there a lens?"}],
    }
    jsonl.write_text(json.dumps(record) + "\n")
    assert prompts_of(str(jsonl)) == {"s9": "Draw a lens."}
    assert prompts_of(str(tmp_path / "missing.parquet")) == {} and prompts_of(None) == {}


def test_filling_again_adds_only_new_images(store: Store, images: Path, benchmark: Path) -> None:
    settings = RatingsSettings(images=str(images), benchmark=str(benchmark))
    prompts = prompts_of(settings.benchmark)
    with store.writing() as session:
        queue = open_queue(session, settings)
        assert fill(session, queue, images, prompts) == 6
    (images / "secretmodelC").mkdir()
    (images / "secretmodelC" / "s1.png").write_bytes((images / "secretmodelA" / "s1.png").read_bytes())
    with store.writing() as session:
        queue = open_queue(session, settings)
        assert fill(session, queue, images, prompts) == 1
        items = session.scalars(select(Item)).all()
    assert len(items) == 7 and len({item.public_id for item in items}) == 7
    by_key = {item.key: item for item in items}
    assert by_key["secretmodelC/s1"].prompt == "Draw a block on an incline."
    assert all(len(item.public_id) >= 16 and "secret" not in item.public_id for item in items)
    store.close()


def test_a_new_scale_over_old_answers_is_refused(store: Store, images: Path) -> None:
    five = RatingsSettings(images=str(images), benchmark=None, scale=5)
    with store.writing() as session:
        queue = open_queue(session, five)
        fill(session, queue, images, {})
        open_queue(session, five.model_copy(update={"scale": 10}))  # no answers yet: allowed
        queue = open_queue(session, five)
        rater = Rater(name="ann", version=0)
        session.add(rater)
        session.flush()
        session.add(Answer(item_id=session.scalars(select(Item.id)).first(), rater_id=rater.id, score=4))
        session.flush()
        assert has_answers(session, queue)
        with pytest.raises(QueueSettingsError, match="answers on a 1-5 scale; set ratings.scale back to 5"):
            open_queue(session, five.model_copy(update={"scale": 10}))
    store.close()


@pytest.mark.parametrize(
    ("raw", "scale", "expected"), [("1", 5, 1), ("5", 5, 5), ("10", 10, 10), (" 3 ", 5, 3)]
)
def test_a_score_of_the_scale_is_taken(raw: str, scale: int, expected: int) -> None:
    assert checked_score(raw, scale) == expected


@pytest.mark.parametrize("raw", ["0", "6", "2.5", "x", "", None, "1e1"])
def test_a_score_off_the_scale_is_refused(raw: str | None) -> None:
    with pytest.raises(Refused, match="nothing was stored"):
        checked_score(raw, 5)


def _rate(
    store: Store, images: Path, scores: dict[str, dict[str, int]], undone: set[tuple[str, str]] = frozenset()
) -> RatingsSettings:
    settings = RatingsSettings(images=str(images), benchmark=None)
    with store.writing() as session:
        queue = open_queue(session, settings)
        fill(session, queue, images, {})
        items = {item.key: item.id for item in session.scalars(select(Item))}
        for name, given in scores.items():
            rater = Rater(name=name, version=0)
            session.add(rater)
            session.flush()
            for key, score in given.items():
                gone = pd.Timestamp.now(tz="UTC").to_pydatetime() if (name, key) in undone else None
                session.add(Answer(item_id=items[key], rater_id=rater.id, score=score, undone_at=gone))
    return settings


SCORES = {
    "ann": {"secretmodelA/s1": 5, "secretmodelA/s2": 2, "secretmodelB/s1": 4, "secretmodelB/s3": 1},
    "bo": {"secretmodelA/s1": 4, "secretmodelA/s2": 2, "secretmodelB/s1": 5},
    "cy": {"secretmodelA/s1": 5, "secretmodelB/s3": 2, "secretmodelA/s2": 1},
}


def test_the_live_answers_are_human_corrs_ratings_table(store: Store, images: Path) -> None:
    _rate(store, images, SCORES | {"di": {"secretmodelB/s2": 3}}, undone={("di", "secretmodelB/s2")})
    with store.reading() as session:
        table = ratings_table(session)
    assert list(table.columns) == ["image_id", "rater_id", "score"]
    expected = sorted(
        (key, name, float(score)) for name, given in SCORES.items() for key, score in given.items()
    )
    assert list(table.itertuples(index=False, name=None)) == expected  # di's undone answer left out
    store.close()


def test_the_agreement_is_sciir_stats_krippendorff_alpha(store: Store, images: Path) -> None:
    settings = _rate(store, images, SCORES)
    with store.reading() as session:
        shown = agreement(session, settings)
        table = ratings_table(session)
    expected = agreement_table(table, "interval").set_index("statistic").loc["krippendorff_alpha", "value"]
    assert shown.value == pytest.approx(expected) and not math.isnan(shown.value)
    assert shown.n_raters == 3 and 0 < shown.value < 1
    store.close()


def test_no_ratings_yet_is_a_reason_not_a_number(store: Store, images: Path) -> None:
    settings = _rate(store, images, {"ann": {"secretmodelA/s1": 5}})
    with store.reading() as session:
        shown = agreement(session, settings)
    assert np.isnan(shown.value) and "only 1 rater" in (shown.reason or "")
    store.close()
