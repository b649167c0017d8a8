"""Bench-select pipeline wiring: annotations -> benchmark, train split, release card, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.bench_select.nodes import (
    bench_select_metrics,
    select_benchmark,
    split_train,
    write_release_card,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The ``bench_select`` pipeline (inputs: annotations, checklists, curated, curated_images,
    params:bench_select)."""
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
                write_release_card,
                ["benchmark", "train_split", "curated"],
                "release_card",
                name="write_release_card",
            ),
            node(
                bench_select_metrics,
                ["benchmark", "train_split", "leakage_report"],
                "bench_select_metrics",
                name="bench_select_metrics",
            ),
        ]
    )
