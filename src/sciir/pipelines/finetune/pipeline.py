"""Finetune pipeline wiring: train split -> base model + LoRA adapter -> summary, loss history, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.finetune.nodes import finetune_lora, log_finetune_artifacts, prepare_base_model


def create_pipeline(**kwargs) -> Pipeline:
    """The ``finetune`` pipeline (inputs: train_split, params:finetune;
    outputs: finetune_summary, finetune_metric_history, finetune_metrics)."""
    return Pipeline(
        [
            node(
                prepare_base_model, "params:finetune", "finetune_base_model_path", name="prepare_base_model"
            ),
            node(
                finetune_lora,
                ["train_split", "finetune_base_model_path", "params:finetune"],
                ["finetune_summary", "finetune_metric_history", "finetune_metrics"],
                name="finetune_lora",
            ),
            node(
                log_finetune_artifacts,
                ["finetune_summary", "train_split", "params:finetune"],
                None,
                name="log_finetune_artifacts",
            ),
        ]
    )
