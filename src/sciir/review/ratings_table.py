"""The ratings queue's answers as human_corr's ratings table, apart from the queue itself, so that the catalog's
dataset (``sciir.catalog.review_ratings_dataset``) reads the store without the queue's readers of image folders
and benchmark files."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from sciir.review.models import Answer, Item, Queue, Rater

NAME = "ratings"
RATING_COLUMNS = ("image_id", "rater_id", "score")


def ratings_table(session: Session, queue_name: str = NAME) -> pd.DataFrame:
    """human_corr's ratings table of the queue's live answers: image_id (the item's key), rater_id (the rater's
    name), score; sorted by image then rater."""
    rows = session.execute(
        select(Item.key, Rater.name, Answer.score)
        .select_from(Answer)
        .join(Item, Item.id == Answer.item_id)
        .join(Queue, Queue.id == Item.queue_id)
        .join(Rater, Rater.id == Answer.rater_id)
        .where(Queue.name == queue_name, Answer.undone_at.is_(None), Answer.score.is_not(None))
        .order_by(Item.key, Rater.name)
    ).all()
    table = pd.DataFrame([tuple(row) for row in rows], columns=list(RATING_COLUMNS))
    return table.astype({"image_id": str, "rater_id": str, "score": float})
