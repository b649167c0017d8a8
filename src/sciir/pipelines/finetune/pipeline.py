"""Finetune pipeline wiring: training data (train split, release or folder of pairs) -> base model + LoRA
adapter (scored every eval_every steps on held-out samples by the judge) -> summary, loss history, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.finetune.checkpoint_scoring import checkpoint_scorer
from sciir.pipelines.finetune.nodes import (
    collect_training_rows,
    finetune_lora,
    log_finetune_artifacts,
    prepare_base_model,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The ``finetune`` pipeline (inputs: train_split, validation_split, checklists, judge, generators,
    params:finetune, params:generate, params:evaluate;
    outputs: finetune_summary, finetune_metric_history, finetune_metrics)."""
    return Pipeline(
        [
            node(
                collect_training_rows,
                ["train_split", "params:finetune"],
                "finetune_training_rows",
                name="collect_training_rows",
            ),
            node(
                prepare_base_model, "params:finetune", "finetune_base_model_path", name="prepare_base_model"
            ),
            node(
                checkpoint_scorer,
                [
                    "finetune_training_rows",
                    "validation_split",
                    "checklists",
                    "judge",
                    "generators",
                    "finetune_base_model_path",
                    "params:finetune",
                    "params:generate",
                    "params:evaluate",
                ],
                "finetune_checkpoint_scorer",
                name="checkpoint_scorer",
            ),
            node(
                finetune_lora,
                [
                    "finetune_training_rows",
                    "finetune_base_model_path",
                    "params:finetune",
                    "finetune_checkpoint_scorer",
                ],
                ["finetune_summary", "finetune_metric_history", "finetune_metrics"],
                name="finetune_lora",
            ),
            node(
                log_finetune_artifacts,
                ["finetune_summary", "finetune_training_rows", "params:finetune"],
                None,
                name="log_finetune_artifacts",
            ),
        ]
    )
