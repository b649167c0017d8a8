"""The ``curate`` pipeline: figures to standardised, geometry-checked panels."""

from sciir.pipelines.curate.pipeline import create_pipeline

__all__ = ["create_pipeline"]
