"""The ``generate`` pipeline: benchmark prompts x configured generators -> images and a manifest."""

from sciir.pipelines.generate.pipeline import create_pipeline

__all__ = ["create_pipeline"]
