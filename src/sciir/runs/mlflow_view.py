"""How a ``kedro run`` shows in the MLflow UI: its run named by what it did (:func:`run_name`, in place of
kedro-mlflow's ``__default__``), its experiment marked as model training (:func:`mark_model_training`), and
the UI's page of its runs (:func:`runs_page`).

MLflow 3.17's UI opens an experiment in its GenAI view (traces) unless told otherwise: its sidebar switch
("GenAI" / "Model training", remembered by the browser, GenAI at first) decides, or a link's
``workflowType=machine_learning``; the experiment's kind tag does not decide it in that version, and is set
all the same, as MLflow's record of what the experiment holds.
Imported by the project's hooks only: what a stage computes does not depend on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sciir.runs.results_folder import benchmark_name

# MLflow's tag of an experiment's kind, and the kind "machine learning / model training" (the other kind,
# "genai_development", is the GenAI view of traces and evaluations).
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
MODEL_TRAINING = "custom_model_development"


def mark_model_training(experiment_id: str) -> bool:
    """Tag the experiment as model training when it has no kind yet; True when it was tagged. A kind set
    before (by hand, or by another tool or MLflow version) is kept."""
    import mlflow

    client = mlflow.MlflowClient()
    if EXPERIMENT_KIND_TAG in client.get_experiment(experiment_id).tags:
        return False
    client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, MODEL_TRAINING)
    return True


KEDRO_DEFAULT_PIPELINE = "__default__"  # what `kedro run` runs without --pipelines


def kedro_mlflow_run_name(pipeline_names: Sequence[str] | None) -> str:
    """kedro-mlflow's name for the run of these pipelines (``__default__`` for ``kedro run`` alone)."""
    return "+".join(pipeline_names or [KEDRO_DEFAULT_PIPELINE])


def run_name(
    pipeline_names: Sequence[str] | None, evaluate: Mapping[str, Any] | None = None, dry_run: bool = False
) -> str:
    """What a ``kedro run`` did, as its MLflow run's name: the pipelines (``all pipelines`` for the
    default, else e.g. ``ingest+curate``), then for an evaluation the settings that scoped it (``evaluate``
    of the command line): the benchmark file's name and the images folder or the verdicts file, as in
    ``evaluate physics on physics_images``; ``(dry run)`` at the end when no model was called."""
    names = [name for name in pipeline_names or [] if name != KEDRO_DEFAULT_PIPELINE]
    pipelines = "+".join(names) or "all pipelines"
    evaluate = evaluate or {}
    scope = []
    if evaluate.get("benchmark"):
        scope.append(benchmark_name(evaluate["benchmark"]))
    if evaluate.get("verdicts_file"):
        scope.append(f"on verdicts {Path(str(evaluate['verdicts_file'])).name}")
    elif evaluate.get("images_dir"):
        scope.append(f"on {Path(str(evaluate['images_dir'])).name}")
    name = pipelines
    if scope:
        name = " ".join([pipelines if pipelines == "evaluate" else f"{pipelines}, evaluate", *scope])
    return f"{name} (dry run)" if dry_run else name


MLFLOW_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves by default


def _served(tracking_uri: str) -> bool:
    """Whether the store is a tracking server, which serves the UI itself."""
    return tracking_uri.startswith(("http://", "https://"))


def runs_page(tracking_uri: str, experiment_id: str) -> str:
    """The MLflow UI's page of the experiment's runs, in its machine-learning view: on the tracking server
    itself, or on ``mlflow ui`` for a local store."""
    base = tracking_uri.rstrip("/") if _served(tracking_uri) else MLFLOW_UI
    return f"{base}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"


def runs_page_text(tracking_uri: str, experiment_id: str, name: str) -> str:
    """A line naming the run and where the MLflow UI shows it, with the command that starts a local UI."""
    text = f"MLflow run '{name}': {runs_page(tracking_uri, experiment_id)}"
    if _served(tracking_uri):
        return text
    return f"{text} (start the UI with: mlflow ui --backend-store-uri {tracking_uri})"
