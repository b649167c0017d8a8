"""The review app's judge audit as a Kedro dataset: evaluate reads the store itself, no export step.

``load`` gives every live answer of the judge-audit queue with what it audited (``model, sample_id,
question_id, question_kind, polarity, question, judge_verdict, rater_id, answer, answered_at``:
``sciir.review.audit_table``), from which evaluate's judge validation computes the judge's accuracy and Cohen's
kappa against people per question kind (``sciir.evaluation.judge_audit``). An absent store loads as an empty
table (``sciir.catalog.review_store_dataset``), so a run without the app reports no audit.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.orm import Session

from sciir.catalog.review_store_dataset import ReviewStoreDataset
from sciir.review.audit_table import AUDIT_COLUMNS, NAME, audit_answers


class ReviewAuditDataset(ReviewStoreDataset):
    """The judge-audit answers of queue ``queue`` (default ``audit``) in the review store at ``url``."""

    columns = AUDIT_COLUMNS
    default_queue = NAME

    def _read(self, session: Session) -> pd.DataFrame:
        return audit_answers(session, self._queue)
