"""The ratings queue's pages: the next image to rate, a score, undo, and the image itself, over the pages every
queue shares (``sciir.review.queue_pages``).

The page shows an image by its item's random public id, its prompt (escaped by the templates), the scale,
the rater's and everyone's progress and Krippendorff's alpha; never a model's name, a file name or a path, and
the image is served without any text its file carries (``blind_png``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from sciir.review import ratings_queue
from sciir.review.blind_images import blind_png
from sciir.review.models import Item
from sciir.review.pages import ReviewContext
from sciir.review.queue_pages import QueuePage
from sciir.review.raters import SignedIn
from sciir.review.ratings_table import NAME as RATINGS

PAGE = "/ratings"


def _check(context: ReviewContext, item: Item, fields: dict[str, str]) -> tuple[int | None, str | None]:
    return ratings_queue.checked_score(fields.get("score"), context.settings.ratings.scale), None


def _scale(
    session: Session, context: ReviewContext, item: Item | None, who: SignedIn, posted: dict[str, str] | None
) -> dict[str, Any]:
    """What the template shows beside the image: the question and its scale, with the words at its ends."""
    settings = context.settings.ratings
    return {
        "scale": settings.scale,
        "question": settings.question,
        "low_label": settings.low_label,
        "high_label": settings.high_label,
    }


SPEC = QueuePage(
    name=lambda settings: RATINGS,
    path=PAGE,
    template="ratings.html",
    check=_check,
    agreement=lambda session, settings, name: ratings_queue.agreement(session, settings.ratings),
    per_item=lambda settings: settings.ratings.raters_per_image,
    seed=lambda settings: settings.ratings.seed,
    extra=_scale,
    png=blind_png,
)
