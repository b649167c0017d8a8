"""Raters and how they sign in: a name on 127.0.0.1, a token from the organiser beyond it.

Tokens and session cookies are random (``secrets``) and only their SHA-256 is stored. A rater who was given a
token signs in with it only, wherever the app listens. Each signed-in browser is a ``WebSession`` with its own
CSRF token, which every form it posts must carry.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from sciir.review.models import Rater, WebSession

NAME_MAX = 64


class SignInRefused(ValueError):
    """A sign-in the app refuses; the message says why, for the page."""


@dataclass(frozen=True)
class SignedIn:
    """Who a browser's session belongs to, and the CSRF token its forms carry."""

    rater_id: int
    name: str
    csrf_token: str


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def clean_name(name: str) -> str:
    """A rater's name as stored: trimmed, NFC; SignInRefused when empty, too long or holding control characters."""
    cleaned = unicodedata.normalize("NFC", name.strip())
    if not cleaned:
        raise SignInRefused("give your name")
    if len(cleaned) > NAME_MAX:
        raise SignInRefused(f"a name has at most {NAME_MAX} characters")
    if any(unicodedata.category(char).startswith("C") for char in cleaned):
        raise SignInRefused("a name cannot hold control characters")
    return cleaned


def add_rater(session: Session, name: str) -> str:
    """A new token for rater ``name`` (created if new); a token given before stops working. Printed once:
    only its hash is kept."""
    token = secrets.token_urlsafe(24)
    rater = session.scalar(select(Rater).where(Rater.name == clean_name(name)))
    if rater is None:
        rater = Rater(name=clean_name(name), version=0)
        session.add(rater)
    rater.token_hash = digest(token)
    session.flush()
    return token


def raters_with_tokens(session: Session) -> int:
    return len(session.scalars(select(Rater.id).where(Rater.token_hash.is_not(None))).all())


def rater_by_name(session: Session, name: str) -> Rater:
    """The rater of that name (created when new), for a sign-in by name; refused for a rater with a token."""
    cleaned = clean_name(name)
    rater = session.scalar(select(Rater).where(Rater.name == cleaned))
    if rater is None:
        rater = Rater(name=cleaned, version=0)
        session.add(rater)
        session.flush()
    elif rater.token_hash is not None:
        raise SignInRefused("this rater signs in with the token the organiser gave them")
    return rater


def rater_by_token(session: Session, token: str) -> Rater:
    rater = session.scalar(select(Rater).where(Rater.token_hash == digest(token.strip())))
    if rater is None:
        raise SignInRefused("unknown token: ask the organiser for yours (kedro review --add-rater NAME)")
    return rater


def start_session(session: Session, rater: Rater) -> str:
    """A new web session for ``rater``: the cookie's value (only its hash is stored)."""
    cookie = secrets.token_urlsafe(32)
    session.add(
        WebSession(token_hash=digest(cookie), rater_id=rater.id, csrf_token=secrets.token_urlsafe(32))
    )
    session.flush()
    return cookie


def signed_in(session: Session, cookie: str | None) -> SignedIn | None:
    """Who the session cookie belongs to (None: no cookie, or one the store does not know)."""
    if not cookie:
        return None
    row = session.execute(
        select(WebSession.csrf_token, Rater.id, Rater.name)
        .join(Rater, Rater.id == WebSession.rater_id)
        .where(WebSession.token_hash == digest(cookie))
    ).first()
    return None if row is None else SignedIn(rater_id=row.id, name=row.name, csrf_token=row.csrf_token)


def end_session(session: Session, cookie: str) -> None:
    session.execute(delete(WebSession).where(WebSession.token_hash == digest(cookie)))
