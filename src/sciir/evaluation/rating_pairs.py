"""Metric scores paired with ratings, image by image: the table human_corr correlates.

Each image's rating is the mean over its raters (paper G.1). Only images with both metric scores and a
rating are paired; a rating of an image the benchmark does not hold is refused before that.
"""

from __future__ import annotations

import logging

import pandas as pd

from sciir.user_files.table_files import TableFile

logger = logging.getLogger(__name__)

# Columns of the paired table that a metric may not be named after.
PAIR_COLUMNS = ("image_id", "rating", "n_raters")


def mean_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """Consensus per image: the mean score over its raters (columns image_id, rating, n_raters)."""
    grouped = ratings.groupby("image_id", sort=True)["score"]
    return pd.DataFrame({"rating": grouped.mean(), "n_raters": grouped.size()}).reset_index()


def refuse_unknown_samples(ratings: pd.DataFrame, source: TableFile, benchmark: pd.DataFrame) -> None:
    """TableFileError for rated image ids that are not ``<model>/<sample_id>`` of a benchmark sample."""
    samples = set(benchmark["sample_id"].astype(str))

    def known(image_id: str) -> bool:
        model, _, sample = image_id.rpartition("/")
        return bool(model) and sample in samples

    example = (
        f"'<model>/{sorted(samples)[0]}'" if samples else "'<model>/<sample_id>' (the benchmark is empty)"
    )
    source.refuse(ratings, "image_id", known, f"<model>/<sample_id> of a benchmark sample, e.g. {example}")


def metrics_to_correlate(metric_scores: pd.DataFrame, wanted: list[str] | None) -> list[str]:
    """The metrics to correlate: ``wanted`` (all found when None), in order.

    Raises ValueError naming a wanted metric the scores lack, or a metric named like a table column.
    """
    found = list(pd.unique(metric_scores["metric"]))
    wanted = wanted or found
    missing = [metric for metric in wanted if metric not in found]
    if missing:
        raise ValueError(f"metrics {missing} have no scores (scores have {found})")
    reserved = set(PAIR_COLUMNS) | (set(metric_scores.columns) - {"metric", "score"})
    clashing = [metric for metric in wanted if metric in reserved]
    if clashing:
        raise ValueError(f"metrics {clashing} are named like columns of the paired table; rename them")
    return wanted


def pair_metrics_with_ratings(
    metric_scores: pd.DataFrame, ratings: pd.DataFrame, inputs: str = "the metric scores and the ratings"
) -> pd.DataFrame:
    """Per image: its metric scores (one column each), its extra columns, mean rating and rater count.

    Only images with both metric scores and a rating are kept; unmatched images on either side are
    logged. No image in common is an error naming ``inputs`` and an image id of each side.
    """
    wide = metric_scores.pivot(index="image_id", columns="metric", values="score")
    extra = [column for column in metric_scores.columns if column not in ("image_id", "metric", "score")]
    described = metric_scores.drop_duplicates("image_id").set_index("image_id")[extra]
    scored = described.join(wide).reset_index()
    consensus = mean_ratings(ratings)
    pairs = scored.merge(consensus, on="image_id", how="inner")
    if pairs.empty:
        raise ValueError(
            f"no image is both scored and rated: {inputs} have no image_id in common "
            f"({len(scored)} scored images, e.g. {_first(scored['image_id'])}; "
            f"{len(consensus)} rated images, e.g. {_first(consensus['image_id'])}); "
            "expected the same ids on both sides, '<model>/<sample_id>' for images this project generated"
        )
    unrated, unscored = len(scored) - len(pairs), len(consensus) - len(pairs)
    if unrated or unscored:
        logger.warning(
            "%d scored images have no rating; %d rated images have no metric scores", unrated, unscored
        )
    return pairs


def _first(ids: pd.Series) -> str:
    return repr(sorted(ids.astype(str))[0]) if len(ids) else "none"


def checked_group_by(pairs: pd.DataFrame, group_by: str | None) -> str | None:
    """The grouping column, checked against the paired table."""
    if group_by is not None and group_by not in pairs.columns:
        raise ValueError(f"group_by {group_by!r} is not a column of the paired table {list(pairs.columns)}")
    return group_by


def rating_label(ratings: pd.DataFrame) -> str:
    """Axis label that names who rated, so oracle ratings are never shown as human ones."""
    raters = sorted(ratings["rater_id"].unique())
    return f"rating ({raters[0]})" if len(raters) == 1 else f"mean rating of {len(raters)} raters"
