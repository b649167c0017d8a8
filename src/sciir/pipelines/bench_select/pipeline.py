"""Bench-select pipeline wiring: annotations -> benchmark, train split, dataset release, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.bench_select.nodes import (
    bench_select_metrics,
    select_benchmark,
    split_train,
)
from sciir.release import build_release


def create_pipeline(**kwargs) -> Pipeline:
    """The ``bench_select`` pipeline (inputs: annotations, checklists, curated, curated_images,
    articles, params:bench_select)."""
    return Pipeline(
        [
            node(
                select_benchmark,
                ["annotations", "checklists", "params:bench_select"],
                "benchmark",
                name="select_benchmark",
            ),
            node(
                split_train,
                ["annotations", "benchmark", "curated", "curated_images", "params:bench_select"],
                ["train_split", "leakage_report"],
                name="split_train",
            ),
            node(
                build_release,
                ["benchmark", "train_split", "annotations", "curated", "articles", "curated_images"],
                "release",
                name="build_release",
            ),
            node(
                bench_select_metrics,
                ["benchmark", "train_split", "leakage_report"],
                "bench_select_metrics",
                name="bench_select_metrics",
            ),
        ]
    )
