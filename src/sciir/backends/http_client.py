"""Transport base for HTTP model backends: one shared async session, bounded concurrency, retries, limits.

A backend hands :meth:`HTTPTransport.run_batch` its items (or :meth:`HTTPTransport.run_stream` a lazy
iterable of them) and one coroutine per item. The transport
owns the event loop, the connection pool, the concurrency bound, the retry policy and the optional rate
limits, so a backend is only payload building and reply parsing (the shape of lm-evaluation-harness's
``TemplateAPI``). A client that drives its own requests (a paged download) opens
:meth:`HTTPTransport.session` and sends GET or POST requests on it with the same retries and limits.

Each item holds one concurrency slot for its whole life (payload building, attempts and the backoff
between them): that bounds both the requests in flight and the payloads held in memory, and makes a
rate-limited server slow the whole batch down instead of being hammered by the other items.

The HTTP client is aiohttp with one ``ClientSession`` per batch or stream and a connection pool sized to the
concurrency: httpx's pool serialises connection checkout under load (encode/httpx#3215) and stalls
near 120 requests/s at 64 concurrent requests, well under what a served judge answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import random
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import aiohttp
from pydantic import SecretStr

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
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


@dataclass(frozen=True)
class Reply:
    """A decoded JSON reply and how many HTTP requests it took (1 plus the retries)."""

    body: dict[str, Any]
    attempts: int


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for, in seconds: ``retry-after-ms`` (OpenAI), or ``Retry-After``
    as seconds or an HTTP date; None when absent or unreadable. ``headers`` is case-insensitive."""
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


class TokenBucket:
    """``per_minute`` units a minute, paced evenly: at most one second's worth is spent in a burst.

    A server counting "N per minute" over a sliding window would reject a minute's worth sent at once;
    pacing keeps every 60 s window near N. ``try_take`` may drive the level below zero (a request larger
    than the burst still goes once the bucket is full), and ``refund`` corrects an estimate afterwards.
    The level survives across batches and is safe to share between threads.
    """

    def __init__(self, per_minute: float) -> None:
        if per_minute <= 0:
            raise ValueError(f"a rate limit must be positive, got {per_minute}")
        self.rate_per_s = per_minute / 60.0
        self.capacity = max(self.rate_per_s, 1.0)
        self._level = self.capacity
        self._stamp = time.monotonic()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # A backend may be deep-copied (Kedro's MemoryDataset); a lock cannot be copied, only made anew.
        return {name: value for name, value in self.__dict__.items() if name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = time.monotonic()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.rate_per_s)
        self._stamp = now

    def try_take(self, amount: float) -> float:
        """Take ``amount`` and return 0, or return the seconds to wait before it can be taken."""
        with self._lock:
            self._refill()
            needed = min(amount, self.capacity)
            if self._level >= needed:
                self._level -= amount
                return 0.0
            return (needed - self._level) / self.rate_per_s

    def refund(self, amount: float) -> None:
        """Give back ``amount`` (negative: take more), once the real cost of a request is known."""
        with self._lock:
            self._refill()
            self._level = min(self.capacity, self._level + amount)


class RateLimits:
    """Optional requests-per-minute and tokens-per-minute limits, plus a cool-down shared after a 429.

    Tokens are charged up front from the caller's estimate and corrected by the usage the server
    reports. After a 429 nobody sends until the server's Retry-After (or the backoff) has passed:
    the other requests would only be rejected too.
    """

    def __init__(self, requests_per_minute: float | None = None, tokens_per_minute: float | None = None):
        self.requests = TokenBucket(requests_per_minute) if requests_per_minute is not None else None
        self.tokens = TokenBucket(tokens_per_minute) if tokens_per_minute is not None else None
        self._cool_down_until = 0.0

    def cool_down(self, seconds: float) -> None:
        """Hold every request of this transport back for ``seconds`` from now."""
        self._cool_down_until = max(self._cool_down_until, time.monotonic() + seconds)

    async def acquire(self, estimated_tokens: float) -> None:
        """Wait until the cool-down is over and both buckets allow one request of ``estimated_tokens``."""
        while (left := self._cool_down_until - time.monotonic()) > 0:
            await asyncio.sleep(left)
        for bucket, amount in ((self.requests, 1.0), (self.tokens, estimated_tokens)):
            while bucket is not None and (wait := bucket.try_take(amount)) > 0:
                await asyncio.sleep(wait)

    def settle(self, estimated_tokens: float, reported_tokens: float | None) -> None:
        """Correct the token bucket once the server has said what a request really consumed."""
        if self.tokens is not None and reported_tokens is not None:
            self.tokens.refund(estimated_tokens - reported_tokens)


