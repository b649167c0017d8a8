"""What a Kedro dataset over the review app's store shares: a read-only table of a queue's answers.

A store that does not exist yet (a SQLite file not created, a database without the schema) or cannot be
reached loads as an empty table whose ``attrs["absence"]`` says why, so a run whose answers come from
elsewhere never needs the store; loading creates and migrates nothing. ``attrs["source"]`` names the store
and the queue. Answers are written by the app (``kedro review``), so ``save`` refuses.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import pandas as pd
from kedro.io import AbstractDataset, DatasetError
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from sciir.review.store import StoreError, describe, open_existing


class ReviewStoreDataset(AbstractDataset[pd.DataFrame, pd.DataFrame]):
    """The table ``_read`` makes of queue ``queue`` (default: the subclass's ``default_queue``) in the review
    store at ``url`` (any SQLAlchemy URL)."""

    columns: tuple[str, ...] = ()
    what = "answer"
    default_queue: str

    def __init__(self, *, url: str, queue: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        self._url = url
        self._queue = queue or self.default_queue
        self.metadata = metadata

    @abstractmethod
    def _read(self, session: Session) -> pd.DataFrame:
        """The table of the queue's live answers."""

    def _source(self) -> str:
        return f"the review store {describe(self._url)} (queue {self._queue})"

    def _empty(self, absence: str) -> pd.DataFrame:
        table = pd.DataFrame({column: pd.Series(dtype=object) for column in self.columns})
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
                table = self._read(session)
        finally:
            store.close()
        absence = None if len(table) else f"it holds no {self.what} yet"
        table.attrs.update(source=self._source(), absence=absence)
        return table

    def save(self, data: pd.DataFrame) -> None:
        raise DatasetError(
            f"{self._source()} is read-only here: {self.what}s are given in the app (kedro review)"
        )

    def _exists(self) -> bool:
        return not self.load().empty

    def _describe(self) -> dict[str, Any]:
        return {"url": describe(self._url), "queue": self._queue}
