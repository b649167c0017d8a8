"""Transport base for HTTP model backends: one shared async session, bounded concurrency, retries, limits.

A backend hands :meth:`HTTPTransport.run_batch` its items (or :meth:`HTTPTransport.run_stream` a lazy
iterable of them) and one coroutine per item. The transport owns the event loop, the connection pool, the
concurrency bound, the retry policy (:mod:`sciir.backends.http.retries`) and the optional rate limits
(:mod:`sciir.backends.http.rate_limits`), so a backend is only payload building and reply parsing (the shape
of lm-evaluation-harness's ``TemplateAPI``): :class:`HTTPBackend` builds the transport from a backend's
settings and answers ``generate`` and ``stream`` with it. A client that drives its own requests (a paged
download) opens :meth:`HTTPTransport.session` (:mod:`sciir.backends.http.session`) and sends GET or POST
requests on it with the same retries and limits.

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
import itertools
import json
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
from types import MappingProxyType
from typing import Any, ClassVar, TypeVar

import aiohttp
from pydantic import SecretStr

from sciir.backends.base import Model, Pending, Req, Res, no_request_in_flight
from sciir.backends.http.rate_limits import RateLimits
from sciir.backends.http.replicas import Replicas, replica_urls
from sciir.backends.http.retries import RetryPolicy
from sciir.backends.http.session import HTTPSession

T = TypeVar("T")
R = TypeVar("R")

# How long a waiting source (PENDING) is left before it is asked again when no call has finished.
PENDING_POLL_S = 0.02

# What an HTTP backend's configuration may set about its transport, with the defaults. None of it changes
# an answer, so none of it is part of a backend's identity (and the API key never is).
TRANSPORT_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "api_key": None,
        "concurrency": 8,
        "timeout_s": 60.0,
        "max_retries": 4,
        "retry_base_delay_s": 0.5,
        "retry_max_delay_s": 30.0,
        "requests_per_minute": None,
        "tokens_per_minute": None,
        "use_env_proxy": False,
    }
)


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


class HTTPTransport:
    """Async HTTP with one shared session per batch, a concurrency bound, retries and optional limits.

    ``use_env_proxy`` routes requests through the proxy named by ``HTTPS_PROXY``/``HTTP_PROXY`` (and
    ``NO_PROXY``), e.g. for a hosted API behind a corporate proxy; a served judge is usually reached
    directly. ``headers`` are sent with every request (e.g. a ``User-Agent`` naming the client).
    """

    def __init__(
        self,
        *,
        base_url: str | Sequence[str],
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
        self.replica_urls = replica_urls(base_url)
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

    @property
    def shown_url(self) -> str:
        """The base URL, or the replicas' joined, for messages."""
        return ", ".join(self.replica_urls)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.shown_url!r}, concurrency={self.concurrency}, "
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
            replicas = Replicas(self.replica_urls)
            yield HTTPSession(client, replicas, self.retry, self.limits, self.timeout_s, secret)

    def run_batch(
        self,
        items: Sequence[T],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
    ) -> list[R]:
        """``call(session, item)`` for every item, concurrently (:meth:`run_stream`), results in item order.

        An exception from one item becomes ``on_error(item, exception)``; it never stops the others.
        """
        if not items:
            return []
        results: list[R | None] = [None] * len(items)
        self.run_stream(items, call, on_error, results.__setitem__)
        return results  # type: ignore[return-value]  # the stream reported every index

    def run_stream(
        self,
        items: Iterable[T | Pending],
        call: Callable[[HTTPSession, T], Awaitable[R]],
        on_error: Callable[[T, Exception], R],
        on_result: Callable[[int, R], None],
        window: int | None = None,
    ) -> None:
        """``call(session, item)`` for every item of a lazy iterable, on one session, as a stream.

        At most ``window`` items (default: the concurrency) are taken from ``items`` ahead of their
        results; the next one is taken the moment one finishes, so a slow reply holds back nobody else
        and memory is bounded by the window. A :data:`~sciir.backends.base.PENDING` from ``items`` (its
        next item needs an answer in flight) waits for the next call to finish, or for ``PENDING_POLL_S``,
        before asking again. Items are taken on the event loop's thread, between awaits, as are the calls to ``on_result(position, result)``: the iterable and the callback never
        run at the same time. An exception from one call becomes ``on_error(item, exception)``; one
        raised by the iterable or by ``on_result`` cancels the calls in flight and stops the stream.
        """
        size = window or self.concurrency
        if size < 1:
            raise ValueError(f"a stream's window must be at least 1, got {size}")
        run_coroutine_sync(lambda: self._stream(iter(items), call, on_error, on_result, size))

    async def _stream(
        self,
        items: Iterator[T | Pending],
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
            positions = itertools.count()
            try:
                for item in items:
                    if isinstance(item, Pending):  # the source waits for an answer in flight
                        if not running:
                            raise no_request_in_flight()
                        # Or for a moment: a source fed from elsewhere (another model's answers) may
                        # have a request before any of these calls ends.
                        running = await _first_finished(running, PENDING_POLL_S)
                        continue
                    running.add(asyncio.create_task(one(next(positions), item)))
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


async def _first_finished(
    running: set[asyncio.Task[None]], timeout: float | None = None
) -> set[asyncio.Task[None]]:
    """Wait until at least one task finishes (or ``timeout`` seconds pass), re-raise what a finished task
    raised; the tasks still running."""
    done, pending = await asyncio.wait(running, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        task.result()
    return pending


class HTTPBackend(Model[Req, Res]):
    """The transport base of backends that call an HTTP API: it builds the transport from the backend's
    settings and answers ``generate`` and ``stream`` through it.

    A subclass declares ``transport_defaults`` (the transport settings it takes, see
    :data:`TRANSPORT_DEFAULTS`) and ``reserved_fields`` (payload fields it sets itself), passes its
    settings through :meth:`split_settings` to ``__init__``, and implements ``_call_one`` (one request on
    the shared session) and ``_failure`` (an exception turned into that request's failure result).
    """

    transport_defaults: ClassVar[Mapping[str, Any]] = TRANSPORT_DEFAULTS
    reserved_fields: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self,
        *,
        base_url: str | Sequence[str],
        model: str,
        transport: Mapping[str, Any],
        extra: dict[str, Any],
        **answering: Any,
    ) -> None:
        """``answering`` and ``extra`` (payload fields sent with every request) change the answers, so they
        form the identity with ``base_url`` and ``model``; ``transport`` does not."""
        _check_extra_fields(extra, self.reserved_fields)
        urls = replica_urls(base_url)
        # Replicas answer alike, so their order does not change the identity (nor the cached answers).
        identity_url: str | list[str] = urls[0] if len(urls) == 1 else sorted(urls)
        super().__init__(base_url=identity_url, model=model, **answering, **extra)
        self.model = model
        self._extra = extra
        self._transport = HTTPTransport.with_retries(base_url=base_url, **transport)

    @classmethod
    def split_settings(cls, settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """``settings`` split into the transport's (defaults filled in) and the rest, extra payload fields."""
        transport = {name: settings.get(name, default) for name, default in cls.transport_defaults.items()}
        extra = {name: value for name, value in settings.items() if name not in cls.transport_defaults}
        return transport, extra

    def __repr__(self) -> str:  # never the key: model and URL only
        return f"{type(self).__name__}(model={self.model!r}, base_url={self._transport.shown_url!r})"

    def generate(self, requests: Sequence[Req]) -> list[Res]:
        """One result per request, in order; transport and parse problems become failures with a reason."""
        return self._transport.run_batch(requests, self._call_one, self._failure)

    @property
    def stream_window(self) -> int:
        """A stream keeps the transport's concurrency in flight."""
        return self._transport.concurrency

    def stream(
        self,
        requests: Iterable[Req | Pending],
        on_result: Callable[[int, Res], None],
        window: int | None = None,
    ) -> None:
        """Every request of a lazy stream on one session, ``window`` (default: the concurrency) ahead of
        the results at most; ``on_result(position, result)`` as each completes (see
        :meth:`HTTPTransport.run_stream`)."""
        self._transport.run_stream(requests, self._call_one, self._failure, on_result, window)

    async def _call_one(self, session: HTTPSession, request: Req) -> Res:
        raise NotImplementedError

    def _failure(self, request: Req, err: Exception) -> Res:
        raise NotImplementedError


def _check_extra_fields(extra: Mapping[str, Any], reserved: frozenset[str]) -> None:
    """Reject extra payload fields that the backend sets itself (they would silently fight it) or that
    are not JSON."""
    clashing = sorted(reserved & extra.keys())
    if clashing:
        raise ValueError(f"extra settings {clashing} are set by the backend itself and cannot be overridden")
    try:
        json.dumps(extra)
    except TypeError as err:
        raise ValueError(f"extra settings must be JSON-serialisable payload fields: {err}") from None
