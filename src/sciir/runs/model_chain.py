"""One stream over a whole stage through two models, the second fed by the first's answers (a planner's
plan drawn by a generator; a generator's candidates scored by a selector).

:func:`stream_through_two` streams every job's request through ``first`` and, as each answer arrives, the
requests it makes possible through ``second``, both at once, each through its own bounded window: a job's
second step is sent as soon as its first answer arrives, while other jobs' first requests fill the first
window. There is no barrier between the two models, nor between windows.

``first`` streams on a worker thread of its own, fed from a queue; everything else (reading ``jobs``,
making requests, the callbacks) runs on the calling thread, which streams ``second``, so callers need no
locks. Memory is bounded by the windows: new jobs are taken only while ``first`` has room, and ``first``'s
answers wait for ``second`` only up to one window.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import count, islice
from typing import Any, Generic, TypeVar

from sciir.backends.base import PENDING, Model

Job = TypeVar("Job")
Step = TypeVar("Step")

WAIT_S = 0.05  # how long the coordinator sleeps when nothing is in flight on its side and nothing arrived


class _Chain(Generic[Job, Step]):
    """The state shared by the two streams; guarded by ``lock`` where the worker thread touches it."""

    def __init__(
        self,
        jobs: Iterable[Job],
        first_request: Callable[[Job], Any],
        first_answered: Callable[[Job, Any], Iterable[Step]],
        second_request: Callable[[Step], Any],
        second_answered: Callable[[Step, Any], None],
        windows: tuple[int, int],
    ) -> None:
        self.jobs, (self.first_window, self.second_window) = iter(jobs), windows
        self.first_request, self.first_answered = first_request, first_answered
        self.second_request, self.second_answered = second_request, second_answered
        self.lock = threading.Condition()
        self.to_first: deque[tuple[Job, Any]] = deque()  # requests made, not yet taken by the first stream
        self.first_sent: dict[int, Job] = {}  # the first stream's position -> its job, until answered
        self.inbox: deque[tuple[Job, Any]] = deque()  # first answers not yet handled
        self.ready: deque[Step] = deque()
        self.second_sent: dict[int, Step] = {}
        self.jobs_left = True
        self.first_error: BaseException | None = None
        self.first_ended = False
        self.stop = False

    # -- the worker thread: the first model's stream
    def first_source(self) -> Iterator[Any]:
        positions = count()
        while True:
            with self.lock:
                while not (self.to_first or self.stop or not self.jobs_left or self.first_sent):
                    self.lock.wait()
                if self.stop or (not self.to_first and not self.jobs_left and not self.first_sent):
                    return
                if not self.to_first:
                    item: Any = PENDING  # answers in flight: let the stream take them, then ask again
                else:
                    job, request = self.to_first.popleft()
                    self.first_sent[next(positions)] = job
                    item = request
            yield item

    def first_arrived(self, position: int, result: Any) -> None:
        with self.lock:
            self.inbox.append((self.first_sent.pop(position), result))
            self.lock.notify_all()

    def run_first(self, first: Model[Any, Any]) -> None:
        try:
            first.stream(self.first_source(), self.first_arrived, self.first_window)
        except BaseException as error:  # handed to the calling thread, which raises it
            self.first_error = error
        finally:
            with self.lock:
                self.first_ended = True
                self.lock.notify_all()

    # -- the calling thread: jobs in, first answers handled, the second model's stream
    def _feed_first(self) -> None:
        """Take new jobs while the first window has room, their requests made here, on this thread, and
        handed over together (so a model answering a window at a time gets whole windows)."""
        with self.lock:
            room = self.first_window - len(self.to_first) - len(self.first_sent)
        if not self.jobs_left or room <= 0 or self.stop:
            return
        batch: list[tuple[Job, Any]] = []
        for job in islice(self.jobs, room):
            batch.append((job, self.first_request(job)))
        with self.lock:
            self.to_first.extend(batch)
            self.jobs_left = len(batch) == room
            self.lock.notify_all()

    def _handle_inbox(self) -> None:
        with self.lock:
            arrived = list(self.inbox)
            self.inbox.clear()
        for job, result in arrived:
            self.ready.extend(self.first_answered(job, result))

    def _first_done(self) -> bool:
        with self.lock:
            return self.first_ended or not (self.jobs_left or self.to_first or self.first_sent or self.inbox)

    def second_source(self) -> Iterator[Any]:
        positions = count()
        while True:
            if self.first_error is not None:
                raise self.first_error
            if (
                len(self.ready) < self.second_window
            ):  # steps waiting for the second model stay within a window
                self._feed_first()
            self._handle_inbox()
            if self.ready:
                step = self.ready.popleft()
                self.second_sent[next(positions)] = step
                yield self.second_request(step)
            elif self._first_done() and not self.inbox:
                if self.first_error is not None:
                    raise self.first_error
                return
            elif self.second_sent:
                yield PENDING
            else:
                with self.lock:
                    if not self.inbox and not self.first_ended:
                        self.lock.wait(WAIT_S)

    def second_arrived(self, position: int, result: Any) -> None:
        self.second_answered(self.second_sent.pop(position), result)


def stream_through_two(
    first: Model[Any, Any],
    second: Model[Any, Any],
    jobs: Iterable[Job],
    first_request: Callable[[Job], Any],
    first_answered: Callable[[Job, Any], Iterable[Step]],
    second_request: Callable[[Step], Any],
    second_answered: Callable[[Step, Any], None],
    window: int | None = None,
) -> None:
    """``first_answered(job, result)`` for every job as its ``first`` answer arrives, and
    ``second_answered(step, result)`` for every step it returns, as that step's ``second`` answer arrives.
    ``window`` bounds each model's requests in flight (default: each model's own). An exception from a
    callback or from either stream stops both and is raised here."""
    chain: _Chain[Job, Step] = _Chain(
        jobs,
        first_request,
        first_answered,
        second_request,
        second_answered,
        (window or first.stream_window, window or second.stream_window),
    )
    worker = threading.Thread(target=chain.run_first, args=(first,), name="sciir-first-model", daemon=True)
    worker.start()
    try:
        second.stream(chain.second_source(), chain.second_arrived, chain.second_window)
    finally:
        with chain.lock:
            chain.stop = True
            chain.lock.notify_all()
        worker.join()
    if chain.first_error is not None:
        raise chain.first_error
    if chain.second_sent or chain.inbox:
        raise RuntimeError(f"{type(second).__name__} left requests of the chained stream unanswered")
