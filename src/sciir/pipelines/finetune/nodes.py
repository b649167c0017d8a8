"""Finetune nodes: base model -> LoRA adapter trained on the train split -> summary and metrics."""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import PositiveInt

from sciir.backends.base import GenerationRequest
from sciir.runs.model_registry import register_adapter
from sciir.runs.tracking import log_artifacts, log_metrics
from sciir.training.distributed import VALIDATION_DIR, LaunchParams, TrainingJob, train_in_processes
from sciir.training.families import ensure_tiny_base, resolve_family
from sciir.training.loop import (
    ADAPTER_FILE,
    CheckpointCallback,
    Family,
    LoraTrainConfig,
    SkippedImage,
    StepRecord,
    describe_buckets,
    finetune_lora_adapter,
    load_training_images,
)
from sciir.training.resources import peak_gpu_memory

logger = logging.getLogger(__name__)

TINY_BASE_MODEL = "tiny"
# The family of the tiny pipeline when ``family`` is not set.
TINY_DEFAULT_FAMILY: Family = "noise_prediction"
METRICS_PREFIX = "finetune"
TRAIN_COLUMNS = ("sample_id", "prompt", "image_path")
VALIDATION_IMAGES = 2
VALIDATION_STEPS = 4
ADAPTER_ARTIFACT = "finetune/adapter"
VALIDATION_ARTIFACT = "finetune/validation"


@dataclass(frozen=True)
class ValidationSettings:
    """What validation images are drawn with: the fixed prompts (the first of the train split) and the
    run's resolution, seed and device."""

    prompts: pd.DataFrame
    resolution: int
    seed: int
    device: str

    @classmethod
    def of(cls, config: LoraTrainConfig, rows: pd.DataFrame) -> ValidationSettings:
        return cls(rows, config.resolution, config.seed, config.device)


class FinetuneParams(LoraTrainConfig):
    """``params:finetune``: the training run plus where the base model and the adapter live."""

    base_model: str
    tiny_model_path: str
    adapter_path: str
    max_train_samples: PositiveInt
    # The MLflow registered model the adapter becomes a version of (None: not registered).
    registered_model: str | None = "sciir-lora"
    # Data-parallel training processes (sciir.training.distributed); one in all trains in this process.
    launch: LaunchParams = LaunchParams()

    def training_config(self) -> LoraTrainConfig:
        """The training run's own settings, without where models live or how many processes run it."""
        return LoraTrainConfig.model_validate(self.model_dump(include=set(LoraTrainConfig.model_fields)))


def prepare_base_model(params: dict[str, Any]) -> str:
    """The base pipeline's folder: for ``base_model: tiny`` the tiny pipeline of ``family`` (noise
    prediction when unset), built when missing; otherwise a local diffusers folder whose pipeline class
    has a recipe of that family.

    Raises:
        FileNotFoundError: ``base_model`` is neither ``tiny`` nor a diffusers pipeline folder.
        ValueError: the folder's pipeline has no recipe, or is not of ``family``.
    """
    config = FinetuneParams.model_validate(params)
    if config.base_model == TINY_BASE_MODEL:
        family = config.family or TINY_DEFAULT_FAMILY
        return str(ensure_tiny_base(config.tiny_model_path, family, config.seed))
    if not Path(config.base_model).is_dir():
        raise FileNotFoundError(
            f"finetune.base_model {config.base_model!r} is neither {TINY_BASE_MODEL!r} "
            "nor the folder of a local diffusers pipeline"
        )
    resolve_family(config.base_model, config.family)
    return config.base_model


