"""Bench-select nodes: SciIR-Bench, the leakage-free train split, the release card and metrics."""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from sciir.leakage import (
    LEAK_COLUMNS,
    LeakSources,
    assert_no_leakage,
    curated_hashes,
    find_leaks,
    image_hashes,
    source_figures,
)
from sciir.selection import (
    GROUP_NAMES,
    SETTINGS,
    benchmark_table,
    candidates,
    iqr_filter,
    pick_per_group,
    train_candidates,
    train_table,
)

logger = logging.getLogger(__name__)

ATTRIBUTION_COLUMNS = ("sample_id", "split", "doi", "url", "figure_id", "licence_name", "licence_url")


class BenchSelectParams(BaseModel):
    """``params:bench_select`` (conf/base/parameters_bench_select.yml)."""

    model_config = ConfigDict(extra="forbid")

    n_per_group: int = Field(default=200, ge=1)
    seed: int = 0
    min_terms: int = Field(default=1, ge=0)
    require_text_checks: bool = True
    iqr_filter: bool = True
    iqr_min_samples: int = Field(default=20, ge=4)
    image_dir: str = "data/03_primary/images"
    # Images whose perceptual hashes differ in at most this many of 64 bits are copies of one another.
    leakage_max_distance: int = Field(default=3, ge=0, le=31)


def select_benchmark(
    annotations: pd.DataFrame, checklists: pd.DataFrame, params: dict[str, Any]
) -> pd.DataFrame:
    """SciIR-Bench: candidates, IQR quality control, semiotic groups, seeded draw, difficulty settings."""
    settings = BenchSelectParams.model_validate(params)
    pool = candidates(annotations, checklists, settings.min_terms, settings.require_text_checks)
    logger.info("bench_select: %d candidates of %d annotated samples", len(pool), len(annotations))
    if settings.iqr_filter:
        pool, note = iqr_filter(pool, settings.iqr_min_samples)
        logger.info("bench_select: %s", note)
    selected = pick_per_group(pool, settings.n_per_group, settings.seed)
    return benchmark_table(selected)


def split_train(
    annotations: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    curated_images: dict[str, Any],
    params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The train split (every labelled sample outside the benchmark, with its Sci-RCoT and image path,
    less those that leak a benchmark sample) and the leakage report (what was removed, and why)."""
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
        "bench_select: train split of %d samples; %d removed as leaks of the benchmark %s",
        len(kept),
        len(leaks),
        counts or "",
    )
    return train_table(annotations, kept, settings.image_dir), leaks[list(LEAK_COLUMNS)]


def bench_select_metrics(
    benchmark: pd.DataFrame, train_split: pd.DataFrame, leakage_report: pd.DataFrame
) -> dict[str, float]:
    """Benchmark size per group and per setting, the train split size and the leaks removed from it."""
    metrics = {f"group_{group}": float((benchmark["group"] == group).sum()) for group in GROUP_NAMES}
    metrics.update({f"setting_{s}": float((benchmark["setting"] == s).sum()) for s in SETTINGS})
    metrics["benchmark_size"] = float(len(benchmark))
    metrics["train_size"] = float(len(train_split))
    metrics["train_leaks_removed"] = float(len(leakage_report))
    for reason, count in leakage_report["reason"].value_counts().items():
        metrics[f"train_leaks_{str(reason).replace(' ', '_').replace('-', '_')}"] = float(count)
    return metrics
