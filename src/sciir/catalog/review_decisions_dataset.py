"""The review app's panel decisions as a Kedro dataset: curate reads the store itself, no export step.

``load`` gives one row per panel people decided in the panel-review queue (``sample_id, decision, note,
n_raters, n_keep, n_reject``: the raters' majority, '' on a tie; ``sciir.review.panel_table``), which curate's
screen applies as it applies a reviewed queue file (docs/curate.md). An absent store loads as an empty table
(``sciir.catalog.review_store_dataset``), so a run without the app decides nothing new.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.orm import Session

from sciir.catalog.review_store_dataset import ReviewStoreDataset
from sciir.review.panel_table import DECISION_COLUMNS, NAME, decisions_table


class ReviewDecisionsDataset(ReviewStoreDataset):
    """The panel decisions of queue ``queue`` (default ``panels``) in the review store at ``url``."""

    columns = DECISION_COLUMNS
    default_queue = NAME
    what = "decision"

    def _read(self, session: Session) -> pd.DataFrame:
        return decisions_table(session, self._queue)
