"""A canary API key placed in Kedro credentials reaches the server's Authorization header and nowhere else.

The judge is built the way a Kedro run builds it (a catalog entry whose ``credentials`` name an entry of
the credentials file), called against a loopback server that echoes the key in a 401 error (as careless
servers do) and fails once with a 500, while every logger records at DEBUG and an MLflow run in a
temporary store logs what a stage logs. Afterwards the logs, the MLflow store (params, tags, metrics,
artifacts) and the cache file are searched for the canary.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path

import mlflow
from kedro.io import DataCatalog

from sciir.backends.base import VLMRequest
from sciir.backends.cache import stats_metrics
from sciir.runs.tracking import log_artifacts, log_metrics
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan


def _judge_requests(count: int) -> list[VLMRequest]:
    return [
        VLMRequest(task="judge", prompt="Judge.\n" + json.dumps([{"id": f"q{n}", "question": "Drawn?"}]))
        for n in range(count)
    ]


def _catalog(base_url: str, cache_path: Path, canary: str) -> DataCatalog:
    """The judge as conf/base/backends.yml and conf/local/credentials.yml would declare it."""
    entry = {
        "type": "sciir.catalog.backend_dataset.BackendDataset",
        "kind": "vlm",
        "backend": "openai",
        "config": {"base_url": base_url, "model": "judge", "concurrency": 1, "retry_base_delay_s": 0.01},
        "credentials": "judge_api",
        "cache_path": str(cache_path),
    }
    return DataCatalog.from_config({"judge": entry}, credentials={"judge_api": {"api_key": canary}})


def _every_file_under(folder: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_a_canary_key_reaches_the_server_and_appears_nowhere_else(tmp_path, mlflow_store, caplog) -> None:
    canary = f"sk-canary-{uuid.uuid4().hex}"
    caplog.set_level(logging.DEBUG)
    plan = FaultPlan(script=["401", "500"], retry_after_s=0.01)
    experiment = mlflow.create_experiment("canary", artifact_location=(tmp_path / "artifacts").as_uri())
    with FakeOpenAIServer(faults=plan) as srv, mlflow.start_run(experiment_id=experiment) as run:
        catalog = _catalog(srv.base_url, tmp_path / "cache" / "responses.sqlite", canary)
        judge = catalog.load("judge")
        results = judge.generate(_judge_requests(3))
        identity = judge.identity()
        mlflow.log_params({f"judge.{key}": value for key, value in identity["config"].items()})
        mlflow.set_tags({"judge.backend": identity["backend"], "judge.repr": repr(judge.inner)})
        mlflow.set_tag("catalog", str(catalog))
        log_metrics(stats_metrics(judge.stats, prefix="judge_"), prefix="evaluate")
        report = tmp_path / "report"
        report.mkdir()
        rows = [{"output": r.output, "failure": r.failure, "raw": r.raw} for r in results]
        (report / "results.json").write_text(json.dumps(rows))
        (report / "run.log").write_text(caplog.text)
        log_artifacts(report, "evaluate")
        headers = [request.headers.get("authorization") for request in srv.requests]

    assert headers == [f"Bearer {canary}"] * 4  # 401 (not retried), 500, then two answers
    assert "Incorrect API key provided: ***" in results[0].failure and results[1].ok and results[2].ok
    assert "retrying in" in caplog.text and "DEBUG" in {record.levelname for record in caplog.records}
    stored = mlflow_store.get_run(run.info.run_id).data
    assert stored.params["judge.model"] == "judge" and stored.metrics["evaluate.judge_http_requests"] == 4
    searched = {"logs": caplog.text.encode(), **_every_file_under(tmp_path)}
    assert any(name.endswith("responses.sqlite") for name in searched)
    assert any("artifacts" in name and name.endswith("run.log") for name in searched)
    leaks = [where for where, data in searched.items() if canary.encode() in data]
    assert leaks == []
