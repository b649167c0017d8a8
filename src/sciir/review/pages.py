"""The pages every queue shares: signing in and out, the list of queues, the script and style sheet.

Routes stay thin: they read the form, then hand the work to a function that runs in a worker thread with its
own transaction (the store's calls block). What the pages share lives in ``ReviewContext`` (``app.state``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from sciir.review import raters as rater_store
from sciir.review.queue_store import Progress, progress, queue_named
from sciir.review.security import (
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    FormError,
    form_fields,
    new_token,
    same_token,
)
from sciir.review.settings import ReviewSettings
from sciir.review.store import Store

HERE = Path(__file__).parent


@dataclass(frozen=True)
class QueueLink:
    """A queue as the list of queues shows it: its name in the store and how many raters each item needs
    (both from the settings), its page, a title and what it asks."""

    name: Callable[[ReviewSettings], str]
    path: str
    title: str
    blurb: str
    per_item: Callable[[ReviewSettings], int]


@dataclass(frozen=True)
class ReviewContext:
    """What the pages share: the store, the settings, the templates, whether raters need a token, and the
    queues the app serves."""

    store: Store
    settings: ReviewSettings
    templates: Jinja2Templates
    require_tokens: bool
    queues: tuple[QueueLink, ...] = ()


def templates() -> Jinja2Templates:
    """The pages' templates, every value escaped (autoescape on for all of them)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return Jinja2Templates(env=environment)


def review_context(request: Request) -> ReviewContext:
    context: ReviewContext = request.app.state.review
    return context


def page(request: Request, name: str, values: dict[str, Any], status: int = 200) -> Response:
    context = review_context(request)
    return context.templates.TemplateResponse(
        request, name, {"rater": None, "message": None} | values, status_code=status
    )


def current_rater(request: Request) -> rater_store.SignedIn | None:
    """Who is signed in on this browser (None: nobody); blocking, call it from a worker thread."""
    with review_context(request).store.reading() as session:
        return rater_store.signed_in(session, request.cookies.get(SESSION_COOKIE))


def to_sign_in() -> Response:
    return RedirectResponse("/sign-in", status_code=303)


def _sign_in_page(request: Request, message: str | None = None, status: int = 200) -> Response:
    csrf = new_token()
    response = page(
        request,
        "sign_in.html",
        {"csrf": csrf, "require_tokens": review_context(request).require_tokens, "message": message},
        status,
    )
    response.set_cookie(SIGN_IN_COOKIE, csrf, httponly=True, samesite="strict", path="/sign-in")
    return response


async def sign_in_form(request: Request) -> Response:
    return _sign_in_page(request)


def _sign_in(request: Request, fields: dict[str, str]) -> Response:
    context = review_context(request)
    if not same_token(fields, request.cookies.get(SIGN_IN_COOKIE)):
        return _sign_in_page(request, "this form has expired or came from elsewhere: sign in again", 403)
    token, name = fields.get("token", "").strip(), fields.get("name", "")
    try:
        with context.store.writing() as session:
            if token:
                rater = rater_store.rater_by_token(session, token)
            elif context.require_tokens:
                raise rater_store.SignInRefused(
                    "this app is open beyond this computer: sign in with your token"
                )
            else:
                rater = rater_store.rater_by_name(session, name)
            cookie = rater_store.start_session(session, rater)
    except rater_store.SignInRefused as refused:
        return _sign_in_page(request, str(refused), 403 if token or context.require_tokens else 400)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict", path="/")
    response.delete_cookie(SIGN_IN_COOKIE, path="/sign-in")
    return response


async def sign_in(request: Request) -> Response:
    try:
        fields = await form_fields(request)
    except FormError as error:
        return _sign_in_page(request, str(error), 400)
    return await run_in_threadpool(_sign_in, request, fields)


def _sign_out(request: Request, fields: dict[str, str]) -> Response:
    who = current_rater(request)
    if who is None or not same_token(fields, who.csrf_token):
        return HTMLResponse("refused: this form has expired or came from elsewhere", 403)
    with review_context(request).store.writing() as session:
        rater_store.end_session(session, request.cookies.get(SESSION_COOKIE, ""))
    response = to_sign_in()
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


async def sign_out(request: Request) -> Response:
    try:
        fields = await form_fields(request)
    except FormError as error:
        return HTMLResponse(str(error), 400)
    return await run_in_threadpool(_sign_out, request, fields)


def _index(request: Request) -> Response:
    who = current_rater(request)
    if who is None:
        return to_sign_in()
    context = review_context(request)
    listed = []
    with context.store.reading() as session:
        for link in context.queues:
            queue = queue_named(session, link.name(context.settings))
            done = (
                Progress(0, 0, 0, 0)
                if queue is None
                else progress(session, queue, who.rater_id, link.per_item(context.settings))
            )
            listed.append({"link": link, "progress": done})
    return page(request, "index.html", {"rater": who, "queues": listed})


async def index(request: Request) -> Response:
    return await run_in_threadpool(_index, request)


def static_files() -> dict[str, tuple[bytes, str]]:
    """The two static files, read once: URL path -> (content, media type). No URL names a file on disk."""
    return {
        "/static/review.js": ((HERE / "static" / "review.js").read_bytes(), "text/javascript; charset=utf-8"),
        "/static/review.css": ((HERE / "static" / "review.css").read_bytes(), "text/css; charset=utf-8"),
    }
