"""What an evaluate run logs to MLflow: one nested run per model (its scores and missing images as metrics,
its verdicts and missing images as tables), the SciIR stage metrics and the AIBench stage metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sciir.aibench.level_accuracy import metrics_from_table
from sciir.aibench.questions import LEVEL_NAMES
from sciir.backends.cache import stats_metrics
from sciir.evaluation.baseline_metrics import baseline_summary
from sciir.evaluation.comparisons import pairwise_metrics
from sciir.evaluation.finetune_effect import finetune_effect_metrics
from sciir.evaluation.generated_images import missing_image_table
from sciir.evaluation.judge_validation import validation_metrics
from sciir.evaluation.scoring import model_metrics
from sciir.runs.tracking import NestedRun


def per_model_runs(
    evaluate_scores: pd.DataFrame, verdicts: pd.DataFrame, judge_summary: Mapping[str, Any]
) -> dict[str, NestedRun]:
    """Model -> what its nested run holds: its scores, intervals, coverage and missing images as metrics;
    its verdicts and missing images as tables."""
    missing = missing_image_table(judge_summary["unavailable"])
    return {
        model: NestedRun(
            metrics=model_metrics(evaluate_scores, model)
            | {"missing_images": float(judge_summary["missing_images"].get(model, 0))},
            tables={
                "verdicts": verdicts[verdicts["model"] == model],
                "missing_images": missing[missing["model"] == model],
            },
        )
        for model in sorted(verdicts["model"].unique())
    }


def evaluation_metrics(
    leaderboard: pd.DataFrame,
    evaluate_scores: pd.DataFrame,
    judge_validation: pd.DataFrame,
    judge_summary: Mapping[str, Any],
    pairwise: pd.DataFrame | None = None,
    finetune_effect: pd.DataFrame | None = None,
) -> dict[str, float]:
    """``evaluate_metrics``. Per model: scores per track, group and setting with their intervals,
    coverage overall and per track, missing images (``sciir.evaluation.scoring.model_metrics``). Per pair
    of ranked models: the paired comparison (``sciir.evaluation.comparisons.pairwise_metrics``); per LoRA
    adapter, its effect against its base (``sciir.evaluation.finetune_effect.finetune_effect_metrics``). For the
    judge: its validation rates, failed requests, ignored answers, cache hits / misses / failures, and the
    HTTP requests, tokens and estimated cost of the calls actually sent
    (``sciir.backends.cache.stats_metrics``)."""
    metrics: dict[str, float] = {}
    for model in pd.unique(leaderboard["model"]):
        metrics |= {f"{model}.{name}": value for name, value in model_metrics(evaluate_scores, model).items()}
    metrics |= {f"{model}.missing_images": float(n) for model, n in judge_summary["missing_images"].items()}
    if pairwise is not None and len(leaderboard):
        metrics |= pairwise_metrics(pairwise, str(leaderboard["aggregation"].iloc[0]))
    if finetune_effect is not None and len(leaderboard):
        metrics |= finetune_effect_metrics(finetune_effect, str(leaderboard["aggregation"].iloc[0]))
    metrics["unused_images"] = float(len(judge_summary["unused_images"]))
    metrics |= validation_metrics(judge_validation)
    metrics["judge_failed_requests"] = float(judge_summary["failed_requests"])
    metrics["judge_ignored_answers"] = float(len(judge_summary["ignored_answers"]))
    metrics |= stats_metrics(judge_summary["cache"], prefix="judge_")
    return metrics


def aibench_stage_metrics(
    aibench_scores: pd.DataFrame,
    aesthetics_scores: pd.DataFrame,
    baseline_scores: pd.DataFrame,
    run_summary: Mapping[str, Any],
) -> dict[str, float]:
    """``aibench_metrics``: per model the AIBench scores, aesthetics and baseline means with coverage,
    missing images; for the judge its failed requests per task, ignored answers and cache counts."""
    metrics = metrics_from_table(aibench_scores, lambda model, column: f"{model}.{column}")
    metrics |= metrics_from_table(aesthetics_scores, lambda model, column: f"{model}.aesthetics.{column}")
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in baseline_summary(baseline_scores).itertuples(index=False):
        metrics[f"{row.model}.{row.metric}"] = float(row.mean)
        metrics[f"{row.model}.{row.metric}.coverage"] = float(row.coverage)
    metrics |= {f"{model}.missing_images": float(n) for model, n in run_summary["missing_images"].items()}
    metrics |= {f"{task}_failed_requests": float(n) for task, n in run_summary["failed_requests"].items()}
    metrics["aibench_qa_ignored_answers"] = float(len(run_summary["ignored_answers"]))
    metrics |= stats_metrics(run_summary["cache"], prefix="judge_")
    return metrics


def aibench_scores_text(aibench_scores: pd.DataFrame) -> str:
    """The ``aibench_scores`` table as logged: the level names, then the table with three decimals."""
    levels = ", ".join(f"level{level}: {name}" for level, name in LEVEL_NAMES.items())
    table = aibench_scores.to_string(index=False, float_format=lambda x: f"{x:.3f}")
    return f"AIBench scores ({levels}):\n{table}"
