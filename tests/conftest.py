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

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

REPO = Path(__file__).resolve().parents[1]
CurateParamsBuilder = Callable[..., dict[str, Any]]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist's ``--dist loadgroup`` (``make test``), each module's tests run on one worker, so a
    module's fixtures are built once; a module that names its own ``xdist_group`` keeps it (the end-to-end
    modules sharing the session's project clone, tests/e2e/conftest.py)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture
def mlflow_store(tmp_path):
    """A real MLflow store in tmp_path; MLflow's globals restored afterwards."""
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
