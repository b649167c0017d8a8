"""Evaluate pipeline wiring: images + checklists -> verdicts -> scores -> leaderboard, plot, report, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.evaluate.nodes import (
    build_report,
    judge_generations,
    plot_tracks,
    rank_models,
    score_verdicts,
    summarise_evaluation,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The ``evaluate`` pipeline (inputs: benchmark, checklists, generations, generation_manifest, judge,
    params:evaluate; outputs: verdicts, sample_scores, leaderboard, report, evaluate_plot_tracks,
    evaluate_metrics)."""
    return Pipeline(
        [
            node(
                judge_generations,
                ["benchmark", "checklists", "generations", "generation_manifest", "judge", "params:evaluate"],
                ["verdicts", "evaluate_judge_summary"],
                name="judge_generations",
            ),
            node(
                score_verdicts,
                ["verdicts", "benchmark", "params:evaluate"],
                "sample_scores",
                name="score_verdicts",
            ),
            node(rank_models, "sample_scores", "leaderboard", name="rank_models"),
            node(plot_tracks, "leaderboard", "evaluate_plot_tracks", name="plot_tracks"),
            node(
                build_report,
                [
                    "leaderboard",
                    "sample_scores",
                    "verdicts",
                    "checklists",
                    "benchmark",
                    "generations",
                    "evaluate_judge_summary",
                    "params:evaluate",
                ],
                "report",
                name="build_report",
            ),
            node(
                summarise_evaluation,
                ["leaderboard", "sample_scores", "evaluate_judge_summary"],
                "evaluate_metrics",
                name="summarise_evaluation",
            ),
        ]
    )
