"""Evaluate pipeline wiring: images + checklists -> verdicts -> scores with intervals -> leaderboard with rank
intervals and the paired comparisons, each LoRA adapter against its base, plots, report, judge validation,
per-model MLflow runs and metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.evaluate.aibench_nodes import create_aibench_pipeline
from sciir.pipelines.evaluate.audit_nodes import audit_judge
from sciir.pipelines.evaluate.inputs import evaluation_inputs
from sciir.pipelines.evaluate.nodes import (
    build_report,
    judge_generations,
    list_missing_images,
    log_model_runs,
    measure_finetune_effect,
    plot_groups,
    plot_tracks,
    rank_models,
    score_verdicts,
    summarise_evaluation,
    tabulate_scores,
    validate_judge,
)


def create_pipeline(**kwargs) -> Pipeline:
    """The ``evaluate`` pipeline: the SciIR checklist evaluation and the AIBench evaluation."""
    return sciir_evaluation_pipeline() + create_aibench_pipeline()


def sciir_evaluation_pipeline() -> Pipeline:
    """SciIR checklist evaluation (inputs: benchmark, checklists, generations, generation_manifest, judge,
    params:evaluate, and the review app's judge audit, review_audit; outputs: verdicts, sample_scores,
    evaluate_scores, leaderboard, pairwise, finetune_effect, missing_images, judge_validation, judge_audit,
    report, evaluate_plot_tracks, evaluate_plot_groups, evaluate_model_runs, evaluate_metrics)."""
    return Pipeline(
        [
            node(
                evaluation_inputs,
                ["benchmark", "checklists", "aibench_qa", "aibench_set", "params:evaluate"],
                [
                    "evaluation_benchmark",
                    "evaluation_checklists",
                    "evaluation_aibench_qa",
                    "evaluation_aibench_set",
                    "evaluation_source",
                ],
                name="evaluation_inputs",
            ),
            node(
                judge_generations,
                [
                    "evaluation_benchmark",
                    "evaluation_checklists",
                    "generations",
                    "generation_manifest",
                    "judge",
                    "params:evaluate",
                ],
                ["verdicts", "evaluate_judge_summary"],
                name="judge_generations",
            ),
            node(
                score_verdicts,
                ["verdicts", "evaluation_benchmark", "params:evaluate"],
                "sample_scores",
                name="score_verdicts",
            ),
            node(
                tabulate_scores,
                ["sample_scores", "params:evaluate"],
                "evaluate_scores",
                name="tabulate_scores",
            ),
            node(
                rank_models,
                [
                    "evaluate_scores",
                    "sample_scores",
                    "generation_manifest",
                    "params:evaluate",
                    "evaluation_source",
                ],
                ["leaderboard", "pairwise"],
                name="rank_models",
            ),
            node(
                measure_finetune_effect,
                ["sample_scores", "generation_manifest", "params:evaluate", "evaluation_source"],
                "finetune_effect",
                name="measure_finetune_effect",
            ),
            node(list_missing_images, "evaluate_judge_summary", "missing_images", name="list_missing_images"),
            node(plot_tracks, ["leaderboard", "params:evaluate"], "evaluate_plot_tracks", name="plot_tracks"),
            node(
                plot_groups,
                ["evaluate_scores", "params:evaluate"],
                "evaluate_plot_groups",
                name="plot_groups",
            ),
            node(
                validate_judge,
                [
                    "verdicts",
                    "evaluation_checklists",
                    "evaluation_benchmark",
                    "generation_manifest",
                    "evaluate_judge_summary",
                    "params:evaluate",
                ],
                "judge_validation",
                name="validate_judge",
            ),
            node(
                audit_judge,
                ["verdicts", "review_audit", "evaluate_judge_summary", "params:evaluate"],
                "judge_audit",
                name="audit_judge",
            ),
            node(
                build_report,
                [
                    "leaderboard",
                    "pairwise",
                    "finetune_effect",
                    "evaluate_scores",
                    "sample_scores",
                    "verdicts",
                    "evaluation_checklists",
                    "evaluation_benchmark",
                    "generations",
                    "evaluate_judge_summary",
                    "params:evaluate",
                    "evaluation_source",
                    "judge_validation",
                    "judge_audit",
                ],
                "report",
                name="build_report",
            ),
            node(
                log_model_runs,
                ["evaluate_scores", "verdicts", "evaluate_judge_summary"],
                "evaluate_model_runs",
                name="log_model_runs",
            ),
            node(
                summarise_evaluation,
                [
                    "leaderboard",
                    "pairwise",
                    "finetune_effect",
                    "evaluate_scores",
                    "judge_validation",
                    "evaluate_judge_summary",
                    "judge_audit",
                ],
                "evaluate_metrics",
                name="summarise_evaluation",
            ),
        ]
    )
