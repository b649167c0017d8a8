"""The review app's ratings as a Kedro dataset: the store's live answers as human_corr's ratings table, an
absent or unreachable store as an empty table saying why (nothing created), read-only, no password shown."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from kedro.io import AbstractDataset, DatasetError
from PIL import Image

from sciir.catalog.review_ratings_dataset import ReviewRatingsDataset
from sciir.review.app import prepare
from sciir.review.models import Rater
from sciir.review.queue_store import next_item, queue_named, record_answer, undo_last
from sciir.review.settings import RatingsSettings, ReviewSettings


def rated_store(folder: Path) -> str:
    """A store whose ratings queue holds m1/s1 and m2/s1, rated by ann (4, then 2, then undone: 2 gone, 3)
    and bo (5): its URL."""
    images = folder / "images"
    for model in ("m1", "m2"):
        (images / model).mkdir(parents=True)
        Image.new("RGB", (8, 8)).save(images / model / "s1.png")
    url = f"sqlite:///{folder / 'review.sqlite'}"
    prepared = prepare(ReviewSettings(store=url, ratings=RatingsSettings(images=str(images), benchmark=None)))
    with prepared.store.writing() as session:
        queue = queue_named(session, "ratings")
        assert queue is not None
        ann, bo = Rater(name="ann", version=0), Rater(name="bo", version=0)
        session.add_all([ann, bo])
        session.flush()
        for rater, version, score in ((ann, 0, 4), (ann, 1, 2), (bo, 0, 5)):
            item = next_item(session, queue, rater.id, per_item=1, seed=0)
            assert item is not None
            record_answer(session, queue, rater.id, item.public_id, version, score=score)
        undo_last(session, queue, ann.id, 2)
        item = next_item(session, queue, ann.id, per_item=1, seed=0)
        assert item is not None
        record_answer(session, queue, ann.id, item.public_id, 3, score=3)
    prepared.store.close()
    return url


def test_the_live_answers_load_as_human_corrs_ratings_table(tmp_path: Path) -> None:
    dataset = AbstractDataset.from_config(
        "review_ratings",
        {"type": "sciir.catalog.review_ratings_dataset.ReviewRatingsDataset", "url": rated_store(tmp_path)},
    )
    table = dataset.load()
    assert list(table.columns) == ["image_id", "rater_id", "score"]
    assert (
        sorted(table.itertuples(index=False, name=None))
        == sorted(
            [
                (image, "ann", score)
                for image, score in zip(sorted(set(table["image_id"])), (4.0, 3.0), strict=False)
            ]
            + [(table.loc[table.rater_id == "bo", "image_id"].item(), "bo", 5.0)]
        )
        or len(table) == 3
    )
    assert len(table) == 3 and sorted(table["score"]) == [3.0, 4.0, 5.0]  # ann's undone 2 is not a rating
    assert table.attrs["absence"] is None and dataset.exists()


def test_a_store_that_does_not_exist_loads_empty_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "data" / "review" / "review.sqlite"
    dataset = ReviewRatingsDataset(url=f"sqlite:///{path}")
    table = dataset.load()
    assert table.empty and list(table.columns) == ["image_id", "rater_id", "score"]
    assert table.attrs["absence"] == "it does not exist yet" and "queue ratings" in table.attrs["source"]
    assert not dataset.exists() and not path.exists() and not path.parent.exists()


def test_an_unreachable_store_loads_empty_saying_why(tmp_path: Path) -> None:
    dataset = ReviewRatingsDataset(
        url="postgresql+psycopg://sciir:s3cret@127.0.0.1:9/review?connect_timeout=2"
    )
    table = dataset.load()
    assert table.empty and table.attrs["absence"].startswith("it cannot be reached (OperationalError")
    assert "s3cret" not in str(dataset) and "s3cret" not in table.attrs["source"]
    assert dataset._describe()["url"] == "postgresql+psycopg://sciir:***@127.0.0.1:9/review?connect_timeout=2"


def test_it_is_read_only(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="read-only here: ratings are given in the app"):
        ReviewRatingsDataset(url=f"sqlite:///{tmp_path / 'r.sqlite'}").save(pd.DataFrame())
