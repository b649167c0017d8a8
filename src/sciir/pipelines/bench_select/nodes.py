"""Bench-select nodes: SciIR-Bench, the leakage-free train and validation splits, the AIBench set, the
release card and metrics."""

from __future__ import annotations

import logging
import re
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from sciir.aibench.sampling import aibench_set
from sciir.selection.benchmark import (
    GROUP_NAMES,
    SETTINGS,
    benchmark_table,
    candidates,
    pick_per_group,
    train_candidates,
    train_table,
)
from sciir.selection.leakage import (
    LEAK_COLUMNS,
    LeakSources,
    assert_no_leakage,
    curated_hashes,
    find_leaks,
    image_hashes,
    source_articles,
    source_figures,
)
from sciir.selection.quality_control import quality_control
from sciir.selection.validation_split import split_by_article

logger = logging.getLogger(__name__)

ATTRIBUTION_COLUMNS = ("sample_id", "split", "doi", "url", "figure_id", "licence_name", "licence_url")


class AIBenchSetParams(BaseModel):
    """``params:bench_select.aibench_set``: papers uniform across venues, one main illustration each."""

    model_config = ConfigDict(extra="forbid")

    # The ``articles`` column that names a paper's venue (journal or conference).
    venue_column: str = "journal"
    # Papers in the set; None: as many from each venue as the smallest venue has.
    n_papers: int | None = Field(default=None, ge=1)


class BenchSelectParams(BaseModel):
    """``params:bench_select`` (conf/base/parameters_bench_select.yml)."""

    model_config = ConfigDict(extra="forbid")

    n_per_group: int = Field(default=200, ge=1)
    seed: int = 0
    # The paper's "more than three" terms.
    min_terms: int = Field(default=4, ge=0)
    require_text_checks: bool = True
    iqr_filter: bool = True
    iqr_min_samples: int = Field(default=20, ge=4)
    image_dir: str = "data/03_primary/images"
    # Images whose perceptual hashes differ in at most this many of 64 bits are copies of one another.
    leakage_max_distance: int = Field(default=3, ge=0, le=31)
    # Share of the train split's articles held out, whole, as the validation split (0: none).
    validation_fraction: float = Field(default=0.0, ge=0.0, lt=1.0)
    aibench_set: AIBenchSetParams = AIBenchSetParams()


def _log(note: str) -> None:
    logger.info("bench_select: %s", note)


def select_benchmark(
    annotations: pd.DataFrame, checklists: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """SciIR-Bench: candidates, statistical quality control (term density, IQR filters), semiotic groups,
    seeded draw, difficulty settings; and how many candidates each filter left."""
    settings = BenchSelectParams.model_validate(params)
    pool = candidates(annotations, checklists, settings.require_text_checks)
    _log(f"{len(pool)} candidates of {len(annotations)} annotated samples")
    pool, counts = quality_control(
        pool, settings.min_terms, settings.iqr_filter, settings.iqr_min_samples, _log
    )
    selected = pick_per_group(pool, settings.n_per_group, settings.seed)
    return benchmark_table(selected), counts


def split_train(
    annotations: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    curated_images: dict[str, Any],
    params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The leak-free train pool (every labelled sample outside the benchmark, with its Sci-RCoT and image
    path, less those that leak a benchmark sample) and the leakage report (what was removed, and why)."""
    settings = BenchSelectParams.model_validate(params)
    benchmark_ids = [str(sample) for sample in benchmark["sample_id"]]
    candidates_ids = train_candidates(annotations, benchmark_ids)
    sources = LeakSources(
        figures=source_figures(curated),
        hashes=image_hashes(curated_images, [*benchmark_ids, *candidates_ids], curated_hashes(curated)),
        max_distance=settings.leakage_max_distance,
    )
    leaks = find_leaks(candidates_ids, benchmark_ids, sources)
    kept = [sample for sample in candidates_ids if sample not in set(leaks["sample_id"])]
    assert_no_leakage(kept, benchmark_ids, sources)
    counts = leaks["reason"].value_counts().to_dict()
    logger.info(
        "bench_select: train pool of %d samples; %d removed as leaks of the benchmark %s",
        len(kept),
        len(leaks),
        counts or "",
    )
    return train_table(annotations, kept, settings.image_dir), leaks[list(LEAK_COLUMNS)]


def split_validation(
    train_pool: pd.DataFrame, curated: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The train split and the validation split (``validation_fraction`` of the train pool's articles,
    whole: no article on both sides), both with the train split's columns."""
    settings = BenchSelectParams.model_validate(params)
    articles = source_articles(curated)
    split = split_by_article(train_pool["sample_id"], articles, settings.validation_fraction, settings.seed)
    _log(split.note)
    validation_ids = set(split.validation)
    validation = train_pool["sample_id"].isin(validation_ids)
    return (
        train_pool[~validation].reset_index(drop=True),
        train_pool[validation].reset_index(drop=True),
    )


def select_aibench_set(
    annotations: pd.DataFrame,
    aibench_graphs: pd.DataFrame,
    curated: pd.DataFrame,
    articles: pd.DataFrame,
    params: dict[str, Any],
) -> pd.DataFrame:
    """The AIBench set: papers uniform across venues, one main illustration each
    (``sciir.aibench.sampling``)."""
    settings = BenchSelectParams.model_validate(params)
    chosen = aibench_set(
        annotations,
        aibench_graphs,
        curated,
        articles,
        settings.aibench_set.venue_column,
        settings.aibench_set.n_papers,
        settings.seed,
    )
    per_venue = chosen["venue"].value_counts().to_dict()
    _log(f"AIBench set of {len(chosen)} papers, one main illustration each; papers per venue {per_venue}")
    return chosen


def metric_key(text: object) -> str:
    """A metric name part from free text: runs of anything but letters and digits become one underscore."""
    return re.sub(r"[^0-9A-Za-z]+", "_", str(text)).strip("_")


def bench_select_metrics(
    benchmark: pd.DataFrame,
    selection_counts: dict[str, int],
    train_split: pd.DataFrame,
    validation_split: pd.DataFrame,
    leakage_report: pd.DataFrame,
    curated: pd.DataFrame,
    aibench_set: pd.DataFrame,
) -> dict[str, float]:
    """Candidates left by each quality filter, benchmark size per group and per setting, the train and
    validation split sizes (samples, articles), the leaks removed, and the AIBench set's papers per venue."""
    metrics = {name: float(count) for name, count in selection_counts.items()}
    metrics.update({f"group_{group}": float((benchmark["group"] == group).sum()) for group in GROUP_NAMES})
    metrics.update({f"setting_{s}": float((benchmark["setting"] == s).sum()) for s in SETTINGS})
    metrics["benchmark_size"] = float(len(benchmark))
    articles = source_articles(curated)
    for name, split in (("train", train_split), ("validation", validation_split)):
        metrics[f"{name}_size"] = float(len(split))
        metrics[f"{name}_articles"] = float(len({articles.get(s, s) for s in split["sample_id"]}))
    metrics["train_leaks_removed"] = float(len(leakage_report))
    for reason, count in leakage_report["reason"].value_counts().items():
        metrics[f"train_leaks_{metric_key(reason)}"] = float(count)
    metrics["aibench_set.papers"] = float(len(aibench_set))
    for venue, count in aibench_set["venue"].value_counts().items():
        metrics[f"aibench_set.venue.{metric_key(venue)}"] = float(count)
    return metrics
