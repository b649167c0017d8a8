"""The selection steps of bench_select: SciIR-Bench (``sciir.selection.benchmark``, with the quality control
of ``sciir.selection.quality_control``), then the train split, every labelled sample outside the benchmark
less those that leak a benchmark sample (``sciir.selection.leakage``), and the validation split, whole
source articles held out of it (``sciir.selection.validation_split``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pandas as pd

from sciir.selection.benchmark import (
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
from sciir.selection.params import BenchSelectParams
from sciir.selection.quality_control import quality_control
from sciir.selection.validation_split import split_by_article

logger = logging.getLogger(__name__)


def draw_benchmark(
    annotations: pd.DataFrame,
    checklists: pd.DataFrame,
    settings: BenchSelectParams,
    log: Callable[[str], None],
) -> tuple[pd.DataFrame, dict[str, int]]:
    """SciIR-Bench: candidates, statistical quality control (term density, IQR filters), semiotic groups,
    seeded draw, difficulty settings; and how many candidates each filter left. ``log`` gets each step's
    note."""
    pool = candidates(annotations, checklists, settings.require_text_checks)
    log(f"{len(pool)} candidates of {len(annotations)} annotated samples")
    pool, counts = quality_control(
        pool, settings.min_terms, settings.iqr_filter, settings.iqr_min_samples, log
    )
    selected = pick_per_group(pool, settings.n_per_group, settings.seed)
    if selected.empty:
        warn_no_benchmark_sample(len(annotations), counts["candidates_before"], len(pool))
    return benchmark_table(selected), counts


def warn_no_benchmark_sample(annotated: int, candidates: int, filtered: int) -> None:
    """One warning when no group has a sample: how far the candidates got. The benchmark is still written,
    empty, and the splits hold every labelled sample."""
    logger.warning(
        "bench_select drew no benchmark sample: no semiotic group has one; of %d annotated samples %d are "
        "candidates (labelled, with terms and visualisations in two tracks or more, both prompts and a "
        "checklist) and %d are left after the quality filters (bench_select_metrics counts each step); the "
        "benchmark is written empty, so generate and evaluate have no SciIR-Bench sample to draw or judge",
        annotated,
        candidates,
        filtered,
    )


def leak_free_train_pool(
    annotations: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    curated_images: dict[str, Any],
    settings: BenchSelectParams,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The leak-free train pool (every labelled sample outside the benchmark, with its Sci-RCoT and image
    path, less those that leak a benchmark sample) and the leakage report (what was removed, and why)."""
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


def hold_out_validation(
    train_pool: pd.DataFrame, curated: pd.DataFrame, settings: BenchSelectParams, log: Callable[[str], None]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The train split and the validation split (``validation_fraction`` of the train pool's articles,
    whole: no article on both sides), both with the train split's columns. ``log`` gets the split's note."""
    articles = source_articles(curated)
    split = split_by_article(train_pool["sample_id"], articles, settings.validation_fraction, settings.seed)
    log(split.note)
    validation_ids = set(split.validation)
    validation = train_pool["sample_id"].isin(validation_ids)
    return (
        train_pool[~validation].reset_index(drop=True),
        train_pool[validation].reset_index(drop=True),
    )
