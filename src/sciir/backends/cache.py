"""SQLite response cache wrapped around any backend.

Keyed by a hash of the backend's identity (name, model, decoding settings) and the request's content
(prompt template version, prompt, image hashes, seed). Each answer is written the moment the backend
reports it, one transaction per response, so a process killed mid-stage loses at most the requests in
flight and a rerun pays only for what is missing. Failures are not cached: a rerun tries them again.
Requests stream (``stream``): a hit is answered at once without the backend, a miss goes on to the
backend's own stream, and a request identical to one still in flight is not sent again.

The wrappers' ``stats`` count cache hits, misses (requests sent to the backend) and failures, and add up
what the sent calls consumed (``http_requests``, ``prompt_tokens``, ``completion_tokens``,
``cost_usd``); cached answers cost nothing. :func:`stats_metrics` turns them into stage metrics.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import count
from pathlib import Path
from typing import Any, cast

from sciir.backends.base import (
    Backend,
    Deferred,
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    Model,
    Pending,
    Req,
    Res,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
    sha256_hex,
    streamed,
)
from sciir.images.payload import ImageLimits

logger = logging.getLogger(__name__)

CACHE_COUNTS = ("hits", "misses", "failures")
USAGE_SUMS = ("http_requests", "prompt_tokens", "completion_tokens", "cost_usd")
_SQLITE_MAX_PARAMS = 500  # SQLite caps bound parameters per statement
_BUSY_TIMEOUT_S = 60.0  # how long an opener or a writer waits for another one holding the file


class ResponseCache:
    """A key -> bytes store in one SQLite file, safe for concurrent writers (WAL).

    ``table`` names the store within the file (answers are in ``responses``; other facts kept beside
    them, such as ``sciir.evaluation.known_files``, use their own table). One connection per process, opened on
    first use and shared by its threads under a lock; a forked or unpickled copy opens its own.
    """

    def __init__(self, path: str | Path, table: str = "responses") -> None:
        if not table.isidentifier():
            raise ValueError(f"a cache table name must be an identifier, got {table!r}")
        self.path = Path(path)
        self.table = table
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        with self._lock, self._connection() as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def _connection(self) -> sqlite3.Connection:
        """This process's connection; callers hold ``_lock``."""
        if self._conn is None or self._pid != os.getpid():
            self._conn = _open_wal(self.path)
            self._pid = os.getpid()
            # Closed when the cache is dropped or the process exits, whatever holds the cache (a catalog's
            # reference cycles, which no collection may reach at exit: sciir.runs.process_exit): left open, a
            # connection leaves its write-ahead log beside the file.
            weakref.finalize(self, _close_in, self._conn, self._pid)
        return self._conn

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        """The stored values of those ``keys`` that are in the cache."""
        found: dict[str, bytes] = {}
        with self._lock:
            conn = self._connection()
            for start in range(0, len(keys), _SQLITE_MAX_PARAMS):
                chunk = list(keys[start : start + _SQLITE_MAX_PARAMS])
                marks = ",".join("?" * len(chunk))
                found.update(
                    conn.execute(f"SELECT key, value FROM {self.table} WHERE key IN ({marks})", chunk)
                )
        return found

    def put(self, key: str, value: bytes) -> None:
        """Store one value, committed before returning."""
        self.put_many({key: value})

    def put_many(self, items: Mapping[str, bytes]) -> None:
        """Store several values in one transaction."""
        if items:
            with self._lock, self._connection() as conn:
                conn.executemany(f"INSERT OR REPLACE INTO {self.table} VALUES (?, ?)", items.items())

    def __len__(self) -> int:
        with self._lock:
            count: int = self._connection().execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]
            return count

    def close(self) -> None:
        """Close this process's connection (it reopens on the next use)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "table": self.table}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self.table = state.get("table", "responses")
        self._lock = threading.Lock()
        self._conn = None
        self._pid = 0


def _close_in(conn: sqlite3.Connection, pid: int) -> None:
    """Close ``conn`` in the process that opened it (a forked child's copy is not its own to close)."""
    if os.getpid() == pid:
        conn.close()


def _open_wal(path: Path) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode, waiting while another opener holds the file.

    Switching a new file to WAL takes an exclusive lock for which SQLite does not call its busy handler,
    so several processes or threads opening one new cache at once get "database is locked" there,
    whatever the connection's timeout: the switch is retried, with a growing pause, until that timeout.
    """
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
    deadline = time.monotonic() + _BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                conn.close()
                raise sqlite3.OperationalError(f"cannot open the response cache {path}: {error}") from error
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
    # In WAL mode NORMAL commits without an fsync: a commit survives a killed process (only a power
    # cut can lose the latest ones), which keeps one transaction per response cheap.
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def request_key(backend: Backend, request: VLMRequest | GenerationRequest | Deferred[Any]) -> str:
    """The cache key of ``request`` sent to ``backend``."""
    payload = {"backend": backend.identity(), "request": request.content_key()}
    return sha256_hex(json.dumps(payload, sort_keys=True, default=str).encode())


def stats_metrics(stats: Mapping[str, float], prefix: str = "") -> dict[str, float]:
    """Stage metrics from a wrapper's ``stats``: ``{prefix}cache_hits`` ... and ``{prefix}prompt_tokens`` ..."""
    return {
        (f"{prefix}cache_{name}" if name in CACHE_COUNTS else f"{prefix}{name}"): float(value)
        for name, value in stats.items()
    }


class CachedModel(Model[Req, Res]):
    """A model whose answers are served from the cache when already paid for, the logic shared by
    :class:`CachedVLM` and :class:`CachedGenerator`.

    Requests stream to the inner model (:meth:`stream`), ``window`` ahead of their answers at most
    (default: the inner model's own window, e.g. an HTTP backend's concurrency); answers are written one
    by one as they arrive.
    """

    inner: Model[Req, Res]
    cache: ResponseCache
    window: int | None
    _encode: Callable[[Res], bytes]
    _decode: Callable[[bytes], Res]

    def __init__(
        self,
        inner: Model[Req, Res],
        cache: ResponseCache,
        window: int | None,
        encode: Callable[[Res], bytes],
        decode: Callable[[bytes], Res],
    ) -> None:
        super().__init__()
        self.inner, self.cache, self.window = inner, cache, window
        self._encode, self._decode = encode, decode
        self._stats_lock = threading.Lock()
        self.stats: dict[str, float] = dict.fromkeys(CACHE_COUNTS, 0) | dict.fromkeys(USAGE_SUMS, 0.0)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    @property
    def stream_window(self) -> int:
        return self.window or self.inner.stream_window

    @property
    def cache_file(self) -> Path:
        return self.cache.path

    def __getstate__(self) -> dict[str, Any]:
        # Kedro's MemoryDataset deep-copies what it holds; a lock cannot be copied, only made anew.
        return {name: value for name, value in self.__dict__.items() if name != "_stats_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._stats_lock = threading.Lock()

    def generate(self, requests: Sequence[Req]) -> list[Res]:
        """:meth:`stream` over a batch, its results returned in order."""
        return streamed(self, requests, self.window)

    def stream(
        self,
        requests: Iterable[Req | Deferred[Req] | Pending],
        on_result: Callable[[int, Res], None],
        window: int | None = None,
    ) -> None:
        """Serve what the cache has at once, stream the rest to the inner model, keep each answer as it
        comes. A request identical to one still in flight is not sent again: it gets that one's answer.
        A :class:`~sciir.backends.base.Deferred` request is made only when it must be sent; one that
        cannot be made fails with the reason (not cached).

        Only the requests in flight are remembered, so memory is bounded by the window.
        """
        in_flight: dict[str, list[int]] = {}  # key -> positions waiting on its answer
        sent_keys: dict[int, str] = {}  # position in the inner stream -> key, until answered
        positions = count()

        def misses() -> Iterator[Req | Pending]:
            indexes = count()
            for request in requests:
                if isinstance(request, Pending):  # the source waits: so does the inner stream
                    yield request
                    continue
                index, key = next(indexes), request_key(self.inner, request)
                if key in in_flight:  # a duplicate rides on the first one's answer
                    in_flight[key].append(index)
                    self._count("hits")
                elif (stored := self.cache.get_many([key]).get(key)) is not None:
                    self._count("hits")
                    on_result(index, self._decode(stored))
                else:
                    made = self._make(request) if isinstance(request, Deferred) else request
                    if isinstance(made, str):  # a deferred request that could not be made: why
                        self._count("failures")
                        on_result(index, self._unmade(cast(Deferred[Req], request), made))
                        continue
                    in_flight[key] = [index]
                    sent_keys[next(positions)] = key
                    yield made

        def arrived(position: int, result: Res) -> None:
            key = sent_keys.pop(position)
            self._record_sent(key, result)
            first, *riders = in_flight.pop(key)
            on_result(first, result)
            for index in riders:  # answered without being sent, as a cache hit is
                on_result(index, result.model_copy(update={"cached": True}))

        self.inner.stream(misses(), arrived, window or self.window)
        if sent_keys:
            name = type(self.inner).__name__
            raise RuntimeError(f"{name} left {len(sent_keys)} streamed requests unanswered")

    def _count(self, name: str, amount: float = 1) -> None:
        with self._stats_lock:
            self.stats[name] += amount

    def _record_sent(self, key: str, result: Res) -> None:
        """Keep one answer the inner model just gave: cached when it succeeded, counted either way."""
        if result.ok:
            self.cache.put(key, self._encode(result))
        with self._stats_lock:
            self.stats["misses"] += 1
            self.stats["failures"] += not result.ok
            for name in USAGE_SUMS:
                self.stats[name] += result.usage.get(name, 0.0)

    @staticmethod
    def _make(request: Deferred[Req]) -> Req | str:
        """The request a deferred one makes, or why it cannot be made."""
        try:
            return request.make()
        except (OSError, ValueError) as error:
            return str(error)

    def _unmade(self, request: Deferred[Req], reason: str) -> Res:
        """The failed result of a deferred request that could not be made (each wrapper says how)."""
        raise NotImplementedError


def _encode_vlm(result: VLMResult) -> bytes:
    return result.model_dump_json(exclude={"cached"}).encode()


def _decode_vlm(value: bytes) -> VLMResult:
    return VLMResult.model_validate_json(value).model_copy(update={"cached": True})


def _encode_generation(result: GenerationResult) -> bytes:
    """A length-prefixed JSON header (id, meta, usage) followed by the raw image bytes."""
    header = json.dumps({"sample_id": result.sample_id, "meta": result.meta, "usage": result.usage}).encode()
    return len(header).to_bytes(4, "big") + header + (result.image or b"")


def _decode_generation(value: bytes) -> GenerationResult:
    size = int.from_bytes(value[:4], "big")
    header = json.loads(value[4 : 4 + size])
    return GenerationResult(image=value[4 + size :], cached=True, **header)


class CachedVLM(CachedModel[VLMRequest, VLMResult], VisionLanguageModel):
    """A vision-language model whose answers are served from the cache (:class:`CachedModel`)."""

    def __init__(self, inner: VisionLanguageModel, cache: ResponseCache, window: int | None = None) -> None:
        super().__init__(inner, cache, window, _encode_vlm, _decode_vlm)

    @property
    def image_limits(self) -> ImageLimits:
        return cast(VisionLanguageModel, self.inner).image_limits

    def _unmade(self, request: Deferred[VLMRequest], reason: str) -> VLMResult:
        return VLMResult.failed(reason)


class CachedGenerator(CachedModel[GenerationRequest, GenerationResult], ImageGenerator):
    """An image generator whose images are served from the cache when already made (:class:`CachedModel`)."""

    def __init__(self, inner: ImageGenerator, cache: ResponseCache, window: int | None = None) -> None:
        super().__init__(inner, cache, window, _encode_generation, _decode_generation)
        self.role = inner.role  # a cached reference is still a reference

    def _unmade(self, request: Deferred[GenerationRequest], reason: str) -> GenerationResult:
        return GenerationResult(sample_id=str(request.key.get("sample_id")), failure=reason)
