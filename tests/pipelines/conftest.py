"""Fixtures shared by the pipeline tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from kedro.io import DataCatalog, MemoryDataset
from kedro_datasets.json import JSONDataset

from sciir.catalog.metrics_dataset import MetricsDataset

REPO = Path(__file__).resolve().parents[2]


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
