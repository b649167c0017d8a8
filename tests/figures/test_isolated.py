"""Worker processes with per-item limits: an item that hangs, kills its worker, exhausts memory or raises
fails alone, with its reason, and the other items still get their results."""

from __future__ import annotations

import os
import time

import pytest

from sciir.figures.isolated import Failed, WorkerLimits, run_isolated


def test_results_come_back_in_the_items_order() -> None:
    assert run_isolated(abs, [-3, 2, -1, 0], WorkerLimits(workers=2, timeout_s=30)) == [3, 2, 1, 0]


@pytest.mark.slow
def test_a_hanging_item_times_out_and_the_others_finish() -> None:
    started = time.monotonic()
    results = run_isolated(time.sleep, [0.0, 60.0, 0.0, 0.0], WorkerLimits(workers=2, timeout_s=3))
    assert results[0] is None and results[2] is None and results[3] is None
    assert results[1] == Failed("it took longer than the limit of 3 s")
    assert time.monotonic() - started < 30  # the sleeping worker was killed, not waited for


def test_a_worker_that_dies_is_replaced() -> None:
    # os._exit ends the worker process at once, as a crashing decoder would.
    results = run_isolated(os._exit, [3], WorkerLimits(workers=1, timeout_s=30))
    assert results == [Failed("the worker process died on it: it exited with code 3")]
    assert run_isolated(abs, [-1, -2], WorkerLimits(workers=1, timeout_s=30)) == [1, 2]


def test_dead_worker_does_not_take_the_run_with_it() -> None:
    results = run_isolated(os._exit, [0, 5], WorkerLimits(workers=1, timeout_s=30))
    assert [result.reason for result in results] == [
        "the worker process died on it: it exited with code 0",
        "the worker process died on it: it exited with code 5",
    ]


@pytest.mark.skipif(os.name != "posix", reason="address-space limits are POSIX")
def test_an_item_over_the_memory_limit_fails_with_memory_error() -> None:
    results = run_isolated(
        bytearray, [8 * 1024**3, 16], WorkerLimits(workers=1, timeout_s=30, memory_mb=1024)
    )
    assert results[0] == Failed("it ran out of memory (the worker limit is 1024 MB)")
    assert results[1] == bytearray(16)


def test_an_exception_fails_its_item_with_the_message() -> None:
    results = run_isolated(int, ["12", "twelve"], WorkerLimits(workers=1, timeout_s=30))
    assert results[0] == 12
    assert isinstance(results[1], Failed)
    assert results[1].reason.startswith("processing it failed: ValueError: invalid literal for int()")


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        WorkerLimits(workers=0)
