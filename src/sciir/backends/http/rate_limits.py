"""Client-side rate limits for an HTTP transport: requests and tokens per minute, paced evenly, and the
cool-down every request waits out after a 429."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any


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
