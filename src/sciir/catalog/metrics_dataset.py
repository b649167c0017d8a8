"""A stage's metrics as a Kedro dataset: a JSON file DVC tracks and diffs (timings left out: they change on
every run), and every metric logged to the active MLflow run under the stage's prefix
(``sciir.runs.tracking``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kedro.io import AbstractDataset, DatasetError

from sciir.runs.tracking import MetricValue, is_finite, is_timing, log_metrics


class MetricsDataset(AbstractDataset[dict[str, MetricValue], dict[str, MetricValue]]):
    """A stage's metrics: saved as JSON for DVC (timings left out: ``is_timing``) and all logged to MLflow
    under ``prefix``."""

    def __init__(self, *, filepath: str, prefix: str = "", metadata: dict[str, Any] | None = None) -> None:
        self._filepath = Path(filepath)
        self._prefix = prefix
        self.metadata = metadata

    def load(self) -> dict[str, MetricValue]:
        try:
            return json.loads(self._filepath.read_text())
        except FileNotFoundError as exc:
            raise DatasetError(
                f"no metrics at {self._filepath}: run the stage that writes them first"
            ) from exc

    def save(self, data: dict[str, MetricValue]) -> None:
        self._filepath.parent.mkdir(parents=True, exist_ok=True)
        clean = {
            k: (v if isinstance(v, list) or is_finite(v) else None)
            for k, v in sorted(data.items())
            if not is_timing(k)
        }
        self._filepath.write_text(json.dumps(clean, indent=2) + "\n")
        log_metrics(data, self._prefix)

    def _exists(self) -> bool:
        return self._filepath.exists()

    def _describe(self) -> dict[str, Any]:
        return {"filepath": str(self._filepath), "prefix": self._prefix}
