"""Human-correlation pipeline wiring: ratings + per-image checklist metrics -> correlations, plot, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.human_corr.nodes import (
    collect_ratings,
    correlate_with_ratings,
    pair_metrics_with_ratings,
    per_image_metrics,
    plot_correlations,
    summarise_correlations,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The ``human_corr`` pipeline (inputs: sample_scores, generation_manifest, benchmark, curated, figures,
    params:human_corr; outputs: ratings, correlations, human_corr_plot, human_corr_metrics)."""
    return Pipeline(
        [
            node(
                collect_ratings,
                ["generation_manifest", "benchmark", "curated", "figures", "params:human_corr"],
                "ratings",
                name="collect_ratings",
            ),
            node(per_image_metrics, "sample_scores", "human_corr_image_metrics", name="per_image_metrics"),
            node(
                pair_metrics_with_ratings,
                ["human_corr_image_metrics", "ratings"],
                "human_corr_pairs",
                name="pair_metrics_with_ratings",
            ),
            node(
                correlate_with_ratings,
                ["human_corr_pairs", "params:human_corr"],
                "correlations",
                name="correlate_with_ratings",
            ),
            node(
                plot_correlations,
                ["human_corr_pairs", "ratings", "params:human_corr"],
                "human_corr_plot",
                name="plot_correlations",
            ),
            node(
                summarise_correlations,
                ["correlations", "ratings"],
                "human_corr_metrics",
                name="summarise_correlations",
            ),
        ]
    )
