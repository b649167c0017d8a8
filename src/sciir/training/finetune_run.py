"""One run of the finetune stage: the train split's rows in, the LoRA trained in this process or in launched
data-parallel processes, and what the run reports: its summary, per-step history and metrics, and to the
active MLflow run the speed of each step, the adapter (registered as a model version) and validation
images."""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import pandas as pd

from sciir.backends.diffusers_gen import ADAPTER_FILE
from sciir.runs.model_registry import register_adapter
from sciir.runs.tracking import log_artifacts, log_metrics
from sciir.selection.benchmark import TRAIN_COLUMNS
from sciir.training.distributed import VALIDATION_DIR, TrainingJob, train_in_processes
from sciir.training.families import resolve_family
from sciir.training.finetune_params import FinetuneParams
from sciir.training.loop import StepRecord, finetune_lora_adapter
from sciir.training.resources import peak_gpu_memory
from sciir.training.scored_adapters import AdapterScorer, ScoreKeeper, keep_best, scored_root
from sciir.training.training_images import SkippedImage, describe_buckets, load_training_images
from sciir.training.validation_images import (
    ValidationSettings,
    checkpoint_validation,
    log_drawn_validation_images,
    log_validation_images,
)

logger = logging.getLogger(__name__)

METRICS_PREFIX = "finetune"
ADAPTER_ARTIFACT = "finetune/adapter"


