"""Panel review's pages: each panel of curate's review queue beside its caption and whole figure, the screen's
answer, KEEP or REJECT with a note (``sciir.review.panel_queue``), over the pages every queue shares
(``sciir.review.queue_pages``)."""

from __future__ import annotations

from sciir.review import panel_queue
from sciir.review.models import Item
from sciir.review.pages import ReviewContext
from sciir.review.panel_table import NAME
from sciir.review.queue_pages import QueuePage

PAGE = "/panels"


def _check(context: ReviewContext, item: Item, fields: dict[str, str]) -> tuple[int | None, str | None]:
    return panel_queue.checked_answer(fields)


SPEC = QueuePage(
    name=lambda settings: NAME,
    path=PAGE,
    template="panels.html",
    check=_check,
    agreement=lambda session, name: panel_queue.agreement(session),
    per_item=lambda settings: settings.panels.raters_per_item,
    seed=lambda settings: settings.panels.seed,
    images={"figure": "figure_path"},
)
