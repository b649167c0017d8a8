"""Ingest pipeline wiring: source folder -> articles and figures tables -> metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.ingest.nodes import ingest_articles, prepare_source, summarise_ingest


def create_pipeline(**kwargs) -> Pipeline:
    """The ``ingest`` pipeline (inputs: params:ingest; outputs: articles, figures, ingest_metrics)."""
    return Pipeline(
        [
            node(prepare_source, "params:ingest", "source_articles", name="prepare_source"),
            node(
                ingest_articles,
                ["source_articles", "params:ingest"],
                ["articles", "figures"],
                name="ingest_articles",
            ),
            node(summarise_ingest, ["articles", "figures"], "ingest_metrics", name="summarise_ingest"),
        ]
    )
