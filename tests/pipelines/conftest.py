"""Fixtures shared by the pipeline tests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import mlflow
import pandas as pd
import pytest
import yaml
from kedro.config import OmegaConfigLoader
from kedro.io import AbstractDataset, DataCatalog, MemoryDataset
from kedro.pipeline import Pipeline
from kedro_datasets.json import JSONDataset

from sciir.catalog.metrics_dataset import MetricsDataset
from sciir.settings import CONFIG_LOADER_ARGS

REPO = Path(__file__).resolve().parents[2]
# Where a catalog entry (or the dataset it wraps) keeps its data: a file, a folder, a backend's response cache.
LOCATION_KEYS = ("filepath", "path", "cache_path")
ProjectCatalog = Callable[..., DataCatalog]


@pytest.fixture(scope="session")
def finetune_defaults() -> dict[str, Any]:
    """The project's ``finetune`` parameters (conf/base/parameters_finetune.yml)."""
    return yaml.safe_load((REPO / "conf" / "base" / "parameters_finetune.yml").read_text())["finetune"]


@pytest.fixture
def finetune_catalog(tmp_path) -> Callable[[pd.DataFrame, dict[str, Any]], DataCatalog]:
    """The finetune pipeline's catalog for a train split and ``params:finetune``, its outputs in tmp_path as
    in the project's catalog (a memory dataset would be released after its last reader)."""

    def build(train_split: pd.DataFrame, params: dict[str, Any]) -> DataCatalog:
        return DataCatalog(
            {
                "train_split": MemoryDataset(train_split),
                "params:finetune": MemoryDataset(params),
                # Nothing held out with a checklist: no adapter is scored (test_finetune_checkpoint_scoring).
                "validation_split": MemoryDataset(pd.DataFrame(columns=["sample_id", "prompt"])),
                "checklists": MemoryDataset(pd.DataFrame(columns=["sample_id"])),
                "judge": MemoryDataset("no judge", copy_mode="assign"),
                "generators": MemoryDataset({}, copy_mode="assign"),
                "params:generate": MemoryDataset({}),
                "params:evaluate": MemoryDataset({}),
                "finetune_checkpoint_scorer": MemoryDataset(copy_mode="assign"),
                "finetune_summary": JSONDataset(filepath=str(tmp_path / "finetune_summary.json")),
                "finetune_metric_history": MetricsDataset(
                    filepath=str(tmp_path / "history.json"), prefix="finetune"
                ),
                "finetune_metrics": MetricsDataset(
                    filepath=str(tmp_path / "metrics.json"), prefix="finetune"
                ),
            }
        )

    return build


def _moved(entry: dict[str, Any], root: Path) -> dict[str, Any]:
    """A catalog entry with its file or folder (its own, or that of the dataset it wraps) under ``root``,
    at the same relative path (data/03_primary/images -> root/data/03_primary/images)."""
    entry = copy.deepcopy(entry)
    entry.pop("metadata", None)
    located = entry
    while not set(LOCATION_KEYS) & set(located) and isinstance(located.get("dataset"), dict):
        located = located["dataset"]
    for key in set(LOCATION_KEYS) & set(located):
        located[key] = str(root / located[key])
    return entry


def _parameter(parameters: dict[str, Any], name: str) -> Any:
    """The value ``params:a.b`` names in the project's parameters."""
    value: Any = parameters
    for key in name.removeprefix("params:").split("."):
        value = value[key]
    return value


@pytest.fixture
def project_catalog(tmp_path) -> ProjectCatalog:
    """The catalog ``kedro run`` gives a pipeline, its data under ``tmp_path``: every dataset the pipeline
    names that conf declares (catalog and backends, resolved with the project's resolvers; each file, folder
    and response cache moved under tmp_path/data/...), its ``params:`` from conf's parameters, and
    ``inputs`` (any of those, or another input) in memory instead."""
    loader = OmegaConfigLoader(conf_source=str(REPO / "conf"), **CONFIG_LOADER_ARGS)
    entries, parameters = loader["catalog"], loader["parameters"]

    def build(pipeline: Pipeline, inputs: Mapping[str, Any] | None = None) -> DataCatalog:
        given = dict(inputs or {})
        datasets: dict[str, AbstractDataset] = {}
        for name in sorted(pipeline.datasets() | set(given)):
            if name in given:
                datasets[name] = MemoryDataset(given[name], copy_mode="assign")
            elif name.startswith("params:"):
                datasets[name] = MemoryDataset(_parameter(parameters, name))
            elif name in entries:
                datasets[name] = AbstractDataset.from_config(name, _moved(entries[name], tmp_path))
        return DataCatalog(datasets)

    return build


@pytest.fixture
def mlflow_run(tmp_path, mlflow_store, monkeypatch) -> Iterator[mlflow.ActiveRun]:
    """An active MLflow run, as ``kedro run`` opens one, whose store and artifacts (a catalog's
    MlflowArtifactDatasets and the nested runs log there) are under tmp_path, never the checkout's mlruns/."""
    experiment = mlflow.create_experiment("tests", artifact_location=(tmp_path / "mlartifacts").as_uri())
    # The experiment of the nested runs too (kedro-mlflow sets it for a kedro run).
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment)
    with mlflow.start_run() as run:
        yield run
