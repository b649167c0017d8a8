"""Human-correlation nodes: ratings and metric scores per image, correlations, agreement, comparisons.

Where the two inputs come from: ``sciir.evaluation.human_corr_inputs``; how they are paired image by
image: ``sciir.evaluation.rating_pairs``; the statistics: ``sciir.stats``; the metrics logged:
``sciir.evaluation.correlation_summary``. File formats: docs/human_corr.md.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.evaluation.correlation_summary import correlations_text
from sciir.evaluation.human_corr_inputs import (
    HumanCorrParams,
    configured_metric_scores,
    configured_ratings,
)
from sciir.evaluation.plots import plot_metric_scatter
from sciir.evaluation.rating_pairs import (
    checked_group_by,
    metrics_to_correlate,
    pair_metrics_with_ratings,
    rating_label,
)
from sciir.stats.agreement import agreement_table
from sciir.stats.correlation_table import correlation_table
from sciir.stats.metric_comparison import comparison_table

logger = logging.getLogger(__name__)


def _params(params: dict[str, Any]) -> HumanCorrParams:
    return HumanCorrParams.model_validate(params)


def collect_ratings(
    generation_manifest: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    figures: pd.DataFrame,
    params: dict[str, Any],
) -> pd.DataFrame:
    """The ``ratings`` table from the configured source (oracle or file)."""
    return configured_ratings(_params(params), generation_manifest, benchmark, curated, figures)


def collect_metric_scores(sample_scores: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """Metric scores from the configured source (evaluate's sample_scores or a file)."""
    return configured_metric_scores(_params(params), sample_scores)


def select_metrics(metric_scores: pd.DataFrame, params: dict[str, Any]) -> list[str]:
    """The metrics to correlate: the configured ones (all found when none are configured), in order."""
    return metrics_to_correlate(metric_scores, _params(params).metrics)


def pair_configured_inputs(
    metric_scores: pd.DataFrame, ratings: pd.DataFrame, params: dict[str, Any]
) -> pd.DataFrame:
    """``pair_metrics_with_ratings`` naming the configured inputs in its error."""
    return pair_metrics_with_ratings(metric_scores, ratings, _params(params).describe_inputs())


def correlate_with_ratings(pairs: pd.DataFrame, metrics: list[str], params: dict[str, Any]) -> pd.DataFrame:
    """The ``correlations`` table: each metric against the mean rating, pooled and (optionally) per group."""
    config = _params(params)
    table = correlation_table(
        pairs, metrics, "rating", config.settings(), checked_group_by(pairs, config.group_by)
    )
    logger.info("correlations with ratings:\n%s", correlations_text(table, config.kendall_variant))
    return table


def compare_metrics(pairs: pd.DataFrame, metrics: list[str], params: dict[str, Any]) -> pd.DataFrame:
    """The ``metric_comparisons`` table: every pair of metrics, Williams' test and a paired bootstrap."""
    config = _params(params)
    return comparison_table(pairs, metrics, "rating", config.compare_coefficient, config.settings())


def rater_agreement(ratings: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``rater_agreement`` table: Krippendorff's alpha and mean pairwise Spearman between raters.

    With a single rater (the oracle on the embedded sample) both are NaN with the reason logged.
    """
    return agreement_table(ratings, _params(params).agreement_level)


def plot_correlations(pairs: pd.DataFrame, ratings: pd.DataFrame, metrics: list[str]) -> Any:
    """Scatter of each metric against the mean rating."""
    return plot_metric_scatter(pairs, metrics, "rating", rating_label(ratings))
