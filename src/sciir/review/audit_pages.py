"""Judge audit's pages: the image beside the question, the judge's verdict and its evidence, right (r), wrong
(w) or can't tell (c) (``sciir.review.audit_queue``), over the pages every queue shares
(``sciir.review.queue_pages``). The model is not shown."""

from __future__ import annotations

from sciir.review import audit_queue
from sciir.review.audit_table import NAME
from sciir.review.models import Item
from sciir.review.pages import ReviewContext
from sciir.review.queue_pages import QueuePage

PAGE = "/audit"


def _check(context: ReviewContext, item: Item, fields: dict[str, str]) -> tuple[int | None, str | None]:
    return audit_queue.checked_answer(fields)


SPEC = QueuePage(
    name=lambda settings: NAME,
    path=PAGE,
    template="audit.html",
    check=_check,
    agreement=lambda session, name: audit_queue.agreement(session),
    per_item=lambda settings: settings.audit.raters_per_item,
    seed=lambda settings: settings.audit.seed,
)
