"""The review app: its routes, its guard (``sciir.review.security``) and its context.

``create_app`` builds it over an open store; ``prepare`` opens the store (migrating it), fills the ratings queue
and says in words what is there, which is what ``kedro review`` does before serving.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sciir.review import pages, ratings_pages, ratings_queue
from sciir.review.queue_store import item_count
from sciir.review.raters import raters_with_tokens
from sciir.review.security import MAX_FORM_BYTES, GuardMiddleware, allowed_hosts
from sciir.review.settings import ReviewSettings
from sciir.review.store import Store, describe, open_store

logger = logging.getLogger(__name__)


def _static_route(path: str, content: bytes, media_type: str) -> Route:
    async def serve(request: Request) -> Response:
        return Response(content, media_type=media_type)

    return Route(path, serve, methods=["GET"])


def create_app(store: Store, settings: ReviewSettings, require_tokens: bool | None = None) -> Starlette:
    """The app over ``store``. Raters need a token when it listens beyond 127.0.0.1 (``require_tokens``
    forces either way, for tests)."""
    tokens = not settings.on_loopback() if require_tokens is None else require_tokens
    routes = [
        Route("/", pages.index, methods=["GET"]),
        Route("/sign-in", pages.sign_in_form, methods=["GET"]),
        Route("/sign-in", pages.sign_in, methods=["POST"]),
        Route("/sign-out", pages.sign_out, methods=["POST"]),
        Route(ratings_pages.PAGE, ratings_pages.show, methods=["GET"]),
        Route(f"{ratings_pages.PAGE}/answer", ratings_pages.answer, methods=["POST"]),
        Route(f"{ratings_pages.PAGE}/undo", ratings_pages.undo, methods=["POST"]),
        Route(f"{ratings_pages.PAGE}/image/{{public_id}}", ratings_pages.image, methods=["GET"]),
        *(_static_route(path, *served) for path, served in pages.static_files().items()),
        _static_route("/favicon.ico", b"", "image/x-icon"),  # browsers ask for it: nothing, not a 404
    ]
    hosts = allowed_hosts(settings.on_loopback(), settings.allowed_hosts)
    app = Starlette(
        routes=routes, middleware=[Middleware(GuardMiddleware, hosts=hosts)], max_body_size=MAX_FORM_BYTES
    )
    app.state.review = pages.ReviewContext(store, settings, pages.templates(), tokens)
    return app


@dataclass(frozen=True)
class Prepared:
    """An open store with its ratings queue filled, and what was found, in words."""

    store: Store
    lines: list[str]


def prepare(settings: ReviewSettings) -> Prepared:
    """Open (and migrate) the store and add the images not queued yet to the ratings queue."""
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
    ]
    if not settings.on_loopback():
        lines.append(f"listening beyond 127.0.0.1: raters sign in with a token ({tokens} given so far)")
        if tokens == 0:
            lines.append("no rater has a token yet: give each one with `kedro review --add-rater NAME`")
    return Prepared(store, lines)
