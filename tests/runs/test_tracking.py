import hashlib
import json
import math
import subprocess

import mlflow
import pandas as pd

from sciir.catalog.metrics_dataset import MetricsDataset
from sciir.runs.tracking import METRICS_PER_BATCH, NestedRun, log_metrics, log_nested_runs, provenance_tags


def test_metrics_go_to_json_and_to_the_active_run(tmp_path, mlflow_store):
    dataset = MetricsDataset(filepath=str(tmp_path / "m" / "evaluate.json"), prefix="evaluate")
    metrics = {
        "prog.final": 0.75,
        "noise.final": math.nan,
        "loss": [{"value": 2.0, "step": 0}, {"value": 1.0, "step": 1}],
    }
    with mlflow.start_run() as run:
        dataset.save(metrics)
    saved = json.loads((tmp_path / "m" / "evaluate.json").read_text())
    assert saved["prog.final"] == 0.75 and saved["noise.final"] is None
    logged = mlflow_store.get_run(run.info.run_id).data.metrics
    assert logged == {"evaluate.prog.final": 0.75, "evaluate.loss": 1.0}
    history = mlflow_store.get_metric_history(run.info.run_id, "evaluate.loss")
    assert [(m.step, m.value) for m in history] == [(0, 2.0), (1, 1.0)]
    assert dataset.load()["prog.final"] == 0.75


def test_a_series_longer_than_one_batch_is_logged_whole(tmp_path, mlflow_store):
    steps = 2 * METRICS_PER_BATCH + 7  # three batches
    series = [{"value": float(step), "step": step} for step in range(steps)]
    with mlflow.start_run() as run:
        assert log_metrics({"loss": series, "lr": 0.1}, "finetune") == steps + 1
    history = mlflow_store.get_metric_history(run.info.run_id, "finetune.loss")
    assert sorted((m.step, m.value) for m in history) == [(step, float(step)) for step in range(steps)]
    assert mlflow_store.get_run(run.info.run_id).data.metrics["finetune.lr"] == 0.1


def test_timings_go_to_mlflow_but_not_to_the_dvc_metrics_file(tmp_path, mlflow_store):
    dataset = MetricsDataset(filepath=str(tmp_path / "generate.json"), prefix="generate")
    with mlflow.start_run() as run:
        dataset.save({"prog.ok": 24.0, "prog.seconds": 1.59, "train_seconds": 3.2})
    assert json.loads((tmp_path / "generate.json").read_text()) == {"prog.ok": 24.0}
    logged = mlflow_store.get_run(run.info.run_id).data.metrics
    assert logged == {"generate.prog.ok": 24.0, "generate.prog.seconds": 1.59, "generate.train_seconds": 3.2}


def test_metrics_without_a_run_are_still_written(tmp_path, mlflow_store):
    dataset = MetricsDataset(filepath=str(tmp_path / "ingest.json"), prefix="ingest")
    dataset.save({"figures_kept": 3})
    assert json.loads((tmp_path / "ingest.json").read_text()) == {"figures_kept": 3}


def test_provenance_names_the_commit_and_dirtiness(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "f.txt").write_text("x")
    git("add", "f.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    tags = provenance_tags(tmp_path)
    assert len(tags["git.commit"]) == 40 and tags["git.dirty"] == "false"
    (tmp_path / "f.txt").write_text("y")
    assert provenance_tags(tmp_path)["git.dirty"] == "true"


def test_provenance_outside_git_is_empty(tmp_path):
    assert provenance_tags(tmp_path) == {}


def test_nested_runs_carry_their_metrics_and_tables(mlflow_store):
    runs = {
        "alpha": NestedRun({"final": 0.5, "law": math.nan}, {"verdicts": pd.DataFrame({"verdict": ["yes"]})}),
        "beta": NestedRun({"final": 1.0}),
    }
    provenance = {"git.commit": "c0ffee", "dvc.data_revision": "d00d", "python.lock_sha256": "1ced"}
    with mlflow.start_run(tags={**provenance, "sciir.dry_run": "False"}) as parent:
        ids = log_nested_runs(runs, name_tag="sciir.model")
    assert list(ids) == ["alpha", "beta"]
    alpha = mlflow_store.get_run(ids["alpha"])
    assert alpha.data.tags["mlflow.parentRunId"] == parent.info.run_id
    # Found alone in the MLflow UI, a nested run still says whence it came.
    assert {name: alpha.data.tags.get(name) for name in provenance} == provenance
    assert "sciir.dry_run" not in alpha.data.tags
    assert alpha.data.tags["mlflow.runName"] == "alpha" and alpha.data.tags["sciir.model"] == "alpha"
    assert alpha.data.metrics == {"final": 0.5}  # NaN cannot be charted: left out
    assert [item.path for item in mlflow_store.list_artifacts(ids["alpha"])] == ["verdicts.csv"]
    local = mlflow.artifacts.download_artifacts(run_id=ids["alpha"], artifact_path="verdicts.csv")
    assert pd.read_csv(local).verdict.tolist() == ["yes"]
    assert mlflow_store.list_artifacts(ids["beta"]) == []


def test_nested_runs_need_an_active_run(mlflow_store):
    assert log_nested_runs({"alpha": NestedRun({"final": 0.5})}, name_tag="sciir.model") == {}
    assert mlflow.active_run() is None
    assert mlflow_store.search_runs(experiment_ids=["0"]) == []


def test_provenance_names_the_environment_lock(tmp_path):
    (tmp_path / "requirements.lock").write_text("numpy==2.3.0 \\\n    --hash=sha256:00\n")
    assert provenance_tags(tmp_path) == {
        "python.lock_sha256": hashlib.sha256((tmp_path / "requirements.lock").read_bytes()).hexdigest()
    }
