"""Human-correlation pipeline wiring: ratings + metric scores -> correlations, agreement, comparisons, plot."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.evaluation.correlation_summary import summarise_correlations
from sciir.pipelines.human_corr.nodes import (
    collect_metric_scores,
    collect_ratings,
    compare_metrics,
    correlate_with_ratings,
    pair_configured_inputs,
    plot_correlations,
    rater_agreement,
    select_metrics,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The ``human_corr`` pipeline (inputs: sample_scores, generation_manifest, benchmark, curated, figures,
    review_ratings, params:human_corr; outputs: ratings, correlations, rater_agreement, metric_comparisons, human_corr_plot,
    human_corr_metrics)."""
    return Pipeline(
        [
            node(
                collect_ratings,
                [
                    "generation_manifest",
                    "benchmark",
                    "curated",
                    "figures",
                    "review_ratings",
                    "params:human_corr",
                ],
                "ratings",
                name="collect_ratings",
            ),
            node(
                collect_metric_scores,
                ["sample_scores", "params:human_corr"],
                "human_corr_metric_scores",
                name="collect_metric_scores",
            ),
            node(
                select_metrics,
                ["human_corr_metric_scores", "params:human_corr"],
                "human_corr_metric_names",
                name="select_metrics",
            ),
            node(
                pair_configured_inputs,
                ["human_corr_metric_scores", "ratings", "params:human_corr"],
                "human_corr_pairs",
                name="pair_metrics_with_ratings",
            ),
            node(
                correlate_with_ratings,
                ["human_corr_pairs", "human_corr_metric_names", "params:human_corr"],
                "correlations",
                name="correlate_with_ratings",
            ),
            node(
                compare_metrics,
                ["human_corr_pairs", "human_corr_metric_names", "params:human_corr"],
                "metric_comparisons",
                name="compare_metrics",
            ),
            node(
                rater_agreement, ["ratings", "params:human_corr"], "rater_agreement", name="rater_agreement"
            ),
            node(
                plot_correlations,
                ["human_corr_pairs", "ratings", "human_corr_metric_names"],
                "human_corr_plot",
                name="plot_correlations",
            ),
            node(
                summarise_correlations,
                ["correlations", "rater_agreement", "metric_comparisons", "ratings"],
                "human_corr_metrics",
                name="summarise_correlations",
            ),
        ]
    )
