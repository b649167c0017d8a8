"""The review app: its routes, its guard (``sciir.review.security``) and its context.

``create_app`` builds it over an open store; ``prepare`` opens the store (migrating it), fills every queue (the
ratings, panel review, checklist review, judge audit) with what is not queued yet and says in words what is there, which is what
``kedro review`` does before serving.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy.orm import Session
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sciir.review import (
    audit_pages,
    audit_queue,
    checklist_pages,
    checklist_queue,
    pages,
    panel_pages,
    panel_queue,
    ratings_pages,
    ratings_queue,
)
from sciir.review.models import Queue
from sciir.review.pages import QueueLink
from sciir.review.queue_pages import routes as queue_routes
from sciir.review.queue_store import item_count
from sciir.review.raters import raters_with_tokens
from sciir.review.security import LARGE_FORM_BYTES, GuardMiddleware, allowed_hosts
from sciir.review.settings import ReviewSettings
from sciir.review.store import Store, describe, open_store

logger = logging.getLogger(__name__)
Section = TypeVar("Section")
Filled = TypeVar("Filled")


def _static_route(path: str, content: bytes, media_type: str) -> Route:
    async def serve(request: Request) -> Response:
        return Response(content, media_type=media_type)

    return Route(path, serve, methods=["GET"])


QUEUES = (
    QueueLink(
        ratings_pages.SPEC.name,
        ratings_pages.PAGE,
        "Ratings",
        "rate generated images against their prompt, blind",
        ratings_pages.SPEC.per_item,
    ),
    QueueLink(
        panel_pages.SPEC.name,
        panel_pages.PAGE,
        "Panel review",
        "KEEP or REJECT the panels curate's screen was unsure of, and its spot check",
        panel_pages.SPEC.per_item,
    ),
    QueueLink(
        checklist_pages.SPEC.name,
        checklist_pages.PAGE,
        "Checklist review",
        "edit, delete or add the questions of a benchmark file's checklists",
        checklist_pages.SPEC.per_item,
    ),
    QueueLink(
        audit_pages.SPEC.name,
        audit_pages.PAGE,
        "Judge audit",
        "say whether the judge's verdicts are right, a sample of each kind of question",
        audit_pages.SPEC.per_item,
    ),
)


def create_app(store: Store, settings: ReviewSettings, require_tokens: bool | None = None) -> Starlette:
    """The app over ``store``. Raters need a token when it listens beyond 127.0.0.1 (``require_tokens``
    forces either way, for tests)."""
    tokens = not settings.on_loopback() if require_tokens is None else require_tokens
    routes = [
        Route("/", pages.index, methods=["GET"]),
        Route("/sign-in", pages.sign_in_form, methods=["GET"]),
        Route("/sign-in", pages.sign_in, methods=["POST"]),
        Route("/sign-out", pages.sign_out, methods=["POST"]),
        *queue_routes(ratings_pages.SPEC),
        *queue_routes(panel_pages.SPEC),
        *queue_routes(checklist_pages.SPEC),
        *queue_routes(audit_pages.SPEC),
        *(_static_route(path, *served) for path, served in pages.static_files().items()),
        _static_route("/favicon.ico", b"", "image/x-icon"),  # browsers ask for it: nothing, not a 404
    ]
    hosts = allowed_hosts(settings.on_loopback(), settings.allowed_hosts)
    app = Starlette(
        routes=routes, middleware=[Middleware(GuardMiddleware, hosts=hosts)], max_body_size=LARGE_FORM_BYTES
    )
    app.state.review = pages.ReviewContext(store, settings, pages.templates(), tokens, QUEUES)
    return app


@dataclass(frozen=True)
class Prepared:
    """An open store with its queues filled, and what was found, in words."""

    store: Store
    lines: list[str]


def prepare(settings: ReviewSettings) -> Prepared:
    """Open (and migrate) the store and add to each queue what is not queued yet."""
    store = open_store(settings.store)
    ratings = settings.ratings
    prompts = ratings_queue.prompts_of(ratings.benchmark)
    with store.writing() as session:
        queue = ratings_queue.open_queue(session, ratings)
        added = ratings_queue.fill(session, queue, Path(ratings.images), prompts)
        total = item_count(session, queue)
        tokens = raters_with_tokens(session)
    lines = [
        f"review store: {describe(settings.store)}",
        f"ratings queue: {total} images ({added} new from {ratings.images}), scale 1-{ratings.scale}, "
        f"{ratings.raters_per_image} raters per image, {len(prompts)} prompts from {ratings.benchmark}",
        _fill_panels(store, settings),
        _fill_checklists(store, settings),
        _fill_audit(store, settings),
    ]
    if not settings.on_loopback():
        lines.append(f"listening beyond 127.0.0.1: raters sign in with a token ({tokens} given so far)")
        if tokens == 0:
            lines.append("no rater has a token yet: give each one with `kedro review --add-rater NAME`")
    return Prepared(store, lines)


def _open_and_fill(
    store: Store,
    open_queue: Callable[[Session, Section], Queue],
    fill: Callable[[Session, Queue, Section], Filled],
    section: Section,
) -> tuple[Filled, int]:
    """A queue opened (created if new) and filled with what is not queued yet, in one transaction: what the fill
    added, and how many items the queue holds."""
    with store.writing() as session:
        queue = open_queue(session, section)
        filled = fill(session, queue, section)
        return filled, item_count(session, queue)


def _fill_panels(store: Store, settings: ReviewSettings) -> str:
    panels = settings.panels
    filled, total = _open_and_fill(store, panel_queue.open_queue, panel_queue.fill, panels)
    skipped = [
        f"{filled.decided_in_file} decided in the file" if filled.decided_in_file else "",
        f"{filled.without_image} without their image in {panels.images}" if filled.without_image else "",
    ]
    left_out = "; left out: " + ", ".join(s for s in skipped if s) if any(skipped) else ""
    return (
        f"panel review: {total} panels ({filled.added} new from {panels.queue_file}{left_out}), "
        f"{panels.raters_per_item} rater(s) per panel"
    )


def _fill_checklists(store: Store, settings: ReviewSettings) -> str:
    checklists = settings.checklists
    if checklists.benchmark is None:
        return "checklist review: no benchmark file named (checklists.benchmark, or --checklists FILE)"
    with store.writing() as session:
        queue, added = checklist_queue.fill(session, checklists)
        total = 0 if queue is None else item_count(session, queue)
    return (
        f"checklist review: {total} samples ({added} new from {checklists.benchmark}), "
        f"{checklists.raters_per_item} rater(s) per sample"
    )


def _fill_audit(store: Store, settings: ReviewSettings) -> str:
    audit = settings.audit
    filled, total = _open_and_fill(store, audit_queue.open_queue, audit_queue.fill, audit)
    strata = ", ".join(f"{stratum} {count}" for stratum, count in sorted(filled.added.items())) or "none"
    return (
        f"judge audit: {total} verdicts ({sum(filled.added.values())} new of {filled.candidates} judged verdicts "
        f"in {audit.verdicts}; added per kind/verdict: {strata}), up to {audit.per_stratum} per kind and verdict"
    )
