"""Panel review's pages: each panel of curate's review queue beside its caption and whole figure, the screen's
answer, KEEP or REJECT with a note (``sciir.review.panel_queue``), over the pages every queue shares
(``sciir.review.queue_pages``)."""

from __future__ import annotations

from sciir.review import panel_queue
from sciir.review.panel_table import NAME
from sciir.review.queue_pages import form_queue_page

PAGE = "/panels"

SPEC = form_queue_page(
    NAME,
    PAGE,
    "panels.html",
    section=lambda settings: settings.panels,
    check=panel_queue.checked_answer,
    agreement=panel_queue.agreement,
    images={"figure": "figure_path"},
)
