"""Fixtures shared across the test suite."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlflow
import pytest
import yaml

from sciir.testing.checkout_state import FileState, changes, user_state

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

REPO = Path(__file__).resolve().parents[1]
CurateParamsBuilder = Callable[..., dict[str, Any]]


# The groups that take minutes (the end-to-end project's: the default run and the documented commands, about
# 8 of pytest's 11.5 minutes on two workers; OCR of the real figures, about 2), longest first. ``make test`` hands groups
# to the workers in collection order (--no-loadscope-reorder), so these start at once instead of after the
# groups with more (quick) tests, and the longest no longer finishes alone at the end.
CHECKOUT_BEFORE = pytest.StashKey[FileState]()
LONGEST_GROUPS = ("e2e_project", "tests/external/test_ocr_real_figures.py")


def _group(item: pytest.Item) -> str:
    return item.get_closest_marker("xdist_group").args[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist's ``--dist loadgroup`` (``make test``), each module's tests run on one worker, so a
    module's fixtures are built once; a module that names its own ``xdist_group`` keeps it (the end-to-end
    modules sharing the session's project clone, tests/e2e/conftest.py). The longest groups come first."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    rank = {group: position for position, group in enumerate(LONGEST_GROUPS)}
    items.sort(key=lambda item: rank.get(_group(item), len(LONGEST_GROUPS)))  # stable: module order kept


def _controller(config: pytest.Config) -> bool:
    """Whether this process runs the session itself (no pytest-xdist, or xdist's controller, not a worker)."""
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _controller(session.config):
        session.config.stash[CHECKOUT_BEFORE] = user_state(REPO)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The tests track to stores of their own: a run that changed the checkout's MLflow store, data or cache fails."""
    if not _controller(session.config) or CHECKOUT_BEFORE not in session.config.stash:
        return
    changed = changes(session.config.stash[CHECKOUT_BEFORE], user_state(REPO))
    if changed:
        shown = "\n  ".join(changed[:20]) + (f"\n  ... {len(changed) - 20} more" if len(changed) > 20 else "")
        print(
            f"\nThe tests changed the checkout's own runs and data (a test or benchmark must use a folder of its own;"
            f" a kedro run of yours beside the tests changes them too):\n  {shown}"
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def mlflow_store(tmp_path, monkeypatch):
    """A real MLflow store in tmp_path, run from there: a SQLite store keeps its default experiment's artifacts
    in ./mlruns, which would otherwise be the checkout's. MLflow's globals restored afterwards."""
    monkeypatch.chdir(tmp_path)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    yield mlflow.tracking.MlflowClient()
    if mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(previous)


@pytest.fixture(scope="session")
def curate_params() -> CurateParamsBuilder:
    """``params:curate`` as conf/base/parameters_curate.yml sets it, with the sections a test names
    updated: ``curate_params(standardise={"size_px": 64}, workers={"count": 1})``; a fresh copy each call."""
    text = (REPO / "conf" / "base" / "parameters_curate.yml").read_text(encoding="utf-8")
    base = yaml.safe_load(text)["curate"]

    def build(**sections: dict[str, Any]) -> dict[str, Any]:
        params = copy.deepcopy(base)
        for name, settings in sections.items():
            params[name] = {**params.get(name, {}), **settings}
        return params

    return build
