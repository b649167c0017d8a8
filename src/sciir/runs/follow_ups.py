"""One stream over a whole stage whose requests depend on earlier answers (annotate's tasks: the abstract
prompt needs the reasoning, the checklist the abstract prompt's turn).

:func:`stream_with_follow_ups` sends every job's request through ``model.stream`` in one bounded window:
a job's follow-ups (what its answer makes possible) are sent as soon as that answer arrives, ahead of
new jobs, while other jobs' requests fill the window; when nothing is ready and answers are awaited, the
source yields :data:`~sciir.backends.base.PENDING` and the stream waits for the next one. There is no
barrier between batches or between task stages, so one slow reply holds back only its own job's
follow-ups. Jobs in progress are bounded by the window (follow-ups go first, so new jobs start only
when the ones in flight leave a slot free).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from itertools import count
from typing import Any, TypeVar

from sciir.backends.base import PENDING, Model

Job = TypeVar("Job")


def stream_with_follow_ups(
    model: Model[Any, Any],
    jobs: Iterable[Job],
    request_of: Callable[[Job], Any],
    answered: Callable[[Job, Any], Iterable[Job]],
    window: int | None = None,
) -> None:
    """``answered(job, result)`` for every job of ``jobs`` and every follow-up it returns, as each answer
    arrives; ``request_of(job)`` is made only when the job is sent. ``jobs`` is read lazily, one job when
    a slot is free and no follow-up is ready, so a generator may prepare each job (read its image) then.
    """
    ready: deque[Job] = deque()
    sent: dict[int, Job] = {}
    positions = count()
    new_jobs = iter(jobs)

    def source() -> Iterator[Any]:
        while True:
            if ready:
                job = ready.popleft()
            else:
                try:
                    job = next(new_jobs)
                except StopIteration:
                    if not sent:
                        return
                    yield PENDING  # the jobs in flight may still have follow-ups
                    continue
            sent[next(positions)] = job
            yield request_of(job)

    def arrived(position: int, result: Any) -> None:
        ready.extend(answered(sent.pop(position), result))

    model.stream(source(), arrived, window)
    if sent:
        raise RuntimeError(f"{type(model).__name__} left {len(sent)} requests of the stream unanswered")
