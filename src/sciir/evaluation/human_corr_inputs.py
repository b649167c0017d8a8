"""``params:human_corr`` (conf/base/parameters_human_corr.yml) and the two inputs it names.

Ratings come from a ratings file (columns image_id, rater_id, score), from the review app's store (the
catalog's ``review_ratings``, read through ``sciir.catalog.review_ratings_dataset``) or, on the embedded sample,
from the ground-truth oracle (``sciir.sample.oracle``), whose rows carry the rater id
``oracle_ground_truth``. Metric scores (columns image_id, metric, score) come from evaluate's
``sample_scores`` or from a file, so other systems' scores can be correlated too. File formats:
``sciir.user_files.rating_files`` and docs/human_corr.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sciir.evaluation.rating_pairs import refuse_unknown_samples
from sciir.sample.oracle import OracleConfig
from sciir.stats.agreement import Level
from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.correlation import Coefficient, KendallVariant
from sciir.stats.correlation_table import CorrelationSettings, FisherZ
from sciir.user_files.rating_files import read_metric_scores_file, read_ratings_file
from sciir.user_files.table_files import TableFile

logger = logging.getLogger(__name__)


class RatingsParams(OracleConfig):
    """Where the ratings come from: ``oracle`` (the embedded sample's ground truth), ``file``, or ``review``
    (the review app's store: the catalog's ``review_ratings``).

    One flat section holds the keys of both sources, so switching source with
    ``--params human_corr.ratings.source=file,human_corr.ratings.path=...`` works on top of the base
    file: the oracle's keys (``fault_penalty``, ``text_fault_kinds``) are read only by the oracle, and
    ``path`` is required by ``file`` and refused with ``oracle`` (it would otherwise be silently unused).
    """

    source: Literal["oracle", "file", "review"]
    path: str | None = None

    @model_validator(mode="after")
    def _path_matches_source(self) -> RatingsParams:
        if self.source == "file" and not self.path:
            raise ValueError("ratings.source is 'file' but ratings.path is not set")
        if self.source != "file" and self.path:
            raise ValueError(
                f"ratings.path is {self.path!r} but ratings.source is {self.source!r}: set ratings.source=file"
            )
        return self

    def describe(self) -> str:
        """The ratings input in words, for messages."""
        if self.source == "review":
            return "the review store's ratings"
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

    def describe_inputs(self) -> str:
        """The metric scores and the ratings in words, for messages."""
        scores = self.metric_scores
        scored = (
            f"metric scores file {scores.path}"
            if isinstance(scores, FileScoresParams)
            else "evaluate's sample_scores"
        )
        return f"{scored} and {self.ratings.describe()}"


def file_ratings(config: HumanCorrParams, benchmark: pd.DataFrame | None) -> pd.DataFrame:
    """The ``ratings`` table of the configured ratings file (``ratings.source: file``).

    A ratings file correlated with evaluate's scores must rate images ``<model>/<sample_id>`` of
    benchmark samples: a row that does not is refused naming the file, its line and the value. Without a
    benchmark (``None``: none was built) the ids are not checked, as one log line says; the pairing still
    counts the images without a score, and no image in common is an error.
    """
    path = str(config.ratings.path)
    ratings = read_ratings_file(path)
    if isinstance(config.metric_scores, EvaluateScoresParams):
        if benchmark is None:
            logger.info("ratings file %s: image ids not checked against a benchmark (none exists)", path)
        else:
            refuse_unknown_samples(ratings, TableFile(Path(path), "ratings file"), benchmark)
    return ratings


def review_ratings(
    config: HumanCorrParams, stored: pd.DataFrame, benchmark: pd.DataFrame | None
) -> pd.DataFrame:
    """The ``ratings`` table of the review store (``ratings.source: review``): the catalog's ``review_ratings``.

    An empty store is an error saying why (its ``attrs``: where it is and why it is empty). With evaluate's
    scores and a benchmark, every rated image must be ``<model>/<sample_id>`` of a benchmark sample, as for a
    ratings file.
    """
    source = stored.attrs.get("source", "the review store")
    if stored.empty:
        raise ValueError(
            f"human_corr: no ratings in {source}: {stored.attrs.get('absence') or 'it holds none'}; rate the "
            "images with `kedro review`, or give a ratings file with "
            "human_corr.ratings.source=file,human_corr.ratings.path=FILE"
        )
    ratings = pd.DataFrame(
        {
            "image_id": stored["image_id"].astype(str),
            "rater_id": stored["rater_id"].astype(str),
            "score": stored["score"].astype(float),
        }
    ).reset_index(drop=True)
    if isinstance(config.metric_scores, EvaluateScoresParams) and benchmark is not None:
        samples = set(benchmark["sample_id"].astype(str))
        unknown = sorted(
            {
                image
                for image in ratings["image_id"]
                if not image.rpartition("/")[0] or image.rpartition("/")[2] not in samples
            }
        )
        if unknown:
            raise ValueError(
                f"{source}: {len(unknown)} rated images are not <model>/<sample_id> of a benchmark sample, e.g. "
                f"{unknown[:5]}; fill the ratings queue from generate's images of this benchmark"
            )
    return ratings


def file_metric_scores(config: FileScoresParams) -> pd.DataFrame:
    """The metric scores of the configured file (``metric_scores.source: file``)."""
    return read_metric_scores_file(config.path)
