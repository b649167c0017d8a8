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
    """Freeze the garbage collector's objects once the exit handlers registered after this call have run.

    At exit Python tears its modules down and runs full collections over every object still alive: for a
    `kedro run` with MLflow, pandas and SQLAlchemy imported, more than a second of CPU spent freeing memory
    the operating system takes back anyway (benchmarks/bench_run_overhead.py). ``gc.freeze`` moves those
    objects out of the collector's sight. Nothing else is skipped: exit handlers registered later (MLflow's
    flushes, Dask's cluster closing, weakref finalizers) run before it, those registered earlier still run
    after it, and objects freed by reference counting at teardown still close and flush their files. Only
    what reference cycles hold is left to the operating system, unfinalized: a file left open in a cycle is
    not flushed (Python's own collections at exit do not promise it either).
    """
    atexit.register(_freeze_unless_reported)


def _freeze_unless_reported() -> None:
    if not any(name in sys.modules for name in REPORT_WHAT_OUTLIVES_EXIT):
        gc.freeze()
