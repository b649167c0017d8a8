"""Bench-select pipeline wiring: annotations -> benchmark, train and validation splits, AIBench set,
dataset release, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.bench_select.nodes import (
    select_aibench_set,
    select_benchmark,
    split_train,
    split_validation,
)
from sciir.selection.release import build_release
from sciir.selection.selection_metrics import bench_select_metrics


def create_pipeline(**kwargs) -> Pipeline:
    """The ``bench_select`` pipeline (inputs: annotations, checklists, aibench_graphs, curated,
    curated_images, articles, params:bench_select)."""
    return Pipeline(
        [
            node(
                select_benchmark,
                ["annotations", "checklists", "params:bench_select"],
                ["benchmark", "selection_counts"],
                name="select_benchmark",
            ),
            node(
                split_train,
                ["annotations", "benchmark", "curated", "curated_images", "params:bench_select"],
                ["train_pool", "leakage_report"],
                name="split_train",
            ),
            node(
                split_validation,
                ["train_pool", "curated", "params:bench_select"],
                ["train_split", "validation_split"],
                name="split_validation",
            ),
            node(
                select_aibench_set,
                ["annotations", "aibench_graphs", "curated", "articles", "params:bench_select"],
                "aibench_set",
                name="select_aibench_set",
            ),
            node(
                build_release,
                [
                    "benchmark",
                    "train_split",
                    "validation_split",
                    "annotations",
                    "curated",
                    "articles",
                    "curated_images",
                ],
                "release",
                name="build_release",
            ),
            node(
                bench_select_metrics,
                [
                    "benchmark",
                    "selection_counts",
                    "train_split",
                    "validation_split",
                    "leakage_report",
                    "curated",
                    "aibench_set",
                ],
                "bench_select_metrics",
                name="bench_select_metrics",
            ),
        ]
    )
