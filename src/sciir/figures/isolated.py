"""Run a function over untrusted items in worker processes, each item under a time and a memory limit.

A worker takes one item at a time. One that takes longer than the limit is killed; one that dies (a
decoder's crash, the kernel's out-of-memory killer) is noticed by its closed pipe. Either way a new
worker takes its place, only that item fails, with the reason as a :class:`Failed`, and the run goes on.
An exception the function raises fails its item too. Workers are spawned (no state inherited from the
parent) and limited to ``memory_mb`` of address space, so a huge allocation raises ``MemoryError``
there instead of exhausting the machine.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Generic, TypeVar, cast

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Failed:
    """Why an item has no result."""

    reason: str


@dataclass(frozen=True)
class WorkerLimits:
    """How many workers, and the limits each item runs under."""

    workers: int = 2
    timeout_s: float = 120.0
    memory_mb: int | None = 4096

    def __post_init__(self) -> None:
        if self.workers < 1 or self.timeout_s <= 0:
            raise ValueError(f"need at least one worker and a positive time limit, got {self}")


def _limit_memory(memory_mb: int | None) -> None:
    if memory_mb is None:
        return
    try:
        import resource
    except ImportError:  # not on this platform (Windows): the time limit still holds
        return
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _serve(connection: Connection, function: Callable[[Any], Any], memory_mb: int | None) -> None:
    """A worker's loop: (index, item) in, (index, ok, result or reason) out, until told to stop."""
    _limit_memory(memory_mb)
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        index, item = message
        try:
            reply = (index, True, function(item))
        except MemoryError:
            reply = (index, False, f"it ran out of memory (the worker limit is {memory_mb} MB)")
        except Exception as error:  # the item's failure, reported; the worker goes on
            reply = (index, False, f"processing it failed: {type(error).__name__}: {error}")
        connection.send(reply)


def _exit_description(exitcode: int | None) -> str:
    if exitcode is None:
        return "it stopped answering"
    if exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (likely the out-of-memory killer)" if name == "SIGKILL" else ""
        return f"it was killed by {name}{hint}"
    return f"it exited with code {exitcode}"


class _Worker:
    def __init__(self, context: Any, function: Callable[[Any], Any], memory_mb: int | None) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, function, memory_mb), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None
        self.deadline = 0.0

    def give(self, index: int, item: Any, timeout_s: float) -> None:
        self.index, self.deadline = index, time.monotonic() + timeout_s
        self.connection.send((index, item))

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.connection.send(None)
            except OSError:
                pass
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


class IsolatedPool(Generic[Item, Result]):
    """Worker processes running ``function`` (a module-level function: it is pickled by name)."""

    def __init__(self, function: Callable[[Item], Result], limits: WorkerLimits) -> None:
        self._function = function
        self._limits = limits
        self._context = multiprocessing.get_context("spawn")
        self._workers: list[_Worker] = []

    def __enter__(self) -> IsolatedPool[Item, Result]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def _spawn(self) -> _Worker:
        worker = _Worker(self._context, self._function, self._limits.memory_mb)
        self._workers.append(worker)
        return worker

    def _replace(self, worker: _Worker) -> _Worker:
        worker.stop(kill=True)
        self._workers.remove(worker)
        return self._spawn()

    def run(self, items: Sequence[Item]) -> Iterator[tuple[int, Result | Failed]]:
        """(index, result or Failed) for every item, in the order they finish."""
        pending = deque(enumerate(items))
        while len(self._workers) < min(self._limits.workers, len(items)):
            self._spawn()
        idle = [worker for worker in self._workers if worker.index is None]
        busy: list[_Worker] = []
        while pending or busy:
            while pending and idle:
                worker = idle.pop()
                index, item = pending.popleft()
                worker.give(index, item, self._limits.timeout_s)
                busy.append(worker)
            timeout = max(0.0, min(worker.deadline for worker in busy) - time.monotonic())
            ready = wait([worker.connection for worker in busy] + [w.process.sentinel for w in busy], timeout)
            for worker in list(busy):
                outcome = self._outcome(worker, ready)
                if outcome is None:
                    continue
                busy.remove(worker)
                index, worker.index = cast(int, worker.index), None  # a busy worker holds an item
                yield index, outcome[1]
                idle.append(self._replace(worker) if outcome[0] else worker)

    def _outcome(self, worker: _Worker, ready: list[Any]) -> tuple[bool, Any] | None:
        """(replace the worker?, result or Failed) once the worker's item is done; None while it runs."""
        if worker.connection in ready or worker.process.sentinel in ready:
            if worker.connection.poll():
                try:
                    _, ok, value = worker.connection.recv()
                except (EOFError, OSError):
                    pass
                else:
                    return False, value if ok else Failed(value)
            worker.process.join(1)
            return True, Failed(
                f"the worker process died on it: {_exit_description(worker.process.exitcode)}"
            )
        if time.monotonic() >= worker.deadline:
            return True, Failed(f"it took longer than the limit of {self._limits.timeout_s:g} s")
        return None


def run_isolated(
    function: Callable[[Item], Result], items: Sequence[Item], limits: WorkerLimits
) -> list[Result | Failed]:
    """Every item's result or Failed, in the items' order."""
    results: list[Result | Failed | None] = [None] * len(items)
    if not items:
        return []
    with IsolatedPool(function, limits) as pool:
        for index, result in pool.run(items):
            results[index] = result
    return cast("list[Result | Failed]", results)  # the pool yields every index
