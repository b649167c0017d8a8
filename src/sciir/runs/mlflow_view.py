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


def _file_name(value: Any) -> str:
    """A path's last part, as a run's name shows it (a folder's trailing ``/`` dropped)."""
    return Path(str(value)).name


def _evaluate_scope(evaluate: Mapping[str, Any]) -> str | None:
    """``evaluate physics on physics_images``: the benchmark file's name, then the images folder or the
    verdicts file judged."""
    scope = [benchmark_name(evaluate["benchmark"])] if evaluate.get("benchmark") else []
    if evaluate.get("verdicts_file"):
        scope.append(f"on verdicts {_file_name(evaluate['verdicts_file'])}")
    elif evaluate.get("images_dir"):
        scope.append(f"on {_file_name(evaluate['images_dir'])}")
    return " ".join(["evaluate", *scope]) if scope else None


def _generate_scope(generate: Mapping[str, Any]) -> str | None:
    """``generate physics``: the benchmark file drawn."""
    return f"generate {benchmark_name(generate['benchmark'])}" if generate.get("benchmark") else None


def _finetune_scope(finetune: Mapping[str, Any]) -> str | None:
    """``finetune on my_pairs``: the folder of pairs or the release folder trained on."""
    train_data = finetune.get("train_data") or {}
    return f"finetune on {_file_name(train_data['path'])}" if train_data.get("path") else None


def _human_corr_scope(human_corr: Mapping[str, Any]) -> str | None:
    """``human_corr on ratings.csv and scores.csv``: the ratings file and the metric-scores file read."""
    files = [
        _file_name(source["path"])
        for source in (human_corr.get("ratings") or {}, human_corr.get("metric_scores") or {})
        if source.get("path")
    ]
    return f"human_corr on {' and '.join(files)}" if files else None


# What names a run beyond its pipelines, by parameter section: the files and folders of the command line
# that the run read instead of the default run's tables.
SCOPES = {
    "generate": _generate_scope,
    "evaluate": _evaluate_scope,
    "finetune": _finetune_scope,
    "human_corr": _human_corr_scope,
}


def run_name(
    pipeline_names: Sequence[str] | None, command_line: Mapping[str, Any] | None = None, dry_run: bool = False
) -> str:
    """What a ``kedro run`` did, as its MLflow run's name: the pipelines (``all pipelines`` for the
    default, else e.g. ``ingest+curate``), then what the command line pointed each stage at
    (``command_line``: the ``--params`` of the sections the run reads): ``evaluate physics on
    physics_images``, ``generate physics``, ``finetune on my_pairs``, ``human_corr on ratings.csv``. A run of
    one pipeline is named by its scope alone; ``(dry run)`` ends the name when no model was called."""
    names = [name for name in pipeline_names or [] if name != KEDRO_DEFAULT_PIPELINE]
    pipelines = "+".join(names) or "all pipelines"
    command_line = command_line or {}
    scopes = {
        section: scope
        for section, describe in SCOPES.items()
        if isinstance(command_line.get(section), Mapping) and (scope := describe(command_line[section]))
    }
    if (
        len(names) == 1 and list(scopes) == names
    ):  # one pipeline, scoped: "generate physics", not "generate, generate physics"
        name = scopes[names[0]]
    else:
        name = ", ".join([pipelines, *scopes.values()])
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
