"""Judge audit's pages: the image beside the question, the judge's verdict and its evidence, right (r), wrong
(w) or can't tell (c) (``sciir.review.audit_queue``), over the pages every queue shares
(``sciir.review.queue_pages``). The model is not shown."""

from __future__ import annotations

from sciir.review import audit_queue
from sciir.review.audit_table import NAME
from sciir.review.queue_pages import form_queue_page

PAGE = "/audit"

SPEC = form_queue_page(
    NAME,
    PAGE,
    "audit.html",
    section=lambda settings: settings.audit,
    check=audit_queue.checked_answer,
    agreement=audit_queue.agreement,
)
