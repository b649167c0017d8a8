"""The review app's ratings as a Kedro dataset: human_corr reads the store itself, no export step.

``load`` gives the ratings table human_corr takes (``image_id, rater_id, score``: docs/human_corr.md), from the
live answers of a ratings queue in the review store (``sciir.review``). A store that does not exist yet (a
SQLite file not created, a database without the schema) or cannot be reached loads as an empty table whose
``attrs["absence"]`` says why, so a run whose ratings come from elsewhere never needs the store; the node that
reads it as its source of ratings says so when it is empty. Loading creates and migrates nothing.

Read-only: answers are written by the app (``kedro review``), so ``save`` refuses.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.orm import Session

from sciir.catalog.review_store_dataset import ReviewStoreDataset
from sciir.review.ratings_table import NAME, RATING_COLUMNS, ratings_table


class ReviewRatingsDataset(ReviewStoreDataset):
    """The live ratings of queue ``queue`` (default ``ratings``) in the review store at ``url`` (any SQLAlchemy
    URL)."""

    columns = RATING_COLUMNS
    default_queue = NAME
    what = "rating"

    def _read(self, session: Session) -> pd.DataFrame:
        return ratings_table(session, self._queue)
