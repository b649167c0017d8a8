"""Progress of a long model-calling node: a bar a person can read, and one log line at the end.

:class:`Progress` counts requests done out of a total, the failed ones and those answered from the
response cache. When stderr is a terminal, tqdm draws them with the rate and the time left; anywhere
else (a log file, CI, a pipe) nothing is drawn. When the node's work ends, the same figures are
logged once at INFO: done / total, rate, failures, cache hits and seconds.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, TextIO

logger = logging.getLogger(__name__)


class Outcome(Protocol):
    """What a progress count reads of a result (:class:`~sciir.backends.base.VLMResult` and
    :class:`~sciir.backends.base.GenerationResult` both fit)."""

    @property
    def ok(self) -> bool: ...

    @property
    def cached(self) -> bool: ...


@dataclass(frozen=True)
class Figures:
    """The counts of a finished (or stopped) piece of work and how long it took."""

    name: str
    done: int
    total: int
    failures: int
    cache_hits: int
    seconds: float
    unit: str

    @property
    def rate(self) -> float:
        """Units done per second (0 before any time has passed)."""
        return self.done / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (
            f"{self.name}: {self.done}/{self.total} {self.unit}s in {self.seconds:.1f} s "
            f"({self.rate:.1f} {self.unit}s/s), {self.failures} failed, {self.cache_hits} from the cache"
        )


def _bar(name: str, total: int, unit: str, stream: TextIO) -> Any | None:
    """A tqdm bar on ``stream`` when it is a terminal; None (nothing drawn) otherwise."""
    if not stream.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=name, unit=unit, file=stream, dynamic_ncols=True, smoothing=0.1)


class Progress:
    """Counts of one node's model calls, drawn on a terminal and logged once when closed.

    Use it as a context manager; call :meth:`add` with each result as it arrives and :meth:`skip` for
    units that could not even be sent (they count as failures).
    """

    def __init__(self, name: str, total: int, unit: str = "request", stream: TextIO | None = None) -> None:
        self.name, self.total, self.unit = name, total, unit
        self.done = self.failures = self.cache_hits = 0
        self._started = time.monotonic()
        self._bar = _bar(name, total, unit, stream or sys.stderr)
        self._closed = False

    def add(self, result: Outcome) -> None:
        """Count one result: done, and failed or answered from the cache when it was."""
        self._count(1, failed=not result.ok, cached=result.cached)

    def skip(self, units: int) -> None:
        """Count ``units`` that were never sent (e.g. their image could not be read) as failed."""
        if units:
            self._count(units, failed=units, cached=0)

    def advance(self, units: int, cached: int = 0) -> None:
        """Count ``units`` done at once (e.g. a shard of figures), ``cached`` of them kept from an earlier
        run."""
        self._count(units, failed=0, cached=cached)

    def not_needed(self, units: int) -> None:
        """Take ``units`` off the total: work the node found it need not do (e.g. later tasks of a sample
        that failed)."""
        if units:
            self.total -= units
            if self._bar is not None:
                self._bar.total = self.total
                self._bar.refresh()

    def _count(self, units: int, failed: int, cached: int) -> None:
        self.done += units
        self.failures += failed
        self.cache_hits += cached
        if self._bar is not None:
            self._bar.set_postfix_str(f"failed={self.failures} cached={self.cache_hits}", refresh=False)
            self._bar.update(units)

    def figures(self) -> Figures:
        seconds = time.monotonic() - self._started
        return Figures(self.name, self.done, self.total, self.failures, self.cache_hits, seconds, self.unit)

    def close(self) -> Figures:
        """Stop drawing and log the figures (once); returns them."""
        figures = self.figures()
        if not self._closed:
            self._closed = True
            if self._bar is not None:
                self._bar.close()
            logger.info(figures.line())
        return figures

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
