"""Annotate pipeline wiring: curated samples + annotator -> annotations, checklists, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.annotate.aibench_nodes import create_aibench_pipeline
from sciir.pipelines.annotate.nodes import annotate


def create_pipeline(**kwargs) -> Pipeline:
    """The ``annotate`` pipeline (inputs: curated, curated_images, annotator, params:annotate)."""
    return (
        Pipeline(
            [
                node(
                    annotate,
                    ["curated", "curated_images", "annotator", "params:annotate"],
                    ["annotations", "checklists", "annotate_metrics"],
                    name="annotate_samples",
                )
            ]
        )
        + create_aibench_pipeline()
    )
