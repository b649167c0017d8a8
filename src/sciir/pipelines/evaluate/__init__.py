"""The ``evaluate`` pipeline: judge generated images with atomic checklists and score them (strict veto)."""

from sciir.pipelines.evaluate.pipeline import create_pipeline

__all__ = ["create_pipeline"]
