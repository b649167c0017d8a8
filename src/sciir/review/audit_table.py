"""Judge audit's answers as the table evaluate reads, apart from the queue itself, so that the catalog's dataset
(``sciir.catalog.review_audit_dataset``) reads the store without the queue's readers of evaluate's files.

Each answer says whether the judge's verdict on a question about an image is right, wrong, or whether the rater
cannot tell (``Answer.detail``; ``score`` 1 right, 0 wrong, none for can't tell). The item's context holds what
was audited: the model, sample and question, the question's kind and polarity, and the verdict shown.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy.orm import Session

from sciir.review.queue_store import live_answers

NAME = "audit"
ANSWERS = ("right", "wrong", "cant_tell")
SCORES: dict[str, int | None] = {"right": 1, "wrong": 0, "cant_tell": None}
CONTEXT_COLUMNS = (
    "model",
    "sample_id",
    "question_id",
    "question_kind",
    "polarity",
    "question",
    "judge_verdict",
)
AUDIT_COLUMNS = (*CONTEXT_COLUMNS, "rater_id", "answer", "answered_at")


def audit_answers(session: Session, queue_name: str = NAME) -> pd.DataFrame:
    """Every live answer with what it audited (``AUDIT_COLUMNS``), sorted by item, then rater."""
    live = live_answers(session, queue_name)
    rows = [
        {column: str((context or {}).get(column, "")) for column in CONTEXT_COLUMNS}
        | {"rater_id": str(rater), "answer": str(detail or ""), "answered_at": answered_at}
        for rater, detail, answered_at, context in live[
            ["rater", "detail", "answered_at", "context"]
        ].itertuples(index=False)
    ]
    return pd.DataFrame(rows, columns=list(AUDIT_COLUMNS))
