"""SQLite response cache wrapped around any backend.

Keyed by a hash of the backend's identity (name, model, decoding settings) and the
request's content (prompt template version, prompt, image hashes, seed). Results are
written as each chunk of requests returns, so a crashed stage resumes where it stopped
and a rerun costs nothing. Failures are not cached: a rerun tries them again.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from sciir.backends.base import (
    Backend,
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
    sha256_hex,
)

logger = logging.getLogger(__name__)

Req = TypeVar("Req", VLMRequest, GenerationRequest)
Res = TypeVar("Res", VLMResult, GenerationResult)


class ResponseCache:
    """A key -> bytes store in one SQLite file, safe for concurrent writers (WAL)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value BLOB NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def get_many(self, keys: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        with self._connect() as conn:
            for start in range(0, len(keys), 500):  # SQLite caps bound parameters per statement
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(f"SELECT key, value FROM responses WHERE key IN ({marks})", chunk)
                found.update(dict(rows))
        return found

    def put_many(self, items: dict[str, bytes]) -> None:
        if items:
            with self._connect() as conn:
                conn.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?)", items.items())

    def __len__(self) -> int:
        with self._connect() as conn:
            return conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def request_key(backend: Backend, request: VLMRequest | GenerationRequest) -> str:
    payload = {"backend": backend.identity(), "request": request.content_key()}
    return sha256_hex(json.dumps(payload, sort_keys=True, default=str).encode())


class _CacheStats:
    def __init__(self) -> None:
        self.stats = {"hits": 0, "misses": 0, "failures": 0}

    def _run_cached(
        self,
        inner: Backend,
        cache: ResponseCache,
        requests: Sequence[Req],
        call: Callable[[list[Req]], list[Res]],
        encode: Callable[[Res], bytes],
        decode: Callable[[bytes], Res],
        chunk_size: int,
    ) -> list[Res]:
        keys = [request_key(inner, r) for r in requests]
        stored = cache.get_many(keys)
        results: list[Res | None] = [decode(stored[k]) if k in stored else None for k in keys]
        self.stats["hits"] += len(keys) - sum(r is None for r in results)
        missing = [i for i, r in enumerate(results) if r is None]
        for start in range(0, len(missing), chunk_size):
            idx = missing[start : start + chunk_size]
            answers = call([requests[i] for i in idx])
            if len(answers) != len(idx):
                raise RuntimeError(f"{type(inner).__name__} returned {len(answers)} results for {len(idx)} requests")
            for i, answer in zip(idx, answers, strict=True):
                results[i] = answer
            cache.put_many({keys[i]: encode(a) for i, a in zip(idx, answers, strict=True) if a.ok})
            self.stats["misses"] += len(idx)
            self.stats["failures"] += sum(not a.ok for a in answers)
        return [r for r in results if r is not None]


def _encode_vlm(result: VLMResult) -> bytes:
    return result.model_dump_json(exclude={"cached"}).encode()


def _decode_vlm(value: bytes) -> VLMResult:
    return VLMResult.model_validate_json(value).model_copy(update={"cached": True})


def _encode_generation(result: GenerationResult) -> bytes:
    header = json.dumps({"sample_id": result.sample_id, "meta": result.meta}).encode()
    return len(header).to_bytes(4, "big") + header + (result.image or b"")


def _decode_generation(value: bytes) -> GenerationResult:
    size = int.from_bytes(value[:4], "big")
    header = json.loads(value[4 : 4 + size])
    return GenerationResult(image=value[4 + size :], cached=True, **header)


class CachedVLM(_CacheStats, VisionLanguageModel):
    """A vision-language model whose answers are served from the cache when already paid for."""

    def __init__(self, inner: VisionLanguageModel, cache: ResponseCache, chunk_size: int = 64) -> None:
        VisionLanguageModel.__init__(self)
        _CacheStats.__init__(self)
        self.inner, self.cache, self.chunk_size = inner, cache, chunk_size

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return self._run_cached(
            self.inner, self.cache, requests, self.inner.generate, _encode_vlm, _decode_vlm, self.chunk_size
        )


class CachedGenerator(_CacheStats, ImageGenerator):
    """An image generator whose images are served from the cache when already made."""

    def __init__(self, inner: ImageGenerator, cache: ResponseCache, chunk_size: int = 8) -> None:
        ImageGenerator.__init__(self)
        _CacheStats.__init__(self)
        self.inner, self.cache, self.chunk_size = inner, cache, chunk_size

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return self._run_cached(
            self.inner,
            self.cache,
            requests,
            self.inner.generate,
            _encode_generation,
            _decode_generation,
            self.chunk_size,
        )
