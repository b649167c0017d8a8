"""Replicas of one served model (several vLLM servers of the same weights): which base URL each attempt
goes to.

A backend's ``base_url`` is one URL or a list of them. Each attempt goes to the replica with the fewest
requests in flight (the earliest listed on a tie), so a stream's window spreads evenly and a slow
replica gets less; an attempt that failed is retried on another replica when there is one, so one
server down costs a retry, not a failure. A replica whose last attempt failed (unreachable, timed out,
5xx, 429) rests: it is tried again only when every other one rests too, or once its rest is over
(1 s after one failure, doubling with each failure in a row, at most a minute).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

MAX_REST_S = 60.0


def replica_urls(base_url: str | Sequence[str]) -> tuple[str, ...]:
    """The base URLs, checked and without a trailing slash.

    Raises:
        ValueError: no URL, a URL listed twice, or one that is not http(s).
    """
    urls = (base_url,) if isinstance(base_url, str) else tuple(base_url)
    if not urls:
        raise ValueError("base_url lists no URL: give one URL or a list of the replicas' URLs")
    for url in urls:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {url!r}")
    stripped = tuple(url.rstrip("/") for url in urls)
    if len(set(stripped)) < len(stripped):
        raise ValueError(f"base_url lists a replica twice: {list(urls)}")
    return stripped


class Replicas:
    """The replicas of one session, the requests each has in flight and how each last answered (one
    event loop: no lock)."""

    def __init__(self, urls: Sequence[str]) -> None:
        self.urls = tuple(urls)
        self.in_flight = dict.fromkeys(self.urls, 0)
        self.sent = dict.fromkeys(self.urls, 0)
        self.failures_in_a_row = dict.fromkeys(self.urls, 0)
        self._rest_until = dict.fromkeys(self.urls, 0.0)

    def pick(self, avoid: str | None = None) -> str:
        """The replica with the fewest requests in flight among those not resting, other than ``avoid``
        when there is another."""
        choices = [url for url in self.urls if url != avoid] or list(self.urls)
        now = time.monotonic()
        return min(choices, key=lambda url: (self._rest_until[url] > now, self.in_flight[url]))

    @contextlib.contextmanager
    def attempt(self, avoid: str | None = None) -> Iterator[str]:
        """One attempt's replica, counted in flight until the attempt ends."""
        url = self.pick(avoid)
        self.in_flight[url] += 1
        self.sent[url] += 1
        try:
            yield url
        finally:
            self.in_flight[url] -= 1

    def failed(self, url: str) -> None:
        """An attempt on ``url`` failed in a way worth trying elsewhere: it rests."""
        self.failures_in_a_row[url] += 1
        rest = min(MAX_REST_S, 2.0 ** (self.failures_in_a_row[url] - 1))
        self._rest_until[url] = time.monotonic() + rest

    def answered(self, url: str) -> None:
        self.failures_in_a_row[url] = 0
        self._rest_until[url] = 0.0
