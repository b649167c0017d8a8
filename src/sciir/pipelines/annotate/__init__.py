"""Annotate: track scores, multi-hot labels, Sci-RCoT, abstract prompts and atomic checklists."""

from sciir.pipelines.annotate.pipeline import create_pipeline

__all__ = ["create_pipeline"]
