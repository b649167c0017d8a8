"""The pages of a queue, whatever it asks: the next item, an answer, undo, and the item's images by role.

A queue's page module describes itself as a ``QueuePage`` (its name in the store, its URL, its template, the
images it shows, how a form becomes an answer, what else its template needs; ``form_queue_page`` for a queue of
one name whose answer is the form alone) and ``routes`` makes its routes:

- ``GET <path>``: the rater's next item (``queue_store.next_item``), their and everyone's progress, Krippendorff's
  alpha between the raters, or the queue's empty or done message;
- ``POST <path>/answer`` and ``<path>/undo``: checked (CSRF token, the rater's version, the item in the queue,
  the queue's own check) and stored in one transaction; a refusal re-renders the page with the reason and
  stores nothing;
- ``GET <path>/<role>/<public id>``: an image of an item of this queue, found by the item's random id in the
  store (the item's own file, or one its context names for that role); no request names a file.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from sciir.review.blind_images import NotAnImage, shown_png
from sciir.review.models import Item
from sciir.review.pages import ReviewContext, current_rater, page, review_context, to_sign_in
from sciir.review.queue_store import (
    Progress,
    Refused,
    item_by_public_id,
    next_item,
    progress,
    queue_named,
    rater_version,
    record_answer,
    undo_last,
)
from sciir.review.raters import SignedIn
from sciir.review.security import MAX_FORM_BYTES, MAX_FORM_FIELDS, FormError, form_fields, same_token
from sciir.review.settings import ReviewSettings
from sciir.stats.agreement import Agreement

# (score, detail) of an answer, from the form; Refused when the queue cannot take it.
Check = Callable[[ReviewContext, Item, dict[str, str]], tuple[int | None, str | None]]
# What else the template shows: (session, context, item or None, rater, the form a refusal sends back or None)
# -> values.
Extra = Callable[[Session, ReviewContext, Item | None, SignedIn, dict[str, str] | None], dict[str, Any]]


def _no_extra(
    session: Session, context: ReviewContext, item: Item | None, who: SignedIn, posted: dict[str, str] | None
) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class QueuePage:
    """One queue's pages (see the module's docstring). ``name``: the queue's name in the store, from the
    settings (a checklist queue is named by its file)."""

    name: Callable[[ReviewSettings], str]
    path: str
    template: str
    check: Check
    # Krippendorff's alpha between the queue's raters so far: (session, settings, the queue's name) -> it.
    agreement: Callable[[Session, ReviewSettings, str], Agreement]
    per_item: Callable[[ReviewSettings], int]
    seed: Callable[[ReviewSettings], int]
    # Image roles beside "image" (the item's own file): role -> the context key holding that file's path.
    images: dict[str, str] = field(default_factory=dict)
    extra: Extra = _no_extra
    # How an image file becomes the PNG served, without any text the file carries: ``shown_png`` takes any format
    # the project decodes, ``blind_png`` only PNG, JPEG and WebP (the ratings' generated images).
    png: Callable[[Path], bytes] = shown_png
    max_fields: int = MAX_FORM_FIELDS
    max_bytes: int = MAX_FORM_BYTES


class QueueSection(Protocol):
    """A queue's section of the settings: how many raters each item reaches, the seed of each rater's order."""

    @property
    def raters_per_item(self) -> int: ...

    @property
    def seed(self) -> int: ...


def form_queue_page(
    name: str,
    path: str,
    template: str,
    section: Callable[[ReviewSettings], QueueSection],
    check: Callable[[dict[str, str]], tuple[int | None, str | None]],
    agreement: Callable[[Session], Agreement],
    images: dict[str, str] | None = None,
) -> QueuePage:
    """The ``QueuePage`` of a queue with one name whose answer is read from the form alone (panel review, the
    judge audit): ``section``, its settings (``raters_per_item``, ``seed``)."""
    return QueuePage(
        name=lambda settings: name,
        path=path,
        template=template,
        check=lambda context, item, fields: check(fields),
        agreement=lambda session, settings, queue_name: agreement(session),
        per_item=lambda settings: section(settings).raters_per_item,
        seed=lambda settings: section(settings).seed,
        images=images or {},
    )


def alpha_text(agreement: Agreement) -> str:
    if math.isnan(agreement.value):
        return f"not yet ({agreement.reason})" if agreement.reason else "not yet"
    return f"{agreement.value:.3f} ({agreement.n_raters} raters)"


def render(
    request: Request,
    spec: QueuePage,
    who: SignedIn,
    message: str | None = None,
    status: int = 200,
    posted: dict[str, str] | None = None,
) -> Response:
    """The queue's page for this rater: the next item, or the queue's empty or done message (``posted``: the
    form a refusal sends back, for a page that shows what was typed)."""
    context = review_context(request)
    per_item = spec.per_item(context.settings)
    name = spec.name(context.settings)
    with context.store.reading() as session:
        queue = queue_named(session, name)
        item, done = None, Progress(0, 0, 0, 0)
        if queue is not None:
            item = next_item(session, queue, who.rater_id, per_item, spec.seed(context.settings))
            done = progress(session, queue, who.rater_id, per_item)
        agreement = spec.agreement(session, context.settings, name)
        version = rater_version(session, who.rater_id)
        extra = spec.extra(session, context, item, who, posted)
    values = {
        "rater": who,
        "message": message,
        "item": item,
        "version": version,
        "progress": done,
        "per_item": per_item,
        "path": spec.path,
        "alpha": {"level": agreement.level, "text": alpha_text(agreement)},
    }
    return page(request, spec.template, values | extra, status)


def _show(request: Request, spec: QueuePage) -> Response:
    who = current_rater(request)
    return to_sign_in() if who is None else render(request, spec, who)


def form_version(fields: dict[str, str]) -> int:
    """The rater's version a posted form carries (a stale form is refused by it)."""
    try:
        return int(fields.get("version", ""))
    except ValueError:
        raise Refused(
            "this form carries no valid version: reload the page; nothing was stored", 400
        ) from None


