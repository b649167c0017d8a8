"""Curate pipeline wiring: kept figures -> panels -> curated table, standardised images, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.curate.nodes import curate_figures, summarise_curate


def create_pipeline(**kwargs) -> Pipeline:
    """The ``curate`` pipeline (inputs: figures, articles, params:curate)."""
    return Pipeline(
        [
            node(
                curate_figures,
                ["figures", "articles", "params:curate"],
                ["curated", "curated_images"],
                name="curate_figures",
            ),
            node(summarise_curate, "curated", "curate_metrics", name="summarise_curate"),
        ]
    )
