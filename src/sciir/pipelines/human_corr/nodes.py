"""Human-correlation nodes: ratings and metric scores per image, correlations, agreement, comparisons.

Ratings come from a ratings file (columns image_id, rater_id, score) or, on the embedded sample,
from the ground-truth oracle (``sciir.sample.oracle``), whose rows carry the rater id
``oracle_ground_truth``. Metric scores (columns image_id, metric, score) come from evaluate's
``sample_scores`` or from a file, so other systems' scores can be correlated too. Each image's
rating is the mean over its raters (paper G.1). File formats: ``sciir.user_files.rating_files`` and
docs/human_corr.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sciir.evaluation.plots import plot_metric_scatter
from sciir.evaluation.scoring import IMAGE_COLUMNS, image_metrics
from sciir.sample.oracle import OracleConfig, oracle_ratings
from sciir.stats.agreement import Level, agreement_table
from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.correlation import (
    COEFFICIENTS,
    GROUP_AVERAGE,
    POOLED,
    Coefficient,
    CorrelationSettings,
    FisherZ,
    KendallVariant,
    comparison_table,
    correlation_table,
    mean_ratings,
    value_column,
)
from sciir.user_files.rating_files import read_metric_scores_file, read_ratings_file
from sciir.user_files.table_files import TableFile

logger = logging.getLogger(__name__)

# Columns of the paired table that a metric may not be named after.
PAIR_COLUMNS = ("image_id", "rating", "n_raters")


class RatingsParams(OracleConfig):
    """Where the ratings come from: ``oracle`` (the embedded sample's ground truth) or ``file``.

    One flat section holds the keys of both sources, so switching source with
    ``--params human_corr.ratings.source=file,human_corr.ratings.path=...`` works on top of the base
    file: the oracle's keys (``fault_penalty``, ``text_fault_kinds``) are read only by the oracle, and
    ``path`` is required by ``file`` and refused with ``oracle`` (it would otherwise be silently unused).
    """

    source: Literal["oracle", "file"]
    path: str | None = None

    @model_validator(mode="after")
    def _path_matches_source(self) -> RatingsParams:
        if self.source == "file" and not self.path:
            raise ValueError("ratings.source is 'file' but ratings.path is not set")
        if self.source == "oracle" and self.path:
            raise ValueError(
                f"ratings.path is {self.path!r} but ratings.source is 'oracle': set ratings.source=file"
            )
        return self

    def describe(self) -> str:
        """The ratings input in words, for messages."""
        return f"ratings file {self.path}" if self.source == "file" else "the oracle ratings"


class EvaluateScoresParams(BaseModel):
    """Metric scores from evaluate's ``sample_scores`` (the checklist metrics per image)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["evaluate"]


class FileScoresParams(BaseModel):
    """Metric scores read from a CSV / TSV / parquet file with columns image_id, metric, score."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["file"]
    path: str


class HumanCorrParams(BaseModel):
    """``params:human_corr`` (conf/base/parameters_human_corr.yml)."""

    model_config = ConfigDict(extra="forbid")

    ratings: RatingsParams
    metric_scores: Annotated[EvaluateScoresParams | FileScoresParams, Field(discriminator="source")] = Field(
        default_factory=lambda: EvaluateScoresParams(source="evaluate")
    )
    # None: every metric found in the scores.
    metrics: list[str] | None = None
    group_by: str | None = None
    kendall_variant: KendallVariant = "b"
    fisher_z: FisherZ = "arctanh"
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    agreement_level: Level = "interval"
    compare_coefficient: Coefficient = "pearson"

    def settings(self) -> CorrelationSettings:
        """The statistics settings these parameters ask for."""
        return CorrelationSettings(self.kendall_variant, self.fisher_z, self.bootstrap)


def _params(params: dict[str, Any]) -> HumanCorrParams:
    return HumanCorrParams.model_validate(params)


def collect_ratings(
    generation_manifest: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    figures: pd.DataFrame,
    params: dict[str, Any],
) -> pd.DataFrame:
    """The ``ratings`` table from the configured source (oracle or file).

    A ratings file correlated with evaluate's scores must rate images ``<model>/<sample_id>`` of
    benchmark samples: a row that does not is refused naming the file, its line and the value.
    """
    config = _params(params)
    source = config.ratings
    if source.source == "oracle":
        return oracle_ratings(generation_manifest, benchmark, curated, figures, source)
    ratings = read_ratings_file(source.path)
    if isinstance(config.metric_scores, EvaluateScoresParams):
        refuse_unknown_samples(ratings, TableFile(Path(source.path), "ratings file"), benchmark)
    return ratings


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


def evaluate_metric_scores(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """Evaluate's per-image metrics as metric scores (image_id, metric, score, model, sample_id, group,
    setting): checklist_pass_rate, text_pass, final_pass and ``<rule>.<track>`` for every aggregation
    rule evaluate computed (``sciir.evaluation.scoring.image_metrics``)."""
    table = image_metrics(sample_scores)
    described = list(IMAGE_COLUMNS)
    metrics = [column for column in table.columns if column not in IMAGE_COLUMNS]
    scores = table.melt(id_vars=described, value_vars=metrics, var_name="metric", value_name="score")
    return scores[["image_id", "metric", "score", *[c for c in described if c != "image_id"]]]


def collect_metric_scores(sample_scores: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """Metric scores from the configured source (evaluate's sample_scores or a file)."""
    source = _params(params).metric_scores
    if isinstance(source, FileScoresParams):
        return read_metric_scores_file(source.path)
    return evaluate_metric_scores(sample_scores)


def select_metrics(metric_scores: pd.DataFrame, params: dict[str, Any]) -> list[str]:
    """The metrics to correlate: the configured ones (all found when none are configured), in order.

    Raises ValueError naming a configured metric the scores lack, or a metric named like a table column.
    """
    found = list(pd.unique(metric_scores["metric"]))
    wanted = _params(params).metrics or found
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


def pair_configured_inputs(
    metric_scores: pd.DataFrame, ratings: pd.DataFrame, params: dict[str, Any]
) -> pd.DataFrame:
    """``pair_metrics_with_ratings`` naming the configured inputs in its error."""
    config = _params(params)
    scores = config.metric_scores
    scored = (
        f"metric scores file {scores.path}"
        if isinstance(scores, FileScoresParams)
        else "evaluate's sample_scores"
    )
    return pair_metrics_with_ratings(metric_scores, ratings, f"{scored} and {config.ratings.describe()}")


def _group_by(pairs: pd.DataFrame, params: HumanCorrParams) -> str | None:
    """The grouping column, checked against the paired table."""
    if params.group_by is not None and params.group_by not in pairs.columns:
        raise ValueError(
            f"group_by {params.group_by!r} is not a column of the paired table {list(pairs.columns)}"
        )
    return params.group_by


def correlate_with_ratings(pairs: pd.DataFrame, metrics: list[str], params: dict[str, Any]) -> pd.DataFrame:
    """The ``correlations`` table: each metric against the mean rating, pooled and (optionally) per group."""
    config = _params(params)
    table = correlation_table(pairs, metrics, "rating", config.settings(), _group_by(pairs, config))
    shown = [
        "metric",
        "scope",
        "group",
        "n",
        *(value_column(c, config.kendall_variant) for c in COEFFICIENTS),
    ]
    logger.info(
        "correlations with ratings:\n%s", table[shown].to_string(index=False, float_format="{:.4f}".format)
    )
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


def rating_label(ratings: pd.DataFrame) -> str:
    """Axis label that names who rated, so oracle ratings are never shown as human ones."""
    raters = sorted(ratings["rater_id"].unique())
    return f"rating ({raters[0]})" if len(raters) == 1 else f"mean rating of {len(raters)} raters"


def plot_correlations(pairs: pd.DataFrame, ratings: pd.DataFrame, metrics: list[str]) -> Any:
    """Scatter of each metric against the mean rating."""
    return plot_metric_scatter(pairs, metrics, "rating", rating_label(ratings))


def _numeric_cells(table: pd.DataFrame, prefixes: pd.Series) -> dict[str, float]:
    """The numeric cells of each row as ``<prefix of the row>.<column>``.

    Label columns are skipped even when read back from CSV as all-NaN floats.
    """
    columns = [
        column for column in table.select_dtypes("number").columns if column not in ("group", "reason")
    ]
    return {
        f"{prefix}.{column}": float(value)
        for prefix, (_, row) in zip(prefixes, table.iterrows(), strict=True)
        for column, value in row[columns].items()
    }


def summarise_correlations(
    correlations: pd.DataFrame, agreement: pd.DataFrame, comparisons: pd.DataFrame, ratings: pd.DataFrame
) -> dict[str, float]:
    """``human_corr_metrics``: pooled and group-average coefficients, agreement, comparisons, rating counts."""
    pooled = correlations[correlations["scope"] == POOLED]
    averaged = correlations[correlations["scope"] == GROUP_AVERAGE]
    metrics = _numeric_cells(pooled, pooled["metric"])
    metrics |= _numeric_cells(averaged, averaged["metric"] + f".{GROUP_AVERAGE}")
    metrics |= _numeric_cells(
        comparisons, "compare." + comparisons["metric_a"] + "_vs_" + comparisons["metric_b"]
    )
    metrics |= {f"agreement.{row.statistic}": float(row.value) for row in agreement.itertuples(index=False)}
    metrics["rated_images"] = float(ratings["image_id"].nunique())
    metrics["raters"] = float(ratings["rater_id"].nunique())
    return metrics
