"""Bench-select nodes: SciIR-Bench, the leakage-free train and validation splits, the AIBench set.

The selection itself is ``sciir.selection`` (splits, aibench_set); the release and the
metrics nodes are wired straight to ``sciir.selection.release`` and ``sciir.selection.selection_metrics``.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.selection.aibench_set import aibench_set
from sciir.selection.params import BenchSelectParams
from sciir.selection.splits import draw_benchmark, hold_out_validation, leak_free_train_pool

logger = logging.getLogger(__name__)


def _log(note: str) -> None:
    logger.info("bench_select: %s", note)


def select_benchmark(
    annotations: pd.DataFrame, checklists: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """SciIR-Bench and how many candidates each quality filter left (``draw_benchmark``)."""
    return draw_benchmark(annotations, checklists, BenchSelectParams.model_validate(params), _log)


def split_train(
    annotations: pd.DataFrame,
    benchmark: pd.DataFrame,
    curated: pd.DataFrame,
    curated_images: dict[str, Any],
    params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The leak-free train pool and the leakage report (``leak_free_train_pool``)."""
    settings = BenchSelectParams.model_validate(params)
    return leak_free_train_pool(annotations, benchmark, curated, curated_images, settings)


def split_validation(
    train_pool: pd.DataFrame, curated: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The train split and the validation split, whole articles held out (``hold_out_validation``)."""
    return hold_out_validation(train_pool, curated, BenchSelectParams.model_validate(params), _log)


def select_aibench_set(
    annotations: pd.DataFrame,
    aibench_graphs: pd.DataFrame,
    curated: pd.DataFrame,
    articles: pd.DataFrame,
    params: dict[str, Any],
) -> pd.DataFrame:
    """The AIBench set: papers uniform across venues, one main illustration each
    (``sciir.selection.aibench_set``)."""
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
