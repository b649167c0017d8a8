"""Finetune nodes: base model -> LoRA adapter trained on the train split -> summary and metrics. Each reads
``params:finetune`` (:class:`sciir.training.finetune_params.FinetuneParams`) and delegates to
:mod:`sciir.training`."""

from __future__ import annotations

from typing import Any

import pandas as pd

from sciir.training.finetune_params import FinetuneParams, base_model_folder
from sciir.training.finetune_run import finetune_on_train_split, log_finetune_run


def prepare_base_model(params: dict[str, Any]) -> str:
    """The base pipeline's folder, the tiny one built when missing
    (:func:`sciir.training.finetune_params.base_model_folder`)."""
    return base_model_folder(FinetuneParams.model_validate(params))


def finetune_lora(
    train_split: pd.DataFrame, base_model_path: str, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, list[dict[str, float]]], dict[str, float]]:
    """Train the LoRA adapter; its summary, per-step history and metrics
    (:func:`sciir.training.finetune_run.finetune_on_train_split`)."""
    return finetune_on_train_split(train_split, base_model_path, FinetuneParams.model_validate(params))


def log_finetune_artifacts(
    finetune_summary: dict[str, Any], train_split: pd.DataFrame, params: dict[str, Any]
) -> None:
    """Log the adapter and its validation images to the active MLflow run, and register the adapter
    (:func:`sciir.training.finetune_run.log_finetune_run`)."""
    log_finetune_run(finetune_summary, train_split, FinetuneParams.model_validate(params))
