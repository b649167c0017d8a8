"""kedro-mlflow's hook, with three costs of every ``kedro`` command taken out and its behaviour unchanged.

- A node's parameters are logged in one call (``mlflow.log_params``) instead of one call per parameter: the
  default run logs about 300 parameters, each a transaction of the SQLite store (or a request to a tracking
  server) in kedro-mlflow's own hook. A value too long for a parameter still takes the configured
  ``long_params_strategy`` (conf/base/mlflow.yml), one call each.
- Before each node, kedro-mlflow reopens the pipeline's run (for nodes run in other threads); in the thread
  where it is active already (every node of the sequential runner) that is skipped: it read the run twice and
  wrote its status once per node, and stacked the same run once more each time (nested: true).
- After the catalog is made, kedro-mlflow names the MLflow metric datasets that have no key of their own; to
  find them it built every dataset of the catalog, importing every dataset class (matplotlib's among them)
  in every run, whatever the pipeline. Only the entries whose configuration names an MLflow metric dataset
  are built and looked at now.

settings.py registers it in place of the plugin's own instance (``DISABLE_HOOKS_FOR_PLUGINS``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any

import mlflow
from kedro.framework.hooks import hook_impl
from kedro_mlflow.framework.hooks import MlflowHook
from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

METRIC_DATASETS = ("MlflowMetricDataset", "MlflowMetricHistoryDataset", "MlflowMetricsHistoryDataset")


def names_metric_dataset(config: Any) -> bool:
    """Whether a catalog entry's configuration is an MLflow metric dataset's (its ``type``, any module path)."""
    kind = str(config.get("type", "")) if isinstance(config, Mapping) else ""
    return kind.rsplit(".", 1)[-1] in METRIC_DATASETS


class _MetricEntries:
    """The catalog as kedro-mlflow's ``after_catalog_created`` walks it: only the named entries are built."""

    def __init__(self, catalog: Any, names: list[str]) -> None:
        self._catalog, self._names = catalog, names

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((name, self._catalog[name]) for name in self._names)

    def __setitem__(self, name: str, dataset: Any) -> None:
        self._catalog[name] = dataset


class BatchedMlflowHook(MlflowHook):
    """kedro-mlflow's ``MlflowHook`` (one MLflow run per ``kedro run``, each node's ``params:`` inputs
    logged before it runs), each node's parameters logged in one call and the catalog built lazily."""

    run_id: str | None  # the pipeline's run, set by the plugin's before_pipeline_run

    def __init__(self) -> None:
        super().__init__()
        self._batch: dict[str, Any] | None = None
        # One node's parameters at a time: the batch and the run id hidden below are the hook's own state, and
        # the thread runner starts nodes in several threads at once.
        self._node_lock = threading.Lock()

    @hook_impl
    def after_catalog_created(
        self,
        catalog: Any,
        conf_catalog: dict[str, Any],
        conf_creds: dict[str, Any],
        parameters: dict[str, Any],
        save_version: str,
        load_versions: dict[str, str],
    ) -> None:
        names = [name for name, config in (conf_catalog or {}).items() if names_metric_dataset(config)]
        super().after_catalog_created(
            _MetricEntries(catalog, names), conf_catalog, conf_creds, parameters, save_version, load_versions
        )

    @hook_impl
    def before_node_run(self, node: Any, catalog: Any, inputs: dict[str, Any], is_async: bool) -> None:
        with self._node_lock:
            self._batch = {}
            run_id = self.run_id
            active = mlflow.active_run()
            if active is not None and active.info.run_id == run_id:
                # The plugin reopens the pipeline's run at every node for nodes run in other threads; where it
                # is this thread's active run already, reopening it (nested, conf/base/mlflow.yml) only reads
                # the run twice, marks it running again and stacks it once more. Without a run id it skips that.
                self.run_id = None
            try:
                super().before_node_run(node, catalog, inputs, is_async)
                if self._batch:
                    mlflow.log_params(self._batch)
            finally:
                self._batch, self.run_id = None, run_id

    def _log_param(self, name: str, value: Any) -> None:
        """Kept for the node's one call; a value too long for a parameter goes the plugin's way."""
        if self._batch is not None and len(str(value)) <= MAX_PARAM_VAL_LENGTH:
            self._batch[name] = value
            return
        super()._log_param(name, value)