def training_rows(train_split: pd.DataFrame, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` rows of the train split as records.

    Raises:
        ValueError: a required column is missing.
    """
    missing = [column for column in TRAIN_COLUMNS if column not in train_split.columns]
    if missing:
        raise ValueError(f"train_split lacks column(s) {missing}; expected {list(TRAIN_COLUMNS)}")
    return train_split.loc[:, list(TRAIN_COLUMNS)].head(limit).to_dict("records")


def _no_usable_images_error(n_rows: int, skipped: list[SkippedImage]) -> ValueError:
    reasons = "; ".join(s.reason for s in skipped[:3]) or "the train split is empty"
    return ValueError(f"no usable training image among {n_rows} train_split row(s): {reasons}")


def step_series(records: list[StepRecord], field: str) -> list[dict[str, float]]:
    """One field of the step records as a per-step metric series ``[{"value", "step"}]``."""
    return [{"value": float(getattr(record, field)), "step": record.step} for record in records]


def log_training_speed(records: list[StepRecord], memory: dict[str, float]) -> int:
    """Samples per second of each step and the peak GPU memory (when on a GPU), to the active MLflow run
    only: machine measures differ on every run, so they stay out of the DVC metrics files. Returns how
    many values were logged."""
    series = {"samples_per_second": step_series(records, "samples_per_second")}
    return log_metrics(series | memory, METRICS_PREFIX)


def finetune_lora(
    train_split: pd.DataFrame, base_model_path: str, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, list[dict[str, float]]], dict[str, float]]:
    """Train the LoRA adapter and describe the run.

    The family is ``family`` or, when unset, the base pipeline's.

    Returns:
        The summary (paths, family, settings, final loss, skipped images with reasons), the per-step history
        ``{"train_loss" | "learning_rate": [{"value", "step"}]}`` and the scalar metrics (with
        ``train_seconds``, which the metrics dataset logs to MLflow and keeps out of DVC's file).
        Samples per second per step and the peak GPU memory go straight to the active MLflow run.

    Raises:
        ValueError: no row of the train split has a usable image, or the family disagrees with the
            base pipeline's.
    """
    config = FinetuneParams.model_validate(params)
    config = config.model_copy(update={"family": resolve_family(base_model_path, config.family)})
    rows = training_rows(train_split, config.max_train_samples)
    images, skipped = load_training_images(rows, config.training_sizes)
    if not images:
        raise _no_usable_images_error(len(rows), skipped)
    logger.info("Training images per size: %s", describe_buckets(images))
    started = time.perf_counter()
    settings = ValidationSettings.of(config, train_split)
    if config.launch.total_processes > 1:
        usable = [row for row in rows if row["sample_id"] in {image.sample_id for image in images}]
        records, memory = train_in_launched_processes(base_model_path, usable, config, settings)
    else:
        validation = checkpoint_validation(base_model_path, settings)
        with peak_gpu_memory(config.device) as memory:
            records = finetune_lora_adapter(
                base_model_path, images, config.training_config(), config.adapter_path, validation
            )
    train_seconds = time.perf_counter() - started
    log_training_speed(records, memory)
    losses = [record.loss for record in records]
    summary = {
        "base_model_path": base_model_path,
        "family": config.family,
        "adapter_path": config.adapter_path,
        "steps": len(losses),
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
    validation_rows = settings.prompts.head(VALIDATION_IMAGES)[["sample_id", "prompt"]].to_dict("records")
    job = TrainingJob(
        model_path=base_model_path,
        rows=rows,
        config=config.training_config(),
        adapter_path=config.adapter_path,
        validation_rows=validation_rows if logged else [],
    )
    with tempfile.TemporaryDirectory(prefix="sciir-finetune-") as folder:
        records, memory = train_in_processes(job, config.launch, Path(folder))
        for drawn in sorted((Path(folder) / VALIDATION_DIR).glob("step-*")):
            if any(drawn.iterdir()):
                log_artifacts(drawn, f"{VALIDATION_ARTIFACT}/{drawn.name}")
    return records, memory


def write_validation_images(
    base_model_path: str, adapter: str | Path, settings: ValidationSettings, folder: Path
) -> int:
    """Generate with the base model + ``adapter`` for the fixed validation prompts into ``folder``; returns
    how many. A failed generation is logged with its reason and leaves no file.
    """
    from sciir.backends.diffusers_gen import DiffusersGenerator

    generator = DiffusersGenerator(
        pipeline_path=base_model_path,
        lora_path=str(adapter),
        steps=VALIDATION_STEPS,
        device=settings.device,
        resolution=settings.resolution,
    )
    requests = [
        GenerationRequest(
            sample_id=row.sample_id,
            prompt=row.prompt,
            seed=settings.seed,
            width=settings.resolution,
            height=settings.resolution,
        )
        for row in settings.prompts.head(VALIDATION_IMAGES).itertuples()
    ]
    written = 0
    for result in generator.generate(requests):
        if result.ok:
            (folder / f"{result.sample_id}.png").write_bytes(result.image or b"")
            written += 1
        else:
            logger.warning("No validation image for %s: %s", result.sample_id, result.failure)
    return written


def log_validation_images(
    base_model_path: str, adapter: str | Path, settings: ValidationSettings, name: str
) -> None:
    """Draw the validation images with ``adapter`` and log them to ``finetune/validation/<name>``."""
    with tempfile.TemporaryDirectory(prefix="sciir-validation-") as folder:
        if write_validation_images(base_model_path, adapter, settings, Path(folder)):
            log_artifacts(folder, f"{VALIDATION_ARTIFACT}/{name}")


def checkpoint_validation(base_model_path: str, settings: ValidationSettings) -> CheckpointCallback | None:
    """With an active MLflow run, what draws and logs the validation images of each checkpoint (under
    ``step-<step>``), so the images show how training moves the model every ``checkpoint_every`` steps."""
    import mlflow

    if mlflow.active_run() is None:
        return None
    return lambda step, folder: log_validation_images(base_model_path, folder, settings, f"step-{step:06d}")


def log_finetune_artifacts(
    finetune_summary: dict[str, Any], train_split: pd.DataFrame, params: dict[str, Any]
) -> None:
    """When an MLflow run is active, log the adapter folder and a couple of validation images to it, and
    register the adapter as a version of ``registered_model`` (``sciir.runs.model_registry``)."""
    import mlflow

    if mlflow.active_run() is None:
        return
    config = FinetuneParams.model_validate(params)
    if log_artifacts(finetune_summary["adapter_path"], ADAPTER_ARTIFACT) and config.registered_model:
        register_adapter(
            config.registered_model,
            ADAPTER_ARTIFACT,
            Path(finetune_summary["adapter_path"]) / ADAPTER_FILE,
            {key: str(finetune_summary[key]) for key in ("family", "base_model_path", "lora_rank")},
        )
    settings = ValidationSettings.of(config, train_split)
    log_validation_images(finetune_summary["base_model_path"], config.adapter_path, settings, "final")
