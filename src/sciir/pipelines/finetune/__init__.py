"""The ``finetune`` pipeline: a LoRA adapter for the base text-to-image model, trained on the train split."""

from sciir.pipelines.finetune.pipeline import create_pipeline

__all__ = ["create_pipeline"]
