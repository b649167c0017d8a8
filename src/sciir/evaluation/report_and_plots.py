"""What an evaluate run shows: the track and group plots, and the HTML report put together from the run's
tables (leaderboards per rule with rank intervals, the paired comparisons, coverage, breakdowns with
intervals, the group heatmap, every image beside its checklist, the missing images, and the run facts at
the top) and the same two plots beside their tables. The pieces are drawn by ``sciir.evaluation.plots`` and rendered by ``sciir.evaluation.report``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pandas as pd

from sciir.backends.base import CONTESTANT
from sciir.evaluation.generated_images import ImageLoaders
from sciir.evaluation.judge_audit import validation_beside_audit
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.plots import Plot, figure_png, plot_group_heatmap, plot_track_pass_rates
from sciir.evaluation.report import (
    ReportFolder,
    breakdown_intervals,
    coverage_table,
    heatmap,
    leaderboard_table,
    missing_images,
    render_report,
    report_title,
    table_from_frame,
)
from sciir.evaluation.report_comparisons import comparison_sections, finetune_effect_sections
from sciir.evaluation.report_views import image_views
from sciir.evaluation.sanity_baselines import blank_score, blank_warning
from sciir.evaluation.scoring import breakdown_table
from sciir.evaluation.tracks import SCORE_CATEGORIES
from sciir.runs.results_folder import SAMPLE_BENCHMARK
from sciir.tasks.judge import JUDGE_TASK
from sciir.tasks.prompts import prompt_template

JUDGE_TITLE = (
    "Judge validation: on planted faults (questions with known truth) and against people (the judge audit)"
)
# How plots and the report name each aggregation rule.
RULE_LABELS = {
    "sciir_veto": "pass rate (strict veto)",
    "tifa": "TIFA score",
    "question_mean": "question-level mean",
    "dsg": "DSG score",
}


def track_plot(leaderboard: pd.DataFrame, rule: str) -> Any:
    """Grouped bars of each model's score per track under ``rule``, with bootstrap interval whiskers;
    references are named so in the legend."""
    board = leaderboard[leaderboard["aggregation"] == rule]
    names = board["model"].where(board["role"] == CONTESTANT, board["model"] + " (reference)")
    return plot_track_pass_rates(board.assign(model=names), SCORE_CATEGORIES, RULE_LABELS[rule])


def group_plot(evaluate_scores: pd.DataFrame, rule: str) -> Any:
    """Heatmap of each model's final score per benchmark group, titled by ``rule``."""
    label = RULE_LABELS[rule]
    return plot_group_heatmap(breakdown_table(evaluate_scores, "group"), f"Final {label} per group")


def report_plots(leaderboard: pd.DataFrame, evaluate_scores: pd.DataFrame, rule: str) -> tuple[Plot, Plot]:
    """The track plot and the group heatmap under ``rule`` as the report's files, named as the run's own
    PNG files (``track_pass_rates.png``, ``group_heatmap.png``) and drawn the same way."""
    label = RULE_LABELS[rule]
    return (
        Plot(
            "track_pass_rates",
            f"Score per track, {label} (whiskers: bootstrap 95% interval)",
            figure_png(track_plot(leaderboard, rule)),
        ),
        Plot(
            "group_heatmap",
            f"Final {label} per group (heatmap)",
            figure_png(group_plot(evaluate_scores, rule)),
        ),
    )


def report_facts(
    config: EvaluateParams, judge_summary: Mapping[str, Any], source: Mapping[str, str] | None
) -> dict[str, str]:
    """The run facts printed at the top of the report."""
    boot = config.bootstrap
    source = source or {}
    return {
        "benchmark": f"{source.get('name', SAMPLE_BENCHMARK)} (sha256 {source.get('sha256', '?')[:12]})",
        "judge": judge_summary["judge"],
        "judge template": prompt_template(JUDGE_TASK).version,
        "aggregation": ", ".join(config.rules),
        "unjudged questions": config.unjudged_policy,
        "intervals": f"{boot.confidence:.0%} percentile bootstrap, {boot.n_boot} resamples, seed {boot.seed}",
        "images": config.verdicts_file or config.images_dir or "data/07_model_output/generations",
    }


def blank_fact(leaderboard: pd.DataFrame, config: EvaluateParams) -> dict[str, str]:
    """The blank baseline's score as a run fact, or the warning that the judge passes it."""
    if not config.blank.enabled:
        return {}
    warning = blank_warning(leaderboard, config)
    score = blank_score(leaderboard, config.primary_rule)
    shown = "n/a" if math.isnan(score) else f"{score:.2f}"
    return {
        "blank baseline": f"WARNING: {warning}" if warning else f"final {shown} (white images, never ranked)"
    }


def evaluate_report(
    leaderboard: pd.DataFrame,
    pairwise: pd.DataFrame,
    evaluate_scores: pd.DataFrame,
    sample_scores: pd.DataFrame,
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    images: ImageLoaders,
    judge_summary: Mapping[str, Any],
    config: EvaluateParams,
    source: Mapping[str, str] | None = None,
    validation: pd.DataFrame | None = None,
    audit: pd.DataFrame | None = None,
    finetune_effect: pd.DataFrame | None = None,
) -> ReportFolder:
    """The HTML report as a folder: a summary page with scores and intervals (the primary rule's
    leaderboard, ranks with their intervals, beside its track plot), the paired comparisons (a models x
    models matrix per rule, per track, group and setting, and the difference the benchmark detects per
    group), each LoRA adapter against its base (``finetune_effect``), coverage, the groups' scores beside their
    heatmap, the judge on planted faults beside the judge against people (``validation``, ``audit``:
    ``sciir.evaluation.judge_audit``) and the missing images, then one page per model with every image's
    thumbnail beside its checklist."""
    rule = config.primary_rule
    label = RULE_LABELS[rule]
    track_bars, group_heatmap = report_plots(leaderboard, evaluate_scores, rule)
    boards = [
        replace(
            leaderboard_table(
                f"Leaderboard ({RULE_LABELS[str(name)]}, 95% interval, n = samples counted)", rows
            ),
            plot=track_bars if name == rule else None,
        )
        for name, rows in leaderboard.groupby("aggregation", sort=False)
    ]
    primary = leaderboard[leaderboard["aggregation"] == rule]
    by_group = breakdown_intervals(f"Final {label} per group", evaluate_scores, "group")
    tables = [
        *boards,
        *comparison_sections(pairwise, RULE_LABELS),
        *(finetune_effect_sections(finetune_effect, RULE_LABELS) if finetune_effect is not None else []),
        coverage_table("Coverage (judged / all questions)", primary),
        breakdown_intervals(f"Final {label} per setting", evaluate_scores, "setting"),
        replace(by_group, plot=group_heatmap),
    ]
    if validation is not None:
        beside = validation_beside_audit(validation, audit if audit is not None else pd.DataFrame())
        tables.append(table_from_frame(JUDGE_TITLE, beside))
    views = image_views(
        verdicts,
        checklists,
        sample_scores,
        benchmark,
        images,
        judge_summary["unavailable"],
        config.thumbnail_px,
    )
    return render_report(
        tables,
        views,
        report_facts(config, judge_summary, source) | blank_fact(leaderboard, config),
        title=report_title((source or {}).get("name", SAMPLE_BENCHMARK)),
        heatmaps=[heatmap(f"Final {label} per group (heatmap)", evaluate_scores, "group")],
        missing=missing_images(judge_summary["unavailable"]),
    )
