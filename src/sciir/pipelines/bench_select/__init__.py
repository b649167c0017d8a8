"""Bench-select: SciIR-Bench groups and settings, the leakage-free train split, the release card."""

from sciir.pipelines.bench_select.pipeline import create_pipeline

__all__ = ["create_pipeline"]
