"""One batch's HTTP session: GET and POST on a shared client with retries, rate limits and bounded
reads; every failure says why and never holds a secret."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from sciir.backends.http.json_body import json_body
from sciir.backends.http.rate_limits import RateLimits
from sciir.backends.http.replicas import Replicas
from sciir.backends.http.retries import RetryPolicy, parse_retry_after

log = logging.getLogger(__name__)

T = TypeVar("T")

_RATE_LIMITED = 429
_EXCERPT_CHARS = 200
_CHUNK_BYTES = 1 << 16
_JSON_CONTENT = {"Content-Type": "application/json"}


class CallFailed(Exception):
    """An HTTP call that ended without a usable reply; the message says why and never holds a secret.

    ``attempts`` is how many HTTP requests the call sent before giving up.
    """

    def __init__(self, reason: str, attempts: int = 0) -> None:
        super().__init__(reason)
        self.attempts = attempts


class _RetryableError(Exception):
    """One failed attempt worth repeating, with the server's requested wait when it sent one."""

    def __init__(self, reason: str, retry_after_s: float | None = None, rate_limited: bool = False) -> None:
        super().__init__(reason)
        self.retry_after_s = retry_after_s
        self.rate_limited = rate_limited


@dataclass(frozen=True)
class Reply:
    """A decoded JSON reply and how many HTTP requests it took (1 plus the retries)."""

    body: dict[str, Any]
    attempts: int


def reported_total_tokens(body: Mapping[str, Any]) -> float | None:
    """Tokens the server says a reply consumed (OpenAI-style ``usage``), or None when it did not say."""
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return None
    total = usage.get("total_tokens")
    if isinstance(total, int | float):
        return float(total)
    parts = [usage.get(name) for name in ("prompt_tokens", "completion_tokens")]
    counted = [float(part) for part in parts if isinstance(part, int | float)]
    return sum(counted) if counted else None


