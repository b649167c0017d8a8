"""The project's kedro-mlflow hook (sciir.runs.mlflow_hook): what it logs is what kedro-mlflow's own hook logs,
on a real MLflow store, in fewer calls; the catalog's datasets are built only where the plugin needs them."""

from __future__ import annotations

import threading
from typing import Any

import mlflow
import pytest
from kedro.framework.hooks.manager import _create_hook_manager
from kedro.io import DataCatalog
from kedro.pipeline import Pipeline, node
from kedro.runner import ThreadRunner
from kedro_mlflow.config.kedro_mlflow_config import KedroMlflowConfig
from kedro_mlflow.framework.hooks import MlflowHook
from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

from sciir.runs.mlflow_hook import BatchedMlflowHook, names_metric_dataset

# A node's inputs as Kedro hands them to before_node_run: nested parameters (flattened with "."), a value
# too long for an MLflow parameter (logged as a tag: conf/base/mlflow.yml's long_params_strategy), data.
INPUTS: dict[str, Any] = {
    "params:evaluate": {"benchmark": None, "judge": {"window": 8, "retries": [1, 2]}, "notes": "x" * 7000},
    "params:seed": 3,
    "parameters": {"whole": True},
    "scores": [1, 2, 3],
}


def _ready(hook: MlflowHook, run_id: str) -> MlflowHook:
    """The hook as its before_pipeline_run leaves it for the run (conf/base/mlflow.yml's params settings)."""
    hook.run_id, hook._is_mlflow_enabled, hook.mlflow_config = run_id, True, KedroMlflowConfig()
    hook.flatten, hook.recursive, hook.sep, hook.long_params_strategy = True, True, ".", "tag"
    return hook


def _logged(client: mlflow.MlflowClient, run_id: str) -> tuple[dict[str, str], dict[str, str]]:
    data = client.get_run(run_id).data
    return data.params, {key: value for key, value in data.tags.items() if not key.startswith("mlflow.")}


def test_a_nodes_params_are_logged_as_the_plugin_logs_them_in_one_call(mlflow_store, monkeypatch):
    calls: list[str] = []
    for method in ("log_param", "log_batch"):
        original = getattr(SqlAlchemyStore, method)

        def spy(self, *args, _original=original, _method=method, **kwargs):
            calls.append(_method)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(SqlAlchemyStore, method, spy)
    logged = {}
    for name, hook in (("plugin", MlflowHook()), ("batched", BatchedMlflowHook())):
        run = mlflow.start_run(run_name=name)
        calls.clear()
        step = node(lambda *inputs: None, list(INPUTS), None, name="step")
        _ready(hook, run.info.run_id).before_node_run(step, DataCatalog(), dict(INPUTS), False)
        logged[name] = (_logged(mlflow_store, run.info.run_id), list(calls))
        while mlflow.active_run():  # the hook reopens the run at the node, as in a kedro run
            mlflow.end_run()
    (plugin_logged, plugin_calls), (batched_logged, batched_calls) = logged["plugin"], logged["batched"]
    params, tags = batched_logged
    assert (
        params["evaluate.judge.window"] == "8"
        and params["seed"] == "3"
        and params["parameters.whole"] == "True"
    )
    assert tags["evaluate.notes"] == "x" * 7000  # too long for a parameter: a tag, as the plugin does
    assert batched_logged == plugin_logged
    assert plugin_calls.count("log_param") == 5  # one store call per parameter
    assert batched_calls == ["log_batch"]  # the node's parameters at once (the long one is a tag call)


def test_after_the_catalog_is_made_only_mlflow_metric_entries_are_built_and_named(mlflow_store):
    conf = {
        "never_built": {"type": "no_such_package.NoDataset"},  # building it would fail
        "accuracy": {"type": "kedro_mlflow.io.metrics.MlflowMetricDataset"},
        "losses": {"type": "kedro_mlflow.io.metrics.MlflowMetricHistoryDataset", "key": "own_key"},
    }
    catalog = DataCatalog.from_config(conf)
    BatchedMlflowHook().after_catalog_created(catalog, conf, {}, {}, "v", {})
    assert catalog["accuracy"].key == "accuracy"  # kedro-mlflow names a keyless metric after its entry
    assert catalog["losses"].key == "own_key"
    with pytest.raises(Exception, match="no_such_package"):
        catalog["never_built"]
    assert names_metric_dataset({"type": "MlflowMetricsHistoryDataset"})
    assert not names_metric_dataset({"type": "kedro_mlflow.io.artifacts.MlflowArtifactDataset"})
    assert not names_metric_dataset("not a mapping")


def _reopenings(monkeypatch) -> list[str]:
    """The run ids whose status the store is asked to write (what reopening a run does), as they come."""
    written: list[str] = []
    original = SqlAlchemyStore.update_run_info

    def spy(self, run_id, *args, **kwargs):
        written.append(run_id)
        return original(self, run_id, *args, **kwargs)

    monkeypatch.setattr(SqlAlchemyStore, "update_run_info", spy)
    return written


@pytest.mark.parametrize("kind", [MlflowHook, BatchedMlflowHook])
def test_the_run_is_reopened_at_a_node_only_in_a_thread_where_it_is_not_active(
    mlflow_store, monkeypatch, kind
):
    run_id = mlflow.start_run(run_name="pipeline").info.run_id  # as before_pipeline_run leaves it
    hook, step = _ready(kind(), run_id), node(lambda seed: None, "params:seed", None, name="step")
    reopened = _reopenings(monkeypatch)
    for _ in range(3):  # three nodes of the sequential runner, in the run's own thread
        hook.before_node_run(step, DataCatalog(), {}, False)
    assert hook.run_id == run_id and mlflow.active_run().info.run_id == run_id
    in_thread: list[str | None] = []

    def thread_node() -> None:  # a node of the thread runner: no run is active in its thread
        hook.before_node_run(step, DataCatalog(), {}, False)
        in_thread.append(mlflow.active_run().info.run_id)

    worker = threading.Thread(target=thread_node)
    worker.start()
    worker.join()
    assert in_thread == [run_id]  # both reopen it where it is not active
    at_nodes = list(reopened)
    mlflow.end_run()  # after_pipeline_run ends the run once
    left_active = mlflow.active_run() is not None
    while mlflow.active_run():
        mlflow.end_run()
    if kind is MlflowHook:
        assert at_nodes == [run_id] * 4 and left_active  # every node reopened it, stacking it again
    else:
        assert at_nodes == [run_id] and not left_active  # only in the other thread
    assert mlflow_store.get_run(run_id).info.status == "FINISHED"


@pytest.mark.parametrize("kind", [MlflowHook, BatchedMlflowHook])
def test_under_the_thread_runner_every_nodes_params_reach_the_pipelines_run_and_no_other(mlflow_store, kind):
    run_id = mlflow.start_run(run_name="pipeline").info.run_id  # as before_pipeline_run leaves it
    hooks = _create_hook_manager()
    hooks.register(_ready(kind(), run_id))
    names = [f"p{index}" for index in range(48)]
    steps = [node(lambda value: None, f"params:{name}", None, name=name) for name in names]
    catalog = DataCatalog()
    for index, name in enumerate(names):
        catalog[f"params:{name}"] = index
    ThreadRunner(max_workers=4).run(Pipeline(steps), catalog, hook_manager=hooks)
    while mlflow.active_run():
        mlflow.end_run()
    (only,) = mlflow_store.search_runs([mlflow_store.get_run(run_id).info.experiment_id])
    assert only.info.run_id == run_id  # no node's parameters opened a run of their own
    assert only.data.params == {name: str(index) for index, name in enumerate(names)}