class JSONText:
    """A JSON string value given as the ASCII bytes of its content, spliced into a request body as it is
    (``json_body``): a megabyte of base64 is then neither scanned for escapes nor copied through a str.
    Only for content that needs no JSON escape (no quote, backslash or control character), such as a
    base64 data URL."""

    __slots__ = ("content",)

    def __init__(self, content: bytes) -> None:
        self.content = content

    def __str__(self) -> str:  # what a cache key or a log line sees
        return self.content.decode("ascii")


_SPLICE = "\x00sciir-json-text\x00"  # a string no caller writes; json escapes it as \u0000...
_SPLICED = json.dumps(_SPLICE)


def json_body(payload: Mapping[str, Any]) -> bytes:
    """``payload`` as a JSON request body, each ``JSONText`` value spliced in as its own bytes."""
    texts: list[bytes] = []

    def splice(value: Any) -> str:
        if not isinstance(value, JSONText):
            raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
        texts.append(value.content)
        return _SPLICE

    head, *rest = json.dumps(payload, default=splice).split(_SPLICED)
    if len(rest) != len(texts):  # a caller's own string held the marker: never send a wrong body
        raise ValueError("the payload holds the JSONText splice marker in one of its strings")
    pieces = [head.encode()]
    for text, tail in zip(texts, rest, strict=True):
        pieces += [b'"', text, b'"', tail.encode()]
    return b"".join(pieces)


class HTTPSession:
    """One batch's shared client, retry policy and limits; callers use :meth:`post`, :meth:`post_json`,
    :meth:`get` or :meth:`get_json`."""

    def __init__(
        self,
        client: aiohttp.ClientSession,
        base_url: str,
        retry: RetryPolicy,
        limits: RateLimits,
        timeout_s: float,
        secret: str | None,
    ) -> None:
        self._client = client
        self._base_url = base_url
        self._retry = retry
        self._limits = limits
        self._timeout_s = timeout_s
        self._secret = secret

    async def post_json(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST ``payload`` to ``path`` and return the JSON object replied (see :meth:`post`)."""
        return (await self.post(path, payload)).body

    async def post(self, path: str, payload: dict[str, Any], estimated_tokens: float = 0.0) -> Reply:
        """POST ``payload`` to ``path`` and return the reply, retrying what is transient.

        ``estimated_tokens`` is charged to the tokens-per-minute limit before each attempt.
        Raises :class:`CallFailed` for a status that is not worth retrying, or once retries run out.
        """
        body = json_body(payload)

        async def attempt(number: int) -> dict[str, Any]:
            status, headers, raw = await self._exchange(
                "POST", self._base_url + path, number, data=body, headers=_JSON_CONTENT
            )
            return self._decode("POST", path, status, headers, raw, number)

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
        return target if target.startswith(("http://", "https://")) else self._base_url + target

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
        except asyncio.TimeoutError as err:  # not yet the builtin TimeoutError on Python 3.10
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


class HTTPTransport:
    """Async HTTP with one shared session per batch, a concurrency bound, retries and optional limits.

    ``use_env_proxy`` routes requests through the proxy named by ``HTTPS_PROXY``/``HTTP_PROXY`` (and
    ``NO_PROXY``), e.g. for a hosted API behind a corporate proxy; a served judge is usually reached
    directly. ``headers`` are sent with every request (e.g. a ``User-Agent`` naming the client).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        concurrency: int = 8,
        timeout_s: float = 60.0,
        retry: RetryPolicy | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        use_env_proxy: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.limits = RateLimits(requests_per_minute, tokens_per_minute)
        self.use_env_proxy = use_env_proxy
        self.headers = dict(headers or {})
        self._api_key = SecretStr(api_key) if api_key else None

    @classmethod
    def with_retries(
        cls, *, max_retries: int, retry_base_delay_s: float, retry_max_delay_s: float, **settings: Any
    ) -> HTTPTransport:
        """A transport whose retry policy is given as the flat settings backends take from config."""
        retry = RetryPolicy(
            max_retries=max_retries, base_delay_s=retry_base_delay_s, max_delay_s=retry_max_delay_s
        )
        return cls(retry=retry, **settings)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, concurrency={self.concurrency}, "
            f"timeout_s={self.timeout_s}, retry={self.retry})"
        )

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[HTTPSession]:
        """One client session on this transport's connection pool, retries, limits and headers, for a
        caller that sends its own requests (``async with transport.session() as session``)."""
        secret = self._api_key.get_secret_value() if self._api_key else None
        headers = {**self.headers, **({"Authorization": f"Bearer {secret}"} if secret else {})}
        connector = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=self.concurrency)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        # Proxies from the environment only on request: looking them up costs a thread hop per request.
        async with aiohttp.ClientSession(
            headers=headers, timeout=timeout, connector=connector, trust_env=self.use_env_proxy
        ) as client:
            yield HTTPSession(client, self.base_url, self.retry, self.limits, self.timeout_s, secret)

    def run_batch(
        self,
        items: Sequence[T],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
        on_result: Callable[[int, R], None] | None = None,
    ) -> list[R]:
        """``call(session, item)`` for every item, concurrently, results in item order.

        An exception from one item becomes ``on_error(item, exception)``; it never stops the others.
        ``on_result(index, result)`` is called as each item finishes (on the event loop's thread), so a
        caller can keep every result the moment it exists; an exception it raises stops the batch.
        """
        if not items:
            return []
        results: list[R | None] = [None] * len(items)

        def keep(index: int, result: R) -> None:
            results[index] = result
            if on_result is not None:
                on_result(index, result)

        self.run_stream(items, call, on_error, keep)
        return results  # type: ignore[return-value]  # the stream reported every index

    def run_stream(
        self,
        items: Iterable[T],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
        on_result: Callable[[int, R], None],
        window: int | None = None,
    ) -> None:
        """``call(session, item)`` for every item of a lazy iterable, on one session, as a stream.

        At most ``window`` items (default: the concurrency) are taken from ``items`` ahead of their
        results; the next one is taken the moment one finishes, so a slow reply holds back nobody else
        and memory is bounded by the window. Items are taken on the event loop's thread, between
        awaits, as are the calls to ``on_result(position, result)``: the iterable and the callback never
        run at the same time. An exception from one call becomes ``on_error(item, exception)``; one
        raised by the iterable or by ``on_result`` cancels the calls in flight and stops the stream.
        """
        size = window or self.concurrency
        if size < 1:
            raise ValueError(f"a stream's window must be at least 1, got {size}")
        run_coroutine_sync(lambda: self._stream(iter(items), call, on_error, on_result, size))

    async def _stream(
        self,
        items: Iterator[T],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
        on_result: Callable[[int, R], None],
        window: int,
    ) -> None:
        async with self.session() as session:
            slots = asyncio.Semaphore(self.concurrency)

            async def one(index: int, item: T) -> None:
                async with slots:
                    try:
                        result = await call(session, item)
                    except Exception as err:  # one item's failure must not sink the stream
                        result = on_error(item, err)
                on_result(index, result)

            running: set[asyncio.Task[None]] = set()
            try:
                for index, item in enumerate(items):
                    running.add(asyncio.create_task(one(index, item)))
                    # Let the new call start (its payload is built off the loop) before taking the next.
                    await asyncio.sleep(0)
                    if len(running) >= window:
                        running = await _first_finished(running)
                while running:
                    running = await _first_finished(running)
            finally:
                for task in running:
                    task.cancel()
                await asyncio.gather(*running, return_exceptions=True)


