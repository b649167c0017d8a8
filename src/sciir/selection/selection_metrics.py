"""``bench_select_metrics``: what each quality filter left, the benchmark by group and setting, the splits,
the leaks removed and the AIBench set by venue."""

from __future__ import annotations

import re

import pandas as pd

from sciir.selection.benchmark import GROUP_NAMES, SETTINGS
from sciir.selection.leakage import source_articles


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
