"""Finetune nodes: training data -> base model -> LoRA adapter -> summary and metrics. Each reads
``params:finetune`` (:class:`sciir.training.finetune_params.FinetuneParams`) and delegates to
:mod:`sciir.training`.

The training data (``finetune.train_data``) is bench_select's train split, the train split of a release
folder, or a folder of image + caption pairs (``sciir.user_files.training_pairs``): with either folder
nothing else has to have run, and without one a train split that does not exist is named with the
pipeline that writes it and the parameters that give a folder instead.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sciir.catalog.optional_dataset import MissingInput, supplied
from sciir.catalog.release_dataset import split_row_groups
from sciir.pipelines.finetune.checkpoint_scoring import SUMMARY_KEY, CheckpointScorer, Unscored, registry_tags
from sciir.training.finetune_params import FinetuneParams, base_model_folder
from sciir.training.finetune_run import finetune_on_train_split, log_finetune_run
from sciir.user_files.training_pairs import read_pair_folder, unpack_release_train

TRAINING_FOLDER = (
    "give a release folder or a folder of image + caption pairs with "
    "finetune.train_data.source=release (or folder),finetune.train_data.path=FOLDER"
)


def collect_training_rows(train_split: pd.DataFrame | MissingInput, params: dict[str, Any]) -> pd.DataFrame:
    """The rows to train on (sample_id, prompt, image_path) from the configured ``train_data`` source."""
    config = FinetuneParams.model_validate(params)
    data = config.train_data
    if data.source == "folder":
        return read_pair_folder(str(data.path))
    if data.source == "release":
        groups = split_row_groups(str(data.path), "train")
        return unpack_release_train(groups, str(data.path), data.release_images, config.max_train_samples)
    return supplied(train_split, "finetune: no training data", TRAINING_FOLDER)


def prepare_base_model(params: dict[str, Any]) -> str:
    """The base pipeline's folder, the tiny one built when missing
    (:func:`sciir.training.finetune_params.base_model_folder`)."""
    return base_model_folder(FinetuneParams.model_validate(params))


def finetune_lora(
    training_rows: pd.DataFrame,
    base_model_path: str,
    params: dict[str, Any],
    scorer: CheckpointScorer | Unscored | None = None,
) -> tuple[dict[str, Any], dict[str, list[dict[str, float]]], dict[str, float]]:
    """Train the LoRA adapter; its summary, per-step history and metrics
    (:func:`sciir.training.finetune_run.finetune_on_train_split`). With ``scorer``, the adapter is scored
    every ``eval_every`` steps, the best-scored one delivered, and the summary's ``checkpoint_scoring``
    section holds every step's scores (``sciir.pipelines.finetune.checkpoint_scoring``)."""
    config = FinetuneParams.model_validate(params)
    active = scorer if isinstance(scorer, CheckpointScorer) else None
    summary, history, metrics = finetune_on_train_split(training_rows, base_model_path, config, active)
    if active is not None:
        summary[SUMMARY_KEY] = active.summary(int(summary["adapter_step"]))
    return summary, history, metrics


def log_finetune_artifacts(
    finetune_summary: dict[str, Any], training_rows: pd.DataFrame, params: dict[str, Any]
) -> None:
    """Log the adapter and its validation images to the active MLflow run, and register the adapter, tagged
    with the step and score of a scored adapter (:func:`sciir.training.finetune_run.log_finetune_run`)."""
    config = FinetuneParams.model_validate(params)
    log_finetune_run(finetune_summary, training_rows, config, registry_tags(finetune_summary))
