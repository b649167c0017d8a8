"""The ``ingest`` pipeline: open-access articles to licence-checked figure records."""

from sciir.pipelines.ingest.pipeline import create_pipeline

__all__ = ["create_pipeline"]
