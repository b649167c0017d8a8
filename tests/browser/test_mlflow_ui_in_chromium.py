"""The MLflow UI (3.17, served by ``mlflow server`` on loopback) rendered by headless Chromium: the page a
``kedro run`` prints for its runs (``sciir.runs.mlflow_view.runs_page``) shows the run by its name, while
the experiment's own address opens the UI's GenAI view, which shows none of it. That second page is why
the link is printed: in this version the view follows the browser's switch or the link, never the
experiment's kind tag, which the project sets all the same. Skipped when /usr/bin/chromium is absent."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest

from sciir.runs.mlflow_view import EXPERIMENT_KIND_TAG, MODEL_TRAINING, mark_model_training, runs_page

CHROMIUM = Path("/usr/bin/chromium")
RUN_NAME = "evaluate physics on physics_images"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
    ),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A store with the experiment ``sciir`` marked as the project marks it and one named run, served by
    ``mlflow server``: (its address, the experiment's id)."""
    root = tmp_path_factory.mktemp("mlflow_ui")
    store = f"sqlite:///{root / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=store)
    experiment_id = client.create_experiment("sciir", artifact_location=str(root / "artifacts"))
    mlflow.set_tracking_uri(store)
    try:
        assert mark_model_training(experiment_id)
    finally:
        mlflow.set_tracking_uri(None)
    run = client.create_run(experiment_id, run_name=RUN_NAME)
    client.log_metric(run.info.run_id, "final", 0.5)
    client.set_terminated(run.info.run_id)
    assert client.get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING
    port = _free_port()
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store, "--host", "127.0.0.1"]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--workers", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    address = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(address, timeout=2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "mlflow server did not answer"
                time.sleep(1)
        yield address, experiment_id
    finally:
        server.terminate()
        server.wait(timeout=30)


def _rendered(url: str) -> str:
    """The page's DOM once the UI's scripts have run (20 s of the page's own time)."""
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000"]
    result = subprocess.run(
        [*command, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    )
    return result.stdout


def test_the_printed_runs_page_shows_the_run_by_its_name(served):
    address, experiment_id = served
    page = runs_page(address, experiment_id)
    assert page == f"{address}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
    assert RUN_NAME in _rendered(page)


def test_the_experiments_own_address_opens_the_genai_view_without_the_run(served):
    address, experiment_id = served
    dom = _rendered(f"{address}/#/experiments/{experiment_id}")
    assert RUN_NAME not in dom and "No data available" in dom
