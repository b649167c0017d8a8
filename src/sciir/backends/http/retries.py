"""When and how long an HTTP client waits before repeating a failed attempt: the retry policy and the
server's own Retry-After."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})


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
