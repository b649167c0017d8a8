"""MLflow and DVC bookkeeping shared by the pipelines.

Each stage's metrics are logged to the active MLflow run under the stage's prefix (the catalog's
``sciir.catalog.metrics_dataset.MetricsDataset`` also writes them to a JSON file, so DVC can track and diff
them, timings left out). A stage can also log one nested run per item
(e.g. per model) with its own metrics and tables.
"""

from __future__ import annotations

import hashlib
import logging
import math
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

MetricValue = float | int | list[dict[str, float]]
METRICS_PER_BATCH = 1000  # the most metrics MLflow's log_batch takes in one call


def _active_mlflow():
    """The mlflow module when a run is active, else None (mlflow imported only when used)."""
    import mlflow

    return mlflow if mlflow.active_run() else None


def is_finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def log_metrics(metrics: dict[str, MetricValue], prefix: str) -> int:
    """Log scalars and per-step series to the active MLflow run; returns how many points were logged.

    NaN values (e.g. a pass rate with nothing judged) are skipped: MLflow cannot chart them and
    the JSON file keeps them as null.
    """
    mlflow = _active_mlflow()
    if mlflow is None:
        return 0
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    points = [
        Metric(f"{prefix}.{name}" if prefix else name, float(point["value"]), now, int(point.get("step", 0)))
        for name, value in metrics.items()
        for point in (value if isinstance(value, list) else [{"value": value, "step": 0}])
        if is_finite(point["value"])
    ]
    # In batches (one store transaction each) rather than a call per point: a stage logs hundreds.
    run_id = mlflow.active_run().info.run_id
    for start in range(0, len(points), METRICS_PER_BATCH):
        mlflow.MlflowClient().log_batch(run_id, metrics=points[start : start + METRICS_PER_BATCH])
    return len(points)


def log_artifacts(local_dir: str | Path, artifact_path: str) -> bool:
    """Copy a folder into the active MLflow run's artifacts; False when no run is active."""
    mlflow = _active_mlflow()
    if mlflow is None:
        return False
    mlflow.log_artifacts(str(local_dir), artifact_path=artifact_path)
    return True


@dataclass(frozen=True)
class NestedRun:
    """What one nested run holds: metrics (NaN ones are skipped) and tables (logged as CSV artifacts)."""

    metrics: Mapping[str, float]
    tables: Mapping[str, pd.DataFrame] = field(default_factory=dict)


def _log_nested_run(name: str, content: NestedRun, name_tag: str, folder: Path, tags: dict[str, str]) -> str:
    """One nested run named ``name`` (and tagged ``name_tag`` and ``tags``) inside the active run; its run id."""
    import mlflow

    with mlflow.start_run(run_name=name, nested=True) as run:
        mlflow.set_tags({**tags, name_tag: name})
        mlflow.log_metrics({key: value for key, value in content.metrics.items() if is_finite(value)})
        for table_name, table in content.tables.items():
            path = folder / run.info.run_id / f"{table_name}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            table.to_csv(path, index=False)
            mlflow.log_artifact(str(path))
    return run.info.run_id


def log_nested_runs(runs: Mapping[str, NestedRun], name_tag: str) -> dict[str, str]:
    """One nested MLflow run per name inside the active run, in the order given: name -> run id.
    Without an active run nothing is logged (one log line says so) and the result is empty."""
    if _active_mlflow() is None:
        logger.info("no active MLflow run: the nested runs %s are not logged", ", ".join(runs))
        return {}
    provenance = _provenance_of_active_run()
    # The CSV files only need to live until MLflow has copied them into the run's artifacts.
    with tempfile.TemporaryDirectory() as folder:
        return {
            name: _log_nested_run(name, content, name_tag, Path(folder), provenance)
            for name, content in runs.items()
        }


def _provenance_of_active_run() -> dict[str, str]:
    """The active run's provenance tags (``provenance_tags``), which each of its nested runs carries too, so a
    run found alone in the MLflow UI still names its commit, data revision and environment lock."""
    import mlflow

    active = mlflow.active_run()
    if active is None:
        return {}
    tags = mlflow.get_run(active.info.run_id).data.tags
    return {name: value for name, value in tags.items() if name.startswith(PROVENANCE_PREFIXES)}


# Wall-clock timings differ on every run: in the DVC metrics file they would make `dvc status` and
# `dvc metrics diff` report a change after every run whatever the data, so they go to MLflow only.
TIMING_SUFFIXES = (".seconds", "_seconds")


def is_timing(name: str) -> bool:
    return name.endswith(TIMING_SUFFIXES)


def _command_output(args: list[str], cwd: Path) -> str | None:
    try:
        result = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() or None


PROVENANCE_PREFIXES = ("git.", "dvc.", "python.")


def provenance_tags(project_path: Path) -> dict[str, str]:
    """Git commit (and whether the tree is dirty), the DVC data revision and the Python environment's lock
    (``requirements.lock``, which ``make setup`` installs), as run tags."""
    tags: dict[str, str] = {}
    commit = _command_output(["git", "rev-parse", "HEAD"], project_path)
    if commit:
        tags["git.commit"] = commit
        dirty = _command_output(["git", "status", "--porcelain", "--untracked-files=no"], project_path)
        tags["git.dirty"] = str(bool(dirty)).lower()
    environment_lock = project_path / "requirements.lock"
    if environment_lock.is_file():
        tags["python.lock_sha256"] = hashlib.sha256(environment_lock.read_bytes()).hexdigest()
    lock = project_path / "dvc.lock"
    if lock.exists():
        tags["dvc.lock_sha256"] = hashlib.sha256(lock.read_bytes()).hexdigest()
        lock_commit = _command_output(["git", "log", "-1", "--format=%H", "--", "dvc.lock"], project_path)
        if lock_commit:
            tags["dvc.data_revision"] = lock_commit
    return tags