def _change(request: Request, spec: QueuePage, fields: dict[str, str], undo: bool) -> Response:
    """An answer (or, with ``undo``, an undo): checked, then stored in one transaction; the page again."""
    who = current_rater(request)
    if who is None:
        return to_sign_in()
    if not same_token(fields, who.csrf_token):
        return render(
            request, spec, who, "this form has expired or came from elsewhere: nothing was stored", 403
        )
    context = review_context(request)
    try:
        version = form_version(fields)
        with context.store.writing() as session:
            queue = queue_named(session, spec.name(context.settings))
            if queue is None:
                raise Refused("this queue does not exist: nothing was stored", 404)
            if undo:
                undo_last(session, queue, who.rater_id, version)
            else:
                item = item_by_public_id(session, queue, fields.get("item", ""))
                if item is None:
                    raise Refused("unknown item: nothing was stored", 404)
                score, detail = spec.check(context, item, fields)
                record_answer(
                    session, queue, who.rater_id, item.public_id, version, score=score, detail=detail
                )
    except Refused as refused:
        return render(request, spec, who, str(refused), refused.status, None if undo else fields)
    except IntegrityError:  # the live-answer index: the same answer sent twice at once
        return render(request, spec, who, "you have already answered this item: nothing was stored", 409)
    return RedirectResponse(spec.path, status_code=303)


def _image(request: Request, spec: QueuePage, role: str, public_id: str) -> Response:
    """An image of an item of the queue, found by the item's public id in the store (the id never names a
    file); ``role`` is one of the queue's fixed roles."""
    if current_rater(request) is None:
        return PlainTextResponse("sign in first", 401)
    context = review_context(request)
    with context.store.reading() as session:
        queue = queue_named(session, spec.name(context.settings))
        item = None if queue is None else item_by_public_id(session, queue, public_id)
        if item is None:
            path = None
        elif role == "image":
            path = item.path or None
        else:
            named = (item.context or {}).get(spec.images[role])
            path = named if isinstance(named, str) and named else None
    if path is None:
        return PlainTextResponse("no such image", 404)
    try:
        return Response(spec.png(Path(path)), media_type="image/png")
    except FileNotFoundError:
        return PlainTextResponse("this image's file is gone from the disk", 404)
    except (NotAnImage, OSError) as error:
        return PlainTextResponse(f"this image cannot be shown: {error}", 415)


def routes(spec: QueuePage) -> list[Route]:
    """The queue's routes (see the module's docstring)."""

    async def show(request: Request) -> Response:
        return await run_in_threadpool(_show, request, spec)

    async def posted(request: Request, undo: bool) -> Response:
        try:
            fields = await form_fields(request, spec.max_fields, spec.max_bytes)
        except FormError as error:
            return PlainTextResponse(f"{error}: nothing was stored", 400)
        return await run_in_threadpool(_change, request, spec, fields, undo)

    async def answer(request: Request) -> Response:
        return await posted(request, undo=False)

    async def undo(request: Request) -> Response:
        return await posted(request, undo=True)

    def image_route(role: str) -> Route:
        async def image(request: Request) -> Response:
            public_id = str(request.path_params["public_id"])
            return await run_in_threadpool(_image, request, spec, role, public_id)

        return Route(f"{spec.path}/{role}/{{public_id}}", image, methods=["GET"])

    return [
        Route(spec.path, show, methods=["GET"]),
        Route(f"{spec.path}/answer", answer, methods=["POST"]),
        Route(f"{spec.path}/undo", undo, methods=["POST"]),
        *(image_route(role) for role in ("image", *spec.images)),
    ]