async def _first_finished(running: set[asyncio.Task[None]]) -> set[asyncio.Task[None]]:
    """Wait until at least one task finishes, re-raise what it raised; the tasks still running."""
    done, pending = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        task.result()
    return pending


class HTTPBackend(Generic[T, R]):
    """The batch plumbing shared by backends that call an HTTP API.

    A subclass sets ``model`` and ``_transport`` and implements ``_call_one`` (one request on the shared
    session) and ``_failure`` (an exception turned into that request's failure result).
    """

    model: str
    _transport: HTTPTransport

    def __repr__(self) -> str:  # never the key: model and URL only
        return f"{type(self).__name__}(model={self.model!r}, base_url={self._transport.base_url!r})"

    def generate(self, requests: Sequence[T]) -> list[R]:
        """One result per request, in order; transport and parse problems become failures with a reason."""
        return self._transport.run_batch(requests, self._call_one, self._failure)

    def generate_streaming(self, requests: Sequence[T], on_result: Callable[[int, R], None]) -> list[R]:
        """As :meth:`generate`, calling ``on_result(index, result)`` the moment each request completes."""
        return self._transport.run_batch(requests, self._call_one, self._failure, on_result)

    @property
    def stream_window(self) -> int:
        """A stream keeps the transport's concurrency in flight."""
        return self._transport.concurrency

    def generate_stream(
        self, requests: Iterable[T], on_result: Callable[[int, R], None], window: int | None = None
    ) -> None:
        """Every request of a lazy stream on one session, ``window`` (default: the concurrency) ahead of
        the results at most; ``on_result(position, result)`` as each completes (see
        :meth:`HTTPTransport.run_stream`)."""
        self._transport.run_stream(requests, self._call_one, self._failure, on_result, window)

    async def _call_one(self, session: HTTPSession, request: T) -> R:
        raise NotImplementedError

    def _failure(self, request: T, err: Exception) -> R:
        raise NotImplementedError
