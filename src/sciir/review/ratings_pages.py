"""The ratings queue's pages: the next image to rate, an answer, undo, and the image itself.

The page shows an image by its item's random public id, its prompt (escaped by the templates), the scale,
the rater's and everyone's progress and Krippendorff's alpha; never a model's name, a file name or a path.
An answer or undo that is refused re-renders the page with the reason and stores nothing.
"""

from __future__ import annotations

import math
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from sciir.review import ratings_queue
from sciir.review.blind_images import NotAnImage, blind_png
from sciir.review.pages import current_rater, page, review_context, to_sign_in
from sciir.review.queue_pages import form_version
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
from sciir.review.ratings_table import NAME as RATINGS
from sciir.review.security import FormError, form_fields, same_token

PAGE = "/ratings"


def _alpha_text(value: float, reason: str | None, raters: int) -> str:
    if math.isnan(value):
        return f"not yet ({reason})" if reason else "not yet"
    return f"{value:.3f} ({raters} raters)"


def render(request: Request, who: SignedIn, message: str | None = None, status: int = 200) -> Response:
    """The ratings page for this rater: the next image, or the queue's empty or done message."""
    context = review_context(request)
    settings = context.settings.ratings
    with context.store.reading() as session:
        queue = queue_named(session, RATINGS)
        item, done = None, Progress(0, 0, 0, 0)
        if queue is not None:
            item = next_item(session, queue, who.rater_id, settings.raters_per_image, settings.seed)
            done = progress(session, queue, who.rater_id, settings.raters_per_image)
        alpha = ratings_queue.agreement(session, settings)
        version = rater_version(session, who.rater_id)
    values = {
        "rater": who,
        "message": message,
        "item": item,
        "version": version,
        "progress": done,
        "per_item": settings.raters_per_image,
        "scale": settings.scale,
        "question": settings.question,
        "low_label": settings.low_label,
        "high_label": settings.high_label,
        "alpha": {"level": alpha.level, "text": _alpha_text(alpha.value, alpha.reason, alpha.n_raters)},
    }
    return page(request, "ratings.html", values, status)


def _show(request: Request) -> Response:
    who = current_rater(request)
    return to_sign_in() if who is None else render(request, who)


async def show(request: Request) -> Response:
    return await run_in_threadpool(_show, request)


def _change(request: Request, fields: dict[str, str], undo: bool) -> Response:
    """An answer (or, with ``undo``, an undo): checked, then stored in one transaction; the page again."""
    who = current_rater(request)
    if who is None:
        return to_sign_in()
    if not same_token(fields, who.csrf_token):
        return render(request, who, "this form has expired or came from elsewhere: nothing was stored", 403)
    context = review_context(request)
    try:
        version = form_version(fields)
        score = (
            None if undo else ratings_queue.checked_score(fields.get("score"), context.settings.ratings.scale)
        )
        with context.store.writing() as session:
            queue = queue_named(session, RATINGS)
            if queue is None:
                raise Refused("the ratings queue does not exist: nothing was stored", 404)
            if undo:
                undo_last(session, queue, who.rater_id, version)
            else:
                record_answer(session, queue, who.rater_id, fields.get("item", ""), version, score=score)
    except Refused as refused:
        return render(request, who, str(refused), refused.status)
    except IntegrityError:  # the live-answer index: the same answer sent twice at once
        return render(request, who, "you have already answered this item: nothing was stored", 409)
    return RedirectResponse(PAGE, status_code=303)


async def _posted(request: Request, undo: bool) -> Response:
    try:
        fields = await form_fields(request)
    except FormError as error:
        return PlainTextResponse(f"{error}: nothing was stored", 400)
    return await run_in_threadpool(_change, request, fields, undo)


async def answer(request: Request) -> Response:
    return await _posted(request, undo=False)


async def undo(request: Request) -> Response:
    return await _posted(request, undo=True)


def _image(request: Request, public_id: str) -> Response:
    """The image of an item of the queue, found by its public id in the store (the id never names a file)."""
    if current_rater(request) is None:
        return PlainTextResponse("sign in first", 401)
    with review_context(request).store.reading() as session:
        queue = queue_named(session, RATINGS)
        item = None if queue is None else item_by_public_id(session, queue, public_id)
        path = None if item is None else item.path
    if path is None:
        return PlainTextResponse("no such image", 404)
    try:
        return Response(blind_png(Path(path)), media_type="image/png")
    except FileNotFoundError:
        return PlainTextResponse("this image's file is gone from the disk", 404)
    except (NotAnImage, OSError) as error:
        return PlainTextResponse(f"this image cannot be shown: {error}", 415)


async def image(request: Request) -> Response:
    return await run_in_threadpool(_image, request, str(request.path_params["public_id"]))
