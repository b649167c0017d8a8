"""A `kedro` process of the project exits without the collector's passes: frozen after the later exit handlers.

Checked in child processes that read the project's settings as `kedro` does, between two exit handlers of
their own: the one registered after the settings runs first and must find nothing frozen yet (MLflow's and
Dask's handlers are registered as runs go, after the settings); the one registered before runs last and must
find the objects frozen, so that the interpreter's collections at teardown skip them; what was garbage before
(a finished run's catalog) is collected first, its connections closed as Python's own exit closes them. A
process that loaded an extension which reports what outlives the interpreter (triton, built with nanobind) is
not frozen: it would print its objects as leaked.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = """
import atexit, gc
atexit.register(lambda: print("registered before the settings, frozen:", gc.get_freeze_count() > 0))
import sciir.settings  # noqa: F401  (what every `kedro` command of the project reads first)
atexit.register(lambda: print("registered after the settings, frozen:", gc.get_freeze_count() > 0))
"""


def _probe(tmp_path: Path, then: str = "") -> tuple[list[str], str]:
    """The probe's own lines (Kedro logs its logging set-up to stdout as well) and its stderr."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE + then], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line.startswith("registered")], result.stderr


def test_objects_are_frozen_after_the_later_exit_handlers_and_before_teardown(tmp_path: Path) -> None:
    assert _probe(tmp_path)[0] == [
        "registered after the settings, frozen: False",
        "registered before the settings, frozen: True",
    ]


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_a_process_with_triton_loaded_is_not_frozen_and_reports_no_leak(tmp_path: Path) -> None:
    lines, stderr = _probe(tmp_path, then="import triton.language\n")
    assert lines == [
        "registered after the settings, frozen: False",
        "registered before the settings, frozen: False",
    ]
    assert "leaked" not in stderr


# A finished run's catalog: a reference cycle nothing holds any more, with an SQLite connection in WAL mode.
GARBAGE_WITH_A_CONNECTION = """
import sqlite3
class Catalog: pass
catalog = Catalog(); catalog.itself = catalog
catalog.connection = sqlite3.connect("store.sqlite")
catalog.connection.execute("PRAGMA journal_mode=WAL")
catalog.connection.execute("CREATE TABLE t (a)")
catalog.connection.commit()
del catalog
"""


def test_what_is_garbage_at_exit_is_collected_first_its_connections_closed(tmp_path: Path) -> None:
    _probe(tmp_path, then=GARBAGE_WITH_A_CONNECTION)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["store.sqlite"]  # no write-ahead log left
