"""The rules every request meets before a page sees it, and the form and CSRF helpers the pages use.

- **Host**: on 127.0.0.1 the app answers only the loopback names (localhost, 127.0.0.1, ::1), so a page of
  another site whose name is made to resolve to 127.0.0.1 (DNS rebinding) gets nothing; beyond 127.0.0.1,
  the names in ``allowed_hosts`` when given.
- **Origin**: a POST must come from a page of this app: its ``Origin`` header (or, without one, its
  ``Referer``) names this host; a POST naming no origin at all is refused too.
- **CSRF**: each form carries a token: the signed-in session's (``WebSession.csrf_token``), or for the sign-in
  form a random value also set as a cookie (double submit). Pages check it with ``same_token``.
- **Headers**: a Content-Security-Policy allowing this app's own script, style and images only (no inline
  script), no framing, no MIME sniffing, no referrer to other sites.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sciir.review.settings import LOOPBACK_NAMES

SESSION_COOKIE = "sciir_review_session"
SIGN_IN_COOKIE = "sciir_review_sign_in"
MAX_FORM_BYTES = 16 * 1024
MAX_FORM_FIELDS = 16
# A checklist's form (every question's fields) is larger: its page asks for these bounds instead.
LARGE_FORM_BYTES = 128 * 1024
LARGE_FORM_FIELDS = 1024
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


class FormError(ValueError):
    """A POST body that is not a small URL-encoded form."""


def host_name(host: str) -> str:
    """The name in a Host header (``[::1]:8765`` -> ``::1``), lower case; '' when there is none."""
    try:
        return (urlsplit(f"//{host}").hostname or "").lower()
    except ValueError:
        return ""


def allowed_hosts(on_loopback: bool, configured: list[str]) -> frozenset[str] | None:
    """The host names the app answers: the loopback names on 127.0.0.1, else those configured (None: any)."""
    if on_loopback:
        return LOOPBACK_NAMES | {name.lower() for name in configured}
    return frozenset(name.lower() for name in configured) or None


def request_origin(headers: Headers) -> str | None:
    """The ``scheme://host`` a request says it comes from: its Origin, else its Referer's."""
    origin = headers.get("origin")
    if origin and origin != "null":
        return origin
    referer = headers.get("referer")
    if referer:
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}" if parts.netloc else None
    return None


def same_site(headers: Headers) -> bool:
    """Whether a request's origin is this host (the Host header it was sent to)."""
    origin = request_origin(headers)
    host = headers.get("host", "").lower()
    return bool(origin and host) and urlsplit(origin or "").netloc.lower() == host


class GuardMiddleware:
    """The Host and Origin rules and the security headers (see the module's docstring)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = None
        if self.hosts is not None and host_name(headers.get("host", "")) not in self.hosts:
            refusal = PlainTextResponse("unknown host: this app answers its own address only", 421)
        elif scope["method"] not in ("GET", "HEAD") and not same_site(headers):
            refusal = PlainTextResponse("refused: a form of this app must send it (cross-site request)", 403)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    response_headers.setdefault(name, value)
            await send(message)

        await (refusal or self.app)(scope, receive, send_with_headers)


async def form_fields(
    request: Request, max_fields: int = MAX_FORM_FIELDS, max_bytes: int = MAX_FORM_BYTES
) -> dict[str, str]:
    """The fields of a URL-encoded form POST (the first value of each); FormError for anything else (another
    content type, more than ``max_bytes`` or ``max_fields``)."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise FormError("expected a form (application/x-www-form-urlencoded)")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise FormError("form too large")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=max_fields)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormError(f"unreadable form: {exc}") from None
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields


def same_token(fields: Mapping[str, str], expected: str | None) -> bool:
    """Whether a form's ``csrf`` field is the expected token (compared in constant time)."""
    sent = fields.get("csrf", "")
    return bool(expected) and secrets.compare_digest(sent.encode(), (expected or "").encode())


def new_token() -> str:
    return secrets.token_urlsafe(32)