def training_rows(train_split: pd.DataFrame, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rows of the train split (or of the training data a user brought) as records.

    Raises:
        ValueError: a required column is missing.
    """
    missing = [column for column in TRAIN_COLUMNS if column not in train_split.columns]
    if missing:
        raise ValueError(f"the training data lacks column(s) {missing}; expected {list(TRAIN_COLUMNS)}")
    records = train_split.loc[:, list(TRAIN_COLUMNS)].head(limit).to_dict("records")
    return cast("list[dict[str, Any]]", records)  # the columns of TRAIN_COLUMNS


def _no_usable_images_error(n_rows: int, skipped: list[SkippedImage]) -> ValueError:
    reasons = "; ".join(s.reason for s in skipped[:3]) or "there are none"
    return ValueError(f"no usable training image among {n_rows} training row(s): {reasons}")


def step_series(records: list[StepRecord], field: str) -> list[dict[str, float]]:
    """One field of the step records as a per-step metric series ``[{"value", "step"}]``."""
    return [{"value": float(getattr(record, field)), "step": record.step} for record in records]


def log_training_speed(records: list[StepRecord], memory: dict[str, float]) -> int:
    """Samples per second of each step and the peak GPU memory (when on a GPU), to the active MLflow run
    only: machine measures differ on every run, so they stay out of the DVC metrics files. Returns how
    many values were logged."""
    series = {"samples_per_second": step_series(records, "samples_per_second")}
    return log_metrics(series | memory, METRICS_PREFIX)


def finetune_on_train_split(
    train_split: pd.DataFrame,
    base_model_path: str,
    config: FinetuneParams,
    scorer: AdapterScorer | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, float]]], dict[str, float]]:
    """Train the LoRA adapter on the train split and describe the run.

    The family is ``family`` or, when unset, the base pipeline's. With ``scorer`` and ``eval_every``, the
    adapter is scored every ``eval_every`` steps and at the last (in this process as training goes, or after
    data-parallel processes saved them), and the best-scored one is the adapter delivered
    (:mod:`sciir.training.scored_adapters`; the summary's ``adapter_step`` says which step's it is).

    Returns:
        The summary (paths, family, settings, final loss, skipped images with reasons), the per-step history
        ``{"train_loss" | "learning_rate": [{"value", "step"}]}`` and the scalar metrics (with
        ``train_seconds``, which the metrics dataset logs to MLflow and keeps out of DVC's file).
        Samples per second per step and the peak GPU memory go straight to the active MLflow run.

    Raises:
        ValueError: no row of the train split has a usable image, or the family disagrees with the
            base pipeline's.
    """
    config = config.model_copy(update={"family": resolve_family(base_model_path, config.family)})
    rows = training_rows(train_split, config.max_train_samples)
    images, skipped = load_training_images(rows, config.training_sizes)
    if not images:
        raise _no_usable_images_error(len(rows), skipped)
    logger.info("Training images per size: %s", describe_buckets(images))
    started = time.perf_counter()
    settings = ValidationSettings.of(config, train_split)
    keeper = ScoreKeeper(scorer) if scorer is not None and config.eval_every else None
    if keeper is None:  # nothing would score the adapters saved
        config = config.model_copy(update={"eval_every": 0})
    if config.launch.total_processes > 1:
        usable = [row for row in rows if row["sample_id"] in {image.sample_id for image in images}]
        records, memory = train_in_launched_processes(base_model_path, usable, config, settings)
        if keeper is not None:
            keeper.score_saved(scored_root(config.adapter_path))
    else:
        validation = checkpoint_validation(base_model_path, settings)
        with peak_gpu_memory(config.device) as memory:
            records = finetune_lora_adapter(
                base_model_path,
                images,
                config.training_config(),
                config.adapter_path,
                validation,
                on_score=keeper,
            )
    adapter_step = (
        records[-1].step if keeper is None else keep_best(config.adapter_path, keeper, records[-1].step)
    )
    train_seconds = time.perf_counter() - started
    log_training_speed(records, memory)
    losses = [record.loss for record in records]
    summary = {
        "base_model_path": base_model_path,
        "family": config.family,
        "adapter_path": config.adapter_path,
        "steps": len(losses),
        "adapter_step": adapter_step,
        "resolution": config.resolution,
        "buckets": describe_buckets(images),
        "final_loss": losses[-1],
        "n_train": len(images),
        "n_skipped": len(skipped),
        "skipped": [
            {"sample_id": s.sample_id, "image_path": s.image_path, "reason": s.reason} for s in skipped
        ],
        "seed": config.seed,
        "lora_rank": config.lora_rank,
    }
    history = {
        "train_loss": step_series(records, "loss"),
        "learning_rate": step_series(records, "learning_rate"),
    }
    metrics = {
        "final_loss": losses[-1],
        "steps": float(len(losses)),
        "n_train": float(len(images)),
        "n_skipped": float(len(skipped)),
        "train_seconds": train_seconds,
    }
    return summary, history, metrics


def train_in_launched_processes(
    base_model_path: str, rows: list[dict[str, Any]], config: FinetuneParams, settings: ValidationSettings
) -> tuple[list[StepRecord], dict[str, float]]:
    """Train in ``config.launch.total_processes`` data-parallel processes; with an active MLflow run, the
    validation images their main process drew at each checkpoint are logged to it (``step-<step>``)."""
    import mlflow

    logged = mlflow.active_run() is not None and config.checkpoint_every > 0
    job = TrainingJob(
        model_path=base_model_path,
        rows=rows,
        config=config.training_config(),
        adapter_path=config.adapter_path,
        validation_rows=settings.prompt_rows() if logged else [],
    )
    with tempfile.TemporaryDirectory(prefix="sciir-finetune-") as folder:
        records, memory = train_in_processes(job, config.launch, Path(folder))
        log_drawn_validation_images(Path(folder) / VALIDATION_DIR)
    return records, memory


def log_finetune_run(
    finetune_summary: dict[str, Any],
    train_split: pd.DataFrame,
    config: FinetuneParams,
    tags: dict[str, str] | None = None,
) -> None:
    """When an MLflow run is active, log the adapter folder and a couple of validation images to it, and
    register the adapter as a version of ``registered_model`` (``sciir.runs.model_registry``), tagged with
    the family, base model, rank and ``tags``."""
    import mlflow

    if mlflow.active_run() is None:
        return
    if log_artifacts(finetune_summary["adapter_path"], ADAPTER_ARTIFACT) and config.registered_model:
        register_adapter(
            config.registered_model,
            ADAPTER_ARTIFACT,
            Path(finetune_summary["adapter_path"]) / ADAPTER_FILE,
            {key: str(finetune_summary[key]) for key in ("family", "base_model_path", "lora_rank")}
            | (tags or {}),
        )
    settings = ValidationSettings.of(config, train_split)
    log_validation_images(finetune_summary["base_model_path"], config.adapter_path, settings, "final")
