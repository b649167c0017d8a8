"""Human-correlation nodes: ratings per image, checklist metrics per image, their correlations.

Ratings come from a ratings file (columns image_id, rater_id, score) or, on the embedded sample,
from the ground-truth oracle (``sciir.oracle``), whose rows carry the rater id
``oracle_ground_truth``. Each image's rating is the mean over its raters (paper G.1).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from sciir.oracle import ORACLE_RATER_ID, OracleConfig, OracleInputError, rate_image
from sciir.plots import plot_metric_scatter
from sciir.scoring import image_metrics
from sciir.statistics import correlation_table, mean_ratings

logger = logging.getLogger(__name__)

RATING_COLUMNS = ("image_id", "rater_id", "score")
MetricName = Literal["checklist_pass_rate", "text_pass", "final_pass"]
IMAGE_METRICS: tuple[str, ...] = get_args(MetricName)
_SHOWN_REASONS = 5


class OracleRatingsParams(OracleConfig):
    """Ratings computed from the embedded sample's ground truth."""

    source: Literal["oracle"]


class FileRatingsParams(BaseModel):
    """Ratings read from a CSV / TSV / parquet file with columns image_id, rater_id, score."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["file"]
    path: str


class HumanCorrParams(BaseModel):
    """``params:human_corr`` (conf/base/parameters_human_corr.yml)."""

    model_config = ConfigDict(extra="forbid")

    ratings: Annotated[OracleRatingsParams | FileRatingsParams, Field(discriminator="source")]
    metrics: list[MetricName] = Field(default_factory=lambda: list(IMAGE_METRICS))


def read_ratings_file(path: str | Path) -> pd.DataFrame:
    """A ratings table from CSV, TSV or parquet; raises ValueError naming the file and what is wrong."""
    path = Path(path)
    readers: dict[str, Callable[[Path], pd.DataFrame]] = {
        ".csv": pd.read_csv,
        ".tsv": lambda p: pd.read_csv(p, sep="\t"),
        ".parquet": pd.read_parquet,
    }
    if path.suffix not in readers:
        raise ValueError(f"ratings file {path}: unknown format {path.suffix!r} (use {', '.join(readers)})")
    table = readers[path.suffix](path)
    missing = [column for column in RATING_COLUMNS if column not in table.columns]
    if missing:
        raise ValueError(f"ratings file {path} lacks columns {missing}")
    scores = pd.to_numeric(table["score"], errors="coerce")
    bad = table.index[scores.isna()].tolist()
    if bad:
        raise ValueError(f"ratings file {path}: rows {bad[:_SHOWN_REASONS]} have no numeric score")
    return pd.DataFrame(
        {
            "image_id": table["image_id"].astype(str),
            "rater_id": table["rater_id"].astype(str),
            "score": scores,
        }
    )


def _generated_panels(
    generation_manifest: pd.DataFrame, benchmark: pd.DataFrame, curated: pd.DataFrame, figures: pd.DataFrame
) -> pd.DataFrame:
    """Benchmark images a generator made, with the source figure path and panel they stand for."""
    made = generation_manifest[
        (generation_manifest["status"] == "ok")
        & generation_manifest["sample_id"].isin(benchmark["sample_id"])
    ]
    panels = curated[["sample_id", "figure_uid", "panel_index"]].drop_duplicates("sample_id")
    sources = figures[["figure_uid", "image_path"]].drop_duplicates("figure_uid")
    return made.merge(panels, on="sample_id", how="left").merge(sources, on="figure_uid", how="left")


def _oracle_rating(row: Any, config: OracleConfig) -> float:
    """Oracle score of one generated panel; OracleInputError names the image when it cannot be rated."""
    image_id = f"{row.model}/{row.sample_id}"
    if pd.isna(row.image_path) or pd.isna(row.panel_index):
        raise OracleInputError(f"{image_id}: no curated panel or source figure for sample {row.sample_id}")
    try:
        return rate_image(row.image_path, int(row.panel_index), row.meta, config)
    except OracleInputError as exc:
        raise OracleInputError(f"{image_id}: {exc}") from exc


def oracle_ratings(
    generation_manifest: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    figures: pd.DataFrame,
    config: OracleConfig,
) -> pd.DataFrame:
    """Oracle ratings of every benchmark image a generator made (failed generations have no image to rate).

    An image whose ground truth or meta cannot be used gets no rating; each is logged with its reason.
    """
    made = generation_manifest[generation_manifest["status"] == "ok"]
    logger.info(
        "oracle: %d generations failed and have no image to rate", len(generation_manifest) - len(made)
    )
    rows, skipped = [], []
    for row in _generated_panels(generation_manifest, benchmark, curated, figures).itertuples(index=False):
        try:
            score = _oracle_rating(row, config)
        except OracleInputError as exc:
            skipped.append(str(exc))
            continue
        rows.append({"image_id": f"{row.model}/{row.sample_id}", "rater_id": ORACLE_RATER_ID, "score": score})
    for reason in skipped:
        logger.warning("oracle could not rate %s", reason)
    logger.info("oracle rated %d images, skipped %d", len(rows), len(skipped))
    return pd.DataFrame(rows, columns=list(RATING_COLUMNS))


def collect_ratings(
    generation_manifest: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    figures: pd.DataFrame,
    params: dict[str, Any],
) -> pd.DataFrame:
    """The ``ratings`` table from the configured source (oracle or file)."""
    source = HumanCorrParams.model_validate(params).ratings
    if isinstance(source, FileRatingsParams):
        return read_ratings_file(source.path)
    return oracle_ratings(generation_manifest, benchmark, curated, figures, source)


def per_image_metrics(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """The checklist metrics of every judged image (see ``sciir.scoring.image_metrics``)."""
    return image_metrics(sample_scores)


def pair_metrics_with_ratings(metrics: pd.DataFrame, ratings: pd.DataFrame) -> pd.DataFrame:
    """Images with both checklist metrics and a mean rating; unmatched images on either side are logged."""
    consensus = mean_ratings(ratings)
    pairs = metrics.merge(consensus, on="image_id", how="inner")
    unrated = len(metrics) - len(pairs)
    unscored = len(consensus) - len(pairs)
    if unrated or unscored:
        logger.warning(
            "%d judged images have no rating; %d rated images have no checklist metrics", unrated, unscored
        )
    return pairs


def correlate_with_ratings(pairs: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``correlations`` table: each configured metric against the mean rating."""
    metrics = HumanCorrParams.model_validate(params).metrics
    table = correlation_table(pairs, metrics, "rating")
    logger.info(
        "correlations with ratings:\n%s", table.to_string(index=False, float_format=lambda x: f"{x:.4g}")
    )
    return table


def rating_label(ratings: pd.DataFrame) -> str:
    """Axis label that names who rated, so oracle ratings are never shown as human ones."""
    raters = sorted(ratings["rater_id"].unique())
    return f"rating ({raters[0]})" if len(raters) == 1 else f"mean rating of {len(raters)} raters"


def plot_correlations(pairs: pd.DataFrame, ratings: pd.DataFrame, params: dict[str, Any]) -> Any:
    """Scatter of each configured metric against the mean rating."""
    metrics = HumanCorrParams.model_validate(params).metrics
    return plot_metric_scatter(pairs, metrics, "rating", rating_label(ratings))


def summarise_correlations(correlations: pd.DataFrame, ratings: pd.DataFrame) -> dict[str, float]:
    """``human_corr_metrics``: every coefficient, p-value and n per metric, plus rating counts."""
    metrics: dict[str, float] = {}
    for record in correlations.to_dict("records"):
        metric = record.pop("metric")
        metrics |= {f"{metric}.{key}": float(value) for key, value in record.items()}
    metrics["rated_images"] = float(ratings["image_id"].nunique())
    metrics["raters"] = float(ratings["rater_id"].nunique())
    return metrics
