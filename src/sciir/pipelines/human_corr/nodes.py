"""Human-correlation nodes: ratings and metric scores per image, correlations, agreement, comparisons.

Where the two inputs come from: ``sciir.evaluation.human_corr_inputs``. Only the tables the configured
sources need are used: with a ratings file and a metric-scores file nothing else has to have run
(``sciir.catalog.optional_dataset``), and a table a source needs that does not exist is named with the
pipeline that writes it and the parameters that give a file instead. How the inputs are paired image by
image: ``sciir.evaluation.rating_pairs``; the statistics: ``sciir.stats``; the metrics logged:
``sciir.evaluation.correlation_summary``. File formats: docs/human_corr.md.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.catalog.optional_dataset import MissingInput, is_missing_input, supplied
from sciir.evaluation.correlation_summary import correlations_text
from sciir.evaluation.human_corr_inputs import (
    FileScoresParams,
    HumanCorrParams,
    file_metric_scores,
    file_ratings,
    review_ratings,
)
from sciir.evaluation.image_metrics import evaluate_metric_scores
from sciir.evaluation.plots import plot_metric_scatter
from sciir.evaluation.rating_pairs import (
    checked_group_by,
    metrics_to_correlate,
    pair_metrics_with_ratings,
    rating_label,
)
from sciir.sample.oracle import oracle_ratings
from sciir.stats.agreement import agreement_table
from sciir.stats.correlation_table import correlation_table
from sciir.stats.metric_comparison import comparison_table

logger = logging.getLogger(__name__)

# What supplies each input from a file instead of an earlier pipeline.
RATINGS_FILE = "give a ratings file with human_corr.ratings.source=file,human_corr.ratings.path=FILE"
SCORES_FILE = "give a file with human_corr.metric_scores.source=file,human_corr.metric_scores.path=FILE"


def _params(params: dict[str, Any]) -> HumanCorrParams:
    return HumanCorrParams.model_validate(params)


def collect_ratings(
    generation_manifest: pd.DataFrame | MissingInput,
    benchmark: pd.DataFrame | MissingInput,
    curated: pd.DataFrame | MissingInput,
    figures: pd.DataFrame | MissingInput,
    stored_ratings: pd.DataFrame,
    params: dict[str, Any],
) -> pd.DataFrame:
    """The ``ratings`` table from the configured source: the oracle (which needs the generation manifest,
    the benchmark, curate's and ingest's tables), a ratings file or the review app's store (the catalog's
    ``review_ratings``, empty when there is no store; neither needs the others)."""
    config = _params(params)
    known_samples = None if is_missing_input(benchmark) else benchmark
    if config.ratings.source == "file":
        return file_ratings(config, known_samples)
    if config.ratings.source == "review":
        return review_ratings(config, stored_ratings, known_samples)
    missing = "human_corr: no oracle ratings"
    manifest, samples, panels, figure_rows = (
        supplied(table, missing, RATINGS_FILE) for table in (generation_manifest, benchmark, curated, figures)
    )
    return oracle_ratings(manifest, samples, panels, figure_rows, config.ratings)


def collect_metric_scores(sample_scores: pd.DataFrame | MissingInput, params: dict[str, Any]) -> pd.DataFrame:
    """Metric scores from the configured source: evaluate's sample_scores or a file (then sample_scores
    is not needed)."""
    config = _params(params)
    if isinstance(config.metric_scores, FileScoresParams):
        return file_metric_scores(config.metric_scores)
    return evaluate_metric_scores(supplied(sample_scores, "human_corr: no metric scores", SCORES_FILE))


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
