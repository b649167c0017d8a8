"""Transport base for HTTP model backends: one shared async client, bounded concurrency, retries.

A backend hands :meth:`HTTPTransport.run_batch` its items and one coroutine per item. The transport
owns the event loop, the connection pool, the concurrency bound and the retry policy, so a backend is
only payload building and reply parsing (the shape of lm-evaluation-harness's ``TemplateAPI``).

Each item holds one concurrency slot for its whole life (payload building, attempts and the backoff
between them): that bounds both the requests in flight and the payloads held in memory, and makes a
rate-limited server slow the whole batch down instead of being hammered by the other items.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import SecretStr

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_EXCERPT_CHARS = 200


class CallFailed(Exception):
    """An HTTP call that ended without a usable reply; the message says why and never holds a secret."""


class _RetryableError(Exception):
    """One failed attempt worth repeating, with the server's requested wait when it sent one."""

    def __init__(self, reason: str, retry_after_s: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait before repeating a failed attempt."""

    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 300.0
    retry_statuses: frozenset[int] = RETRYABLE_STATUSES

    def delay_s(self, retry_number: int, retry_after_s: float | None) -> float:
        """Seconds to wait before retry ``retry_number`` (0-based).

        The server's Retry-After wins when it sent one (capped at ``max_retry_after_s``); otherwise
        exponential backoff with full jitter, so many clients failing together do not retry together.
        """
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_retry_after_s)
        return random.uniform(0.0, min(self.max_delay_s, self.base_delay_s * 2**retry_number))


def parse_retry_after(headers: httpx.Headers) -> float | None:
    """The wait a server asked for, in seconds: ``retry-after-ms`` (OpenAI), or ``Retry-After``
    as seconds or an HTTP date; None when absent or unreadable."""
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _excerpt(text: str) -> str:
    """The start of a reply body on one line, short enough for a failure reason."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "..."


def run_coroutine_sync(make_coroutine: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """Run a coroutine to completion from synchronous code.

    Inside a running event loop (a notebook, an async caller) ``asyncio.run`` is not allowed, so the
    coroutine runs on its own loop in a worker thread while the caller waits.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coroutine())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="sciir-http") as pool:
        return pool.submit(lambda: asyncio.run(make_coroutine())).result()


class HTTPSession:
    """One batch's shared client and retry policy; backends call :meth:`post_json`."""

    def __init__(self, client: httpx.AsyncClient, retry: RetryPolicy, timeout_s: float, secret: str | None):
        self._client = client
        self._retry = retry
        self._timeout_s = timeout_s
        self._secret = secret

    async def post_json(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``path`` and return the JSON object replied, retrying what is transient.

        Raises :class:`CallFailed` for a status that is not worth retrying, or once retries run out.
        """
        attempts = self._retry.max_retries + 1
        for attempt in range(attempts):
            try:
                return await self._attempt(path, payload)
            except _RetryableError as err:
                last_error = err
                if attempt + 1 < attempts:
                    delay = self._retry.delay_s(attempt, err.retry_after_s)
                    log.info(
                        "POST %s attempt %d/%d failed (%s); retrying in %.2f s",
                        path,
                        attempt + 1,
                        attempts,
                        err,
                        delay,
                    )
                    await asyncio.sleep(delay)
        raise CallFailed(f"POST {path} gave up after {attempts} attempts; last error: {last_error}")

    async def _attempt(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One POST; transient problems raise :class:`_RetryableError`."""
        try:
            response = await self._client.post(path, json=payload)
        except httpx.TimeoutException as err:
            raise _RetryableError(f"timed out after {self._timeout_s:g} s ({type(err).__name__})") from None
        except httpx.TransportError as err:
            raise _RetryableError(self._redact(f"{type(err).__name__}: {err}")) from None
        return self._decode(path, response)

    def _decode(self, path: str, response: httpx.Response) -> dict[str, Any]:
        """The reply's JSON object, or the error that its status or body calls for."""
        status = response.status_code
        body = self._redact(_excerpt(response.text))
        if status in self._retry.retry_statuses:
            raise _RetryableError(f"HTTP {status}: {body}", parse_retry_after(response.headers))
        if not response.is_success:
            raise CallFailed(f"POST {path} returned HTTP {status} (not retried): {body}")
        try:
            decoded = response.json()
        except ValueError:
            # A proxy or an overloaded server can garble one reply; a second try is cheap.
            raise _RetryableError(f"HTTP {status} with a body that is not JSON: {body}") from None
        if not isinstance(decoded, dict):
            raise _RetryableError(f"HTTP {status} with a JSON body that is not an object: {body}")
        return decoded

    def _redact(self, text: str) -> str:
        """``text`` with the API key masked, in case a server echoes it back."""
        return text.replace(self._secret, "***") if self._secret else text


class HTTPTransport:
    """Async HTTP with one shared client per batch, a concurrency bound and retries."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._api_key = SecretStr(api_key) if api_key else None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, concurrency={self.concurrency}, "
            f"timeout_s={self.timeout_s}, retry={self.retry})"
        )

    def run_batch(
        self,
        items: Sequence[T],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
    ) -> list[R]:
        """``call(session, item)`` for every item, concurrently, results in item order.

        An exception from one item becomes ``on_error(item, exception)``; it never stops the others.
        """
        if not items:
            return []
        return run_coroutine_sync(lambda: self._run_all(items, call, on_error))

    async def _run_all(
        self,
        items: Sequence[T],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
    ) -> list[R]:
        secret = self._api_key.get_secret_value() if self._api_key else None
        headers = {"Authorization": f"Bearer {secret}"} if secret else {}
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        async with httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=self.timeout_s, limits=limits
        ) as client:
            session = HTTPSession(client, self.retry, self.timeout_s, secret)
            slots = asyncio.Semaphore(self.concurrency)

            async def one(item: T) -> R:
                async with slots:
                    try:
                        return await call(session, item)
                    except Exception as err:  # one item's failure must not sink the batch
                        return on_error(item, err)

            return list(await asyncio.gather(*(one(item) for item in items)))
