"""The ``human_corr`` pipeline: correlate checklist metrics with ratings (oracle on the embedded sample)."""

from sciir.pipelines.human_corr.pipeline import create_pipeline

__all__ = ["create_pipeline"]
