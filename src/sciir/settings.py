"""Kedro project settings."""

import os
from pathlib import Path

from sciir.runs.log_filters import drop_advice_for_other_authors

# Before kedro-mlflow is imported (by the hook below), whose pyfunc model class MLflow warns about at its definition.
drop_advice_for_other_authors()

from mlflow.telemetry import set_telemetry_client  # noqa: E402

from sciir.hooks import ProjectHooks  # noqa: E402
from sciir.runs.mlflow_hook import BatchedMlflowHook  # noqa: E402
from sciir.runs.process_exit import skip_collections_at_exit  # noqa: E402
from sciir.runs.results_folder import generated_folder, results_folder  # noqa: E402

# kedro-mlflow's hook with each node's params logged in one call (sciir.runs.mlflow_hook) replaces the plugin's
# own instance. Registered last, it is called first, as the plugin's was: ProjectHooks finds its MLflow run open.
HOOKS = (ProjectHooks(), BatchedMlflowHook())
DISABLE_HOOKS_FOR_PLUGINS = ("kedro_mlflow",)  # the name as its distribution's metadata spells it

# MLflow 3 sends usage records to its makers' server from the first tracked call, unless told not to; like
# Kedro's (KEDRO_DISABLE_TELEMETRY, set by make and dvc.yaml), it is off in every run of this project. This
# module is read before any hook calls MLflow; a user who sets the variable, to false as well, is obeyed.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
# MLflow made its telemetry client when first imported, before this module (`kedro` imports the kedro-mlflow
# plugin's commands first), and some of its calls record through that client without reading the variable:
# kedro-mlflow's `mlflow.autolog(disable=True)` at every run's start fetched the telemetry settings from MLflow's
# server and queued a record. Made again now, the client follows the variable (none while it is true).
set_telemetry_client()

# Every `kedro` command of the project exits after one collection, without the interpreter's full passes over
# what it imported (sciir.runs.process_exit).
skip_collections_at_exit()


def _tracking_uri() -> str:
    """MLflow store: the environment's, else a SQLite file in ./mlruns (MLflow 3 refuses a bare file store).

    Absolute on purpose: `dvc exp run --queue` runs in a temporary copy of the project.
    """
    return os.environ.get("SCIIR_MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}"


def _artifact_uri() -> str:
    return os.environ.get("SCIIR_MLFLOW_ARTIFACT_URI") or (Path.cwd() / "mlruns" / "artifacts").as_uri()


CONFIG_LOADER_ARGS = {
    "base_env": "base",
    "default_run_env": "local",
    "config_patterns": {
        # Backends are catalog entries kept in their own file.
        "catalog": ["catalog*", "catalog*/**", "**/catalog*", "backends*", "**/backends*"],
        "mlflow": ["mlflow*", "mlflow*/**", "**/mlflow*"],
        # The review app's settings (`kedro review`, sciir.review.settings).
        "review": ["review*"],
    },
    # conf/local/parameters_*.yml (and review.yml) override only the keys they name, not whole sections.
    "merge_strategy": {"parameters": "soft", "review": "soft"},
    "custom_resolvers": {
        # Results of a run on another benchmark or other images go to their own folder (catalog paths).
        "sciir.results": results_folder,
        # Generate's images for a benchmark file go to their own folder, where evaluate finds them.
        "sciir.generated": generated_folder,
        "sciir.tracking_uri": _tracking_uri,
        "sciir.artifact_uri": _artifact_uri,
    },
}
