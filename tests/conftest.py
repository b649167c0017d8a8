"""Fixtures shared across the test suite."""

from __future__ import annotations

import os

import mlflow
import pytest

os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")


@pytest.fixture
def mlflow_store(tmp_path):
    """A real MLflow store in tmp_path; MLflow's globals restored afterwards."""
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    yield mlflow.tracking.MlflowClient()
    if mlflow.active_run():
        mlflow.end_run()
    mlflow.set_tracking_uri(previous)
