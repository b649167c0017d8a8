"""Validation images: the base model with an adapter (a checkpoint's or the final one) draws the first
prompts of the train split, into a folder or into the active MLflow run under ``finetune/validation/<name>``,
so the images show how training moves the model."""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd

from sciir.backends.base import GenerationRequest
from sciir.backends.diffusers_gen import DiffusersGenerator
from sciir.runs.tracking import log_artifacts
from sciir.training.config import LoraTrainConfig
from sciir.training.loop import CheckpointCallback

logger = logging.getLogger(__name__)

VALIDATION_IMAGES = 2
VALIDATION_STEPS = 4
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

    def prompt_rows(self) -> list[dict[str, Any]]:
        """The prompts drawn, as records of sample_id and prompt (what a training process is given)."""
        records = self.prompts.head(VALIDATION_IMAGES)[["sample_id", "prompt"]].to_dict("records")
        return cast("list[dict[str, Any]]", records)  # the columns named above


def write_validation_images(
    base_model_path: str, adapter: str | Path, settings: ValidationSettings, folder: Path
) -> int:
    """Generate with the base model + ``adapter`` for the fixed validation prompts into ``folder``; returns
    how many. A failed generation is logged with its reason and leaves no file.
    """
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


def log_drawn_validation_images(folder: Path) -> None:
    """Log each ``folder/step-<step>`` that training processes drew images into to
    ``finetune/validation/step-<step>``."""
    for drawn in sorted(folder.glob("step-*")):
        if any(drawn.iterdir()):
            log_artifacts(drawn, f"{VALIDATION_ARTIFACT}/{drawn.name}")


def checkpoint_validation(base_model_path: str, settings: ValidationSettings) -> CheckpointCallback | None:
    """With an active MLflow run, what draws and logs the validation images of each checkpoint (under
    ``step-<step>``), so the images show how training moves the model every ``checkpoint_every`` steps."""
    import mlflow

    if mlflow.active_run() is None:
        return None
    return lambda step, folder: log_validation_images(base_model_path, folder, settings, f"step-{step:06d}")
