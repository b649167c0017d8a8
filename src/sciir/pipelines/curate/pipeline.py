"""Curate pipeline wiring: kept figures -> panels -> filtered curated table and review queue, standardised
images, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.curate.nodes import curate_figures, summarise_curate
from sciir.pipelines.curate.screen_nodes import screen_panels


def create_pipeline(**kwargs) -> Pipeline:
    """The ``curate`` pipeline (inputs: figures, articles, the screener model, params:curate, and the review
    app's panel decisions, ``review_decisions``)."""
    return Pipeline(
        [
            node(
                curate_figures,
                ["figures", "articles", "params:curate"],
                ["curate_panels", "curated_images"],
                name="curate_figures",
            ),
            node(
                screen_panels,
                ["curate_panels", "curated_images", "screener", "params:curate", "review_decisions"],
                ["curated", "review_queue", "curate_screen_metrics"],
                name="screen_panels",
            ),
            node(summarise_curate, "curated", "curate_metrics", name="summarise_curate"),
        ]
    )
