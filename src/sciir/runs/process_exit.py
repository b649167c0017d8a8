"""A command's exit without the garbage collector's last passes over everything it imported: every `kedro`
command of the project (settings.py), `python -m sciir.benchmark_import` and `python -m sciir.review`."""

from __future__ import annotations

import atexit
import gc
import sys

# Extension modules built with nanobind, which prints every object of theirs still alive when the interpreter
# ends as leaked: frozen, their objects would be. Triton comes with torch's dependants (xgrammar) and is loaded
# by diffusers; a process that loaded it exits as Python does.
REPORT_WHAT_OUTLIVES_EXIT = ("triton",)


def skip_collections_at_exit() -> None:
    """Collect once, then freeze the collector's objects, when the exit handlers registered after this call have
    run.

    At exit Python tears its modules down and runs several full collections over every object still alive: for
    a `kedro run` with MLflow, pandas and SQLAlchemy imported, more than a second of CPU spent freeing memory
    the operating system takes back anyway (benchmarks/bench_run_overhead.py). Here one collection finalizes
    what is already garbage (a finished run's catalog and its connections, as Python's own exit would), then
    ``gc.freeze`` moves what is left out of the collector's sight. Exit handlers registered later (MLflow's
    flushes, Dask's cluster closing) run before it, those registered earlier (weakref finalizers among them)
    after it, and objects freed by reference counting at teardown still close and flush their files. Only
    cycles that modules still hold at exit are left to the operating system unfinalized: what must be closed
    is closed explicitly (the response cache's connection: ``weakref.finalize``).
    """
    atexit.register(_collect_then_freeze)


def _collect_then_freeze() -> None:
    if not any(name in sys.modules for name in REPORT_WHAT_OUTLIVES_EXIT):
        gc.collect()
        gc.freeze()
