"""A ``kedro run`` in-process, with the project's hooks and kedro-mlflow's, on a real MLflow store in tmp_path:
its run is named by what it did, keeps its tags, and its experiment is marked as model training, so the
MLflow UI link printed at the end opens on the runs.

The project is a copy of this one's ``pyproject.toml`` and ``conf/base`` (no ``conf/local``: a developer's
own settings stay out); the run is evaluate's first node alone on a one-question benchmark file, a second
or two."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import mlflow
import mlflow.tracking.fluent
import pytest
import yaml
from kedro.framework.session import KedroSession
from kedro.framework.startup import bootstrap_project
from kedro_mlflow.framework.hooks import MlflowHook

from sciir.hooks import ProjectHooks
from sciir.runs.mlflow_hook import BatchedMlflowHook
from sciir.runs.mlflow_view import EXPERIMENT_KIND_TAG, MODEL_TRAINING

REPO = Path(__file__).resolve().parents[1]
BENCHMARK = {
    "sample_id": "circuit",
    "prompt": "Draw a battery feeding a resistor labelled Resistor.",
    "questions": [{"id": "q1", "text": 'Is "Resistor" spelled exactly?', "expected_text": "Resistor"}],
}
PHYSICS = {"evaluate": {"benchmark": "physics.jsonl", "images_dir": "physics_images"}}


@pytest.fixture
def project(tmp_path, mlflow_store, monkeypatch) -> Path:
    """A copy of the project's configuration in tmp_path, the working folder, logging to ``mlflow_store``;
    the experiment kedro-mlflow makes active is forgotten afterwards."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "conf" / "base", root / "conf" / "base")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "conf" / "local").mkdir()
    (root / "src").mkdir()  # Kedro asks for the source folder; the package is the one imported
    (root / "physics.jsonl").write_text(json.dumps(BENCHMARK) + "\n")
    (root / "physics_images" / "mine").mkdir(parents=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SCIIR_MLFLOW_TRACKING_URI", mlflow.get_tracking_uri())
    monkeypatch.setenv("SCIIR_MLFLOW_ARTIFACT_URI", (tmp_path / "artifacts").as_uri())
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    experiment_env = os.environ.get("MLFLOW_EXPERIMENT_ID")
    yield root
    if experiment_env is None:
        os.environ.pop("MLFLOW_EXPERIMENT_ID", None)
    else:
        os.environ["MLFLOW_EXPERIMENT_ID"] = experiment_env


def kedro_run(root: Path, runtime_params: dict, pipelines: list[str], nodes: list[str]) -> None:
    """``kedro run --pipelines ... --nodes ... --params ...`` in this process."""
    bootstrap_project(root)
    with KedroSession.create(project_path=root, runtime_params=runtime_params) as session:
        session.run(pipeline_names=pipelines, node_names=nodes)
    # kedro-mlflow finishes its run in the store but leaves it on MLflow's stack of active runs (in one
    # process, the next session would log into it): taken off, as the end of a `kedro run` process does.
    while mlflow.active_run():
        mlflow.end_run()


def pipeline_runs(client: mlflow.MlflowClient) -> list:
    """The runs of the experiment ``sciir``, oldest first."""
    experiment = client.get_experiment_by_name("sciir")
    return sorted(client.search_runs([experiment.experiment_id]), key=lambda run: run.info.start_time)


def test_a_run_is_named_by_what_it_did_and_its_new_experiment_opens_on_runs(project, mlflow_store, capsys):
    assert mlflow_store.get_experiment_by_name("sciir") is None  # the run creates it
    # A setting of a section the run does not read (generate's) does not name it.
    kedro_run(
        project, PHYSICS | {"generate": {"benchmark": "physics.jsonl"}}, ["evaluate"], ["evaluation_inputs"]
    )
    (run,) = pipeline_runs(mlflow_store)
    assert run.info.run_name == "evaluate physics on physics_images"
    assert run.data.tags["mlflow.runName"] == "evaluate physics on physics_images"
    # The tags kedro-mlflow and the nodes set stay.
    assert (
        run.data.tags["sciir.benchmark.name"] == "physics"
        and run.data.tags["sciir.images"] == "physics_images"
    )
    assert (
        "--pipeline=evaluate" in run.data.tags["kedro_command"] and run.data.tags["sciir.dry_run"] == "False"
    )
    experiment = mlflow_store.get_experiment(run.info.experiment_id)
    assert experiment.tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING
    page = f"#/experiments/{run.info.experiment_id}/runs?workflowType=machine_learning"
    printed = capsys.readouterr().out
    assert f"MLflow run 'evaluate physics on physics_images': http://127.0.0.1:5000/{page}" in printed
    assert f"mlflow ui --backend-store-uri {mlflow.get_tracking_uri()}" in printed


def test_an_existing_experiment_gets_the_kind_once_and_a_configured_run_name_is_kept(project, mlflow_store):
    mlflow_store.create_experiment("sciir", tags={"note": "made before the project marked experiments"})
    kedro_run(project, {}, ["evaluate"], ["evaluation_inputs"])  # no benchmark file: the catalog's, absent
    mlflow_config = yaml.safe_load((project / "conf" / "base" / "mlflow.yml").read_text())
    mlflow_config["tracking"]["run"]["name"] = "my own name"
    (project / "conf" / "local" / "mlflow.yml").write_text(yaml.safe_dump(mlflow_config))
    kedro_run(project, PHYSICS, ["evaluate"], ["evaluation_inputs"])
    first, second = pipeline_runs(mlflow_store)
    assert first.info.run_name == "evaluate" and second.info.run_name == "my own name"
    experiment = mlflow_store.get_experiment_by_name("sciir")
    assert experiment.tags[EXPERIMENT_KIND_TAG] == MODEL_TRAINING and experiment.tags["note"].startswith(
        "made"
    )


def test_the_session_has_one_mlflow_hook_the_projects_called_before_projecthooks(project):
    # The plugin's own hook (registered by its entry point) beside the project's would open two MLflow runs.
    bootstrap_project(project)
    with KedroSession.create(project_path=project) as session:
        hooks = [impl.plugin for impl in session._hook_manager.hook.before_node_run.get_hookimpls()]
    assert [type(hook) for hook in hooks if isinstance(hook, MlflowHook)] == [BatchedMlflowHook]
    # pluggy calls the last registered first: the MLflow run is open when ProjectHooks tags it.
    kinds = [type(hook) for hook in hooks]
    assert kinds.index(ProjectHooks) < kinds.index(BatchedMlflowHook)
