"""The faults a loopback OpenAI-compatible server injects, and the plan that says when: a script for the
first requests, seeded probabilities after it, and the latency of every reply."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import cast


class ServerFault(StrEnum):
    """A way for the server to misbehave on one chat-completions request."""

    RATE_LIMITED = "429"  # with a Retry-After header
    SERVER_ERROR = "500"
    UNAVAILABLE = "503"
    BAD_REQUEST = "400"
    UNAUTHORIZED = "401"  # echoes the presented API key, as careless servers do
    TIMEOUT = "timeout"  # hang past the client's timeout, then close without a reply
    DROP = "drop"  # close the connection without a reply
    MALFORMED_JSON = "malformed_json"  # HTTP 200 whose body is not JSON
    SCHEMA_INVALID = "schema_invalid"  # a well-formed reply whose content lacks the expected keys
    TRUNCATED = "truncated"  # HTTP 200 whose body stops half way, then the connection closes


def as_fault(value: ServerFault | str) -> ServerFault:
    """``value`` as a :class:`ServerFault`, with the known kinds listed when it is not one."""
    try:
        return ServerFault(value)
    except ValueError:
        known = ", ".join(fault.value for fault in ServerFault)
        raise ValueError(f"unknown fault {value!r}; known faults: {known}") from None


# The standard normal's 95th percentile: a log-normal's p95 is median * exp(sigma * P95_Z).
P95_Z = 1.6448536269514722


def lognormal_sigma(median: float, p95: float) -> float:
    """The sigma of the log-normal spread with this median and 95th percentile."""
    return math.log(p95 / median) / P95_Z


def lognormal_mean(median: float, p95: float) -> float:
    """The mean latency of that spread: what a window's bound divides by."""
    return median * math.exp(lognormal_sigma(median, p95) ** 2 / 2)


@dataclass(frozen=True)
class FaultPlan:
    """Which faults to inject, and how slowly to answer.

    ``script[i]`` is the fault for the i-th chat-completions request (None: answer normally); requests
    past the script draw a fault from ``probabilities`` (seeded, so a run is repeatable in arrival
    order). ``latency_s`` is a fixed delay or a ``(low, high)`` range drawn per request;
    ``latency_lognormal`` = ``(median, p95)`` draws it from a log-normal spread instead, as a served
    model's latencies are (most replies near the median, a long tail of slow ones).
    """

    script: Sequence[ServerFault | str | None] = ()
    probabilities: Mapping[ServerFault | str, float] = field(default_factory=dict)
    latency_s: float | tuple[float, float] = 0.0
    latency_lognormal: tuple[float, float] | None = None
    retry_after_s: float = 1.0
    hang_s: float = 30.0
    seed: int = 0

    def __post_init__(self) -> None:
        # Normalise once so drawing a fault per request is a plain lookup.
        object.__setattr__(self, "script", tuple(None if f is None else as_fault(f) for f in self.script))
        probabilities = {as_fault(f): float(p) for f, p in self.probabilities.items()}
        if any(not 0.0 <= p <= 1.0 for p in probabilities.values()) or sum(probabilities.values()) > 1.0:
            raise ValueError(
                f"fault probabilities must lie in [0, 1] and sum to at most 1, got {probabilities}"
            )
        object.__setattr__(self, "probabilities", probabilities)
        low, high = self.latency_s if isinstance(self.latency_s, tuple) else (self.latency_s, self.latency_s)
        if not 0.0 <= low <= high:
            raise ValueError(
                f"latency_s must be a non-negative delay or a (low, high) range, got {self.latency_s}"
            )
        object.__setattr__(self, "latency_s", (float(low), float(high)))
        if (
            self.latency_lognormal is not None
            and not 0.0 < self.latency_lognormal[0] < self.latency_lognormal[1]
        ):
            raise ValueError(
                f"latency_lognormal is (median, p95) with 0 < median < p95, got {self.latency_lognormal}"
            )

    def fault_for(self, index: int, rng: random.Random) -> ServerFault | None:
        """The fault to inject into the ``index``-th chat-completions request, if any."""
        # __post_init__ made every fault a ServerFault and latency_s a (low, high) range.
        if index < len(self.script):
            return cast("ServerFault | None", self.script[index])
        draw = rng.random()
        for fault, probability in self.probabilities.items():
            if draw < probability:
                return cast(ServerFault, fault)
            draw -= probability
        return None

    def latency_for(self, rng: random.Random) -> float:
        """Seconds to wait before answering one request."""
        if self.latency_lognormal is not None:
            median, p95 = self.latency_lognormal
            return rng.lognormvariate(math.log(median), lognormal_sigma(median, p95))
        low, high = cast("tuple[float, float]", self.latency_s)
        return low if low == high else rng.uniform(low, high)