def _excerpt(raw: bytes) -> str:
    """The start of a reply body on one line, short enough for a failure reason."""
    flat = " ".join(raw[: _EXCERPT_CHARS * 4].decode("utf-8", errors="replace").split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "..."


class HTTPSession:
    """One batch's shared client, retry policy and limits; callers use :meth:`post`, :meth:`post_json`,
    :meth:`get` or :meth:`get_json`."""

    def __init__(
        self,
        client: aiohttp.ClientSession,
        replicas: Replicas,
        retry: RetryPolicy,
        limits: RateLimits,
        timeout_s: float,
        secret: str | None,
    ) -> None:
        self._client = client
        self.replicas = replicas
        self._retry = retry
        self._limits = limits
        self._timeout_s = timeout_s
        self._secret = secret

    async def post_json(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``path`` and return the JSON object replied (see :meth:`post`)."""
        return (await self.post(path, payload)).body

    async def post(self, path: str, payload: dict[str, Any], estimated_tokens: float = 0.0) -> Reply:
        """POST ``payload`` to ``path`` and return the reply, retrying what is transient; each attempt
        goes to the least busy replica, a retry to another one than the attempt before when there is one.

        ``estimated_tokens`` is charged to the tokens-per-minute limit before each attempt.
        Raises :class:`CallFailed` for a status that is not worth retrying, or once retries run out.
        """
        body = json_body(payload)
        tried: list[str] = []

        async def attempt(number: int) -> dict[str, Any]:
            with self.replicas.attempt(avoid=tried[-1] if tried else None) as base_url:
                tried.append(base_url)
                try:
                    status, headers, raw = await self._exchange(
                        "POST", base_url + path, number, data=body, headers=_JSON_CONTENT
                    )
                    decoded = self._decode("POST", path, status, headers, raw, number)
                except _RetryableError:
                    self.replicas.failed(base_url)
                    raise
            self.replicas.answered(base_url)
            return decoded

        decoded, attempts = await self._with_retries("POST", path, attempt, estimated_tokens)
        self._limits.settle(estimated_tokens, reported_total_tokens(decoded))
        return Reply(decoded, attempts)

    async def get(
        self, target: str, params: Mapping[str, str] | None = None, max_bytes: int | None = None
    ) -> bytes:
        """GET ``target`` (a path under the base URL, or a whole http(s) URL) and return the body of its
        2xx reply, retrying what is transient as :meth:`post` does. A body over ``max_bytes`` is refused
        (:class:`CallFailed`, not retried) without reading the rest of it."""
        url = self._url(target)

        async def attempt(number: int) -> bytes:
            status, headers, raw = await self._exchange("GET", url, number, max_bytes, params=params)
            self._check_status("GET", target, status, headers, raw, number)
            return raw

        return (await self._with_retries("GET", target, attempt))[0]

    async def get_json(self, target: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
        """GET ``target`` and return the JSON object replied (see :meth:`get`)."""
        url = self._url(target)

        async def attempt(number: int) -> dict[str, Any]:
            status, headers, raw = await self._exchange("GET", url, number, params=params)
            return self._decode("GET", target, status, headers, raw, number)

        return (await self._with_retries("GET", target, attempt))[0]

    def _url(self, target: str) -> str:
        """A whole URL as it is; a path under the first replica (paged downloads name one server)."""
        return target if target.startswith(("http://", "https://")) else self.replicas.urls[0] + target

    async def _with_retries(
        self,
        method: str,
        target: str,
        attempt: Callable[[int], Awaitable[T]],
        estimated_tokens: float = 0.0,
    ) -> tuple[T, int]:
        """``attempt(number)`` until it succeeds, raises :class:`CallFailed` or retries run out; its result
        and the number of requests sent. Every attempt waits for the rate limits first."""
        attempts = self._retry.max_retries + 1
        for number in range(1, attempts + 1):
            await self._limits.acquire(estimated_tokens)
            try:
                return await attempt(number), number
            except _RetryableError as err:
                last_error = err
                if number < attempts:
                    await self._back_off(f"{method} {target}", number, attempts, err)
        raise CallFailed(
            f"{method} {target} gave up after {attempts} attempts; last error: {last_error}", attempts
        )

    async def _back_off(self, request: str, attempt: int, attempts: int, err: _RetryableError) -> None:
        """Wait before the next attempt; a 429 makes every request of the transport wait too."""
        delay = self._retry.delay_s(attempt - 1, err.retry_after_s)
        if err.rate_limited:
            self._limits.cool_down(delay)
        log.info("%s attempt %d/%d failed (%s); retrying in %.2f s", request, attempt, attempts, err, delay)
        await asyncio.sleep(delay)

    async def _exchange(
        self, method: str, url: str, attempt: int, max_bytes: int | None = None, **request: Any
    ) -> tuple[int, Mapping[str, str], bytes]:
        """One request: the reply's status, headers and body. Transient problems raise
        :class:`_RetryableError`; a body over ``max_bytes`` raises :class:`CallFailed`."""
        try:
            async with self._client.request(method, url, **request) as response:
                if max_bytes is None:
                    raw = await response.read()
                else:
                    raw = await self._read_bounded(response, method, url, max_bytes, attempt)
                return response.status, response.headers, raw
        except TimeoutError as err:  # asyncio.TimeoutError is the builtin one since Python 3.11
            # aiohttp's timeouts carry no message; the limit they hit is what explains them.
            raise _RetryableError(f"timed out after {self._timeout_s:g} s ({type(err).__name__})") from None
        except aiohttp.ClientError as err:
            raise _RetryableError(self._redact(f"{type(err).__name__}: {err}")) from None

    @staticmethod
    async def _read_bounded(
        response: aiohttp.ClientResponse, method: str, url: str, max_bytes: int, attempt: int
    ) -> bytes:
        """The body, read chunk by chunk and abandoned as soon as it passes ``max_bytes``."""
        too_large = f"{method} {url}: the reply is over the {max_bytes}-byte limit"
        if response.content_length is not None and response.content_length > max_bytes:
            raise CallFailed(f"{too_large} ({response.content_length} bytes)", attempt)
        chunks, size = [], 0
        async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
            size += len(chunk)
            if size > max_bytes:
                raise CallFailed(too_large, attempt)
            chunks.append(chunk)
        return b"".join(chunks)

    def _check_status(
        self, method: str, target: str, status: int, headers: Mapping[str, str], raw: bytes, attempt: int
    ) -> None:
        """Raise the error a status that is not 2xx calls for: retryable or not."""
        if status in self._retry.retry_statuses:
            body = self._redact(_excerpt(raw))
            raise _RetryableError(
                f"HTTP {status}: {body}", parse_retry_after(headers), rate_limited=status == _RATE_LIMITED
            )
        if not 200 <= status < 300:
            body = self._redact(_excerpt(raw))
            raise CallFailed(f"{method} {target} returned HTTP {status} (not retried): {body}", attempt)

    def _decode(
        self, method: str, target: str, status: int, headers: Mapping[str, str], raw: bytes, attempt: int
    ) -> dict[str, Any]:
        """The reply's JSON object, or the error that its status or body calls for."""
        self._check_status(method, target, status, headers, raw, attempt)
        try:
            decoded = json.loads(raw)
        except ValueError:
            # A proxy or an overloaded server can garble one reply; a second try is cheap.
            body = self._redact(_excerpt(raw))
            raise _RetryableError(f"HTTP {status} with a body that is not JSON: {body}") from None
        if not isinstance(decoded, dict):
            body = self._redact(_excerpt(raw))
            raise _RetryableError(f"HTTP {status} with a JSON body that is not an object: {body}")
        return decoded

    def _redact(self, text: str) -> str:
        """``text`` with the API key masked, in case a server echoes it back."""
        return text.replace(self._secret, "***") if self._secret else text
