"""The review app's ratings as a Kedro dataset: human_corr reads the store itself, no export step.

``load`` gives the ratings table human_corr takes (``image_id, rater_id, score``: docs/human_corr.md), from the
live answers of a ratings queue in the review store (``sciir.review``). A store that does not exist yet (a
SQLite file not created, a database without the schema) or cannot be reached loads as an empty table whose
``attrs["absence"]`` says why, so a run whose ratings come from elsewhere never needs the store; the node that
reads it as its source of ratings says so when it is empty. Loading creates and migrates nothing.

Read-only: answers are written by the app (``kedro review``), so ``save`` refuses.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from kedro.io import AbstractDataset, DatasetError
from sqlalchemy.exc import SQLAlchemyError

from sciir.review.ratings_table import NAME, RATING_COLUMNS, ratings_table
from sciir.review.store import StoreError, describe, open_existing


class ReviewRatingsDataset(AbstractDataset[pd.DataFrame, pd.DataFrame]):
    """The live ratings of queue ``queue`` in the review store at ``url`` (any SQLAlchemy URL)."""

    def __init__(self, *, url: str, queue: str = NAME, metadata: dict[str, Any] | None = None) -> None:
        self._url = url
        self._queue = queue
        self.metadata = metadata

    def _source(self) -> str:
        return f"the review store {describe(self._url)} (queue {self._queue})"

    def _empty(self, absence: str) -> pd.DataFrame:
        table = pd.DataFrame({column: pd.Series(dtype=object) for column in RATING_COLUMNS})
        table.attrs.update(source=self._source(), absence=absence)
        return table

    def load(self) -> pd.DataFrame:
        try:
            store = open_existing(self._url)
        except StoreError as error:
            raise DatasetError(str(error)) from error
        except SQLAlchemyError as error:
            return self._empty(f"it cannot be reached ({type(error).__name__}: {str(error).splitlines()[0]})")
        if store is None:
            return self._empty("it does not exist yet")
        try:
            with store.reading() as session:
                table = ratings_table(session, self._queue)
        finally:
            store.close()
        table.attrs.update(source=self._source(), absence=None if len(table) else "it holds no rating yet")
        return table

    def save(self, data: pd.DataFrame) -> None:
        raise DatasetError(f"{self._source()} is read-only here: ratings are given in the app (kedro review)")

    def _exists(self) -> bool:
        return not self.load().empty

    def _describe(self) -> dict[str, Any]:
        return {"url": describe(self._url), "queue": self._queue}
