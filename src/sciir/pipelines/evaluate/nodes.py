"""Evaluate nodes: judge every image against its checklist, score, rank, validate the judge, report.

Images come from the ``generations`` folder (``<model>/<sample_id>.png``) or, when ``images_dir`` is
set, straight from that folder (same layout; .png, .jpg, .jpeg or .webp). Every model with an image
file, and every model of the generation manifest, is judged on every benchmark sample; for the
generations folder the manifest adds status and reasons. A (model, sample) pair without a usable image
(no file, a failed generation, an unreadable file) gets ``failed`` rows whose reason says so: it is
listed as missing, counted in coverage, and never scored as a pass or a fail behind the user's back.
With ``verdicts_file`` set, verdicts are read from that file instead of asked from the judge.

Each node validates ``params:evaluate`` (``sciir.evaluation.params``), resolves the inputs that may not
exist yet (``sciir.pipelines.evaluate.inputs``) and hands the work to ``sciir.evaluation``: judging
(``judging``), scores and the leaderboard (``scoring``), plots and the report (``report_and_plots``), judge
validation (``judge_validation``), MLflow runs and metrics (``run_metrics``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pandas as pd

from sciir.backends.base import VisionLanguageModel
from sciir.catalog.optional_dataset import MissingInput, is_missing_input, mapping_or_empty, supplied
from sciir.evaluation.comparisons import pairwise_table, with_rank_intervals
from sciir.evaluation.finetune_effect import finetune_effect_table, manifest_bases
from sciir.evaluation.generated_images import (
    ImageFiles,
    ImageLoaders,
    image_source,
    manifest_entries,
    missing_image_table,
    warn_if_no_image,
)
from sciir.evaluation.judge_audit import audit_metrics
from sciir.evaluation.judge_validation import known_content_validation
from sciir.evaluation.judging import judge_images, no_checklist_questions, verdicts_from_file
from sciir.evaluation.leaderboard_text import leaderboard_text
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.report import ReportFolder
from sciir.evaluation.report_and_plots import evaluate_report, group_plot, track_plot
from sciir.evaluation.run_metrics import evaluation_metrics, per_model_runs
from sciir.evaluation.sanity_baselines import blank_warning, log_warning, with_blank
from sciir.evaluation.scoring import leaderboard, score_samples, score_table
from sciir.pipelines.evaluate.inputs import (
    benchmark_or_empty,
    checklists_or_empty,
    manifest_or_empty,
    model_roles,
)
from sciir.runs.results_folder import SAMPLE_BENCHMARK
from sciir.runs.tracking import log_nested_runs

logger = logging.getLogger(__name__)

# The parameters that give evaluate its benchmark without bench_select (docs/bring_your_own_benchmark.md).
BENCHMARK_FILE = (
    "give a benchmark file with evaluate.benchmark=FILE (its images with evaluate.images_dir=FOLDER), or "
    "re-aggregate another system's verdicts with evaluate.verdicts_file=FILE"
)


def judge_generations(
    benchmark: pd.DataFrame,
    checklists: pd.DataFrame,
    generations: ImageFiles,
    generation_manifest: pd.DataFrame,
    judge: VisionLanguageModel,
    params: dict[str, Any],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judge every (model, sample) image: the ``verdicts`` table (with ``parent_ids``) and a run summary
    (``sciir.evaluation.judging.judge_images``), or the verdicts of ``verdicts_file`` when it is set."""
    config = EvaluateParams.model_validate(params)
    if config.verdicts_file:
        known = None if is_missing_input(benchmark) else benchmark
        return verdicts_from_file(Path(config.verdicts_file), checklists_or_empty(checklists), known)
    benchmark = supplied(benchmark, "evaluate: no benchmark", BENCHMARK_FILE)
    checklists = supplied(checklists, "evaluate: no checklists", BENCHMARK_FILE)
    if checklists.empty:
        return no_checklist_questions(checklists, judge)
    images: ImageLoaders = image_source(mapping_or_empty(generations), config.images_dir)
    # The manifest describes the generations folder only, not a folder the user points at.
    manifest = {} if config.images_dir else manifest_entries(manifest_or_empty(generation_manifest))
    warn_if_no_image(images, manifest, config.images_dir or _folder_of(generations))
    images = with_blank(images, [str(sample) for sample in benchmark["sample_id"]], config.blank)
    return judge_images(
        benchmark, checklists, images, manifest, judge, config.window, config.questions_per_request
    )


def _folder_of(generations: ImageFiles | MissingInput) -> str:
    """Where the generations were looked for, in words."""
    return generations.location if is_missing_input(generations) else "the generations folder"


def score_verdicts(verdicts: pd.DataFrame, benchmark: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``sample_scores`` table under the configured policy and every aggregation rule (``sciir.evaluation.scoring``)."""
    config = EvaluateParams.model_validate(params)
    return score_samples(verdicts, benchmark_or_empty(benchmark), config.unjudged_policy, config.rules)


def tabulate_scores(sample_scores: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``evaluate_scores`` table: per model and track / group / setting, score, interval, coverage."""
    return score_table(sample_scores, EvaluateParams.model_validate(params).bootstrap)


def rank_models(
    evaluate_scores: pd.DataFrame,
    sample_scores: pd.DataFrame,
    generation_manifest: pd.DataFrame,
    params: dict[str, Any],
    source: dict[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``leaderboard`` table with intervals, samples counted and coverage: per rule, contestants by
    final score, each with its rank's bootstrap interval and the models the paired test does not tell it
    apart from, then references and the blank baseline (never ranked); its first column names the
    benchmark (``source``). And the ``pairwise`` table: every pair of contestants compared on the samples
    both were scored on (``sciir.evaluation.comparisons``). A warning is logged when the judge passes the
    blank images."""
    config = EvaluateParams.model_validate(params)
    board = leaderboard(evaluate_scores, model_roles(generation_manifest, params))
    pairwise = pairwise_table(sample_scores, board, config.comparisons, config.bootstrap)
    board = with_rank_intervals(board, sample_scores, pairwise, config.bootstrap)
    name = (source or {}).get("name", SAMPLE_BENCHMARK)
    board.insert(0, "benchmark", name)
    pairwise.insert(0, "benchmark", name)
    log_warning(blank_warning(board, config))
    return board, pairwise


def measure_finetune_effect(
    sample_scores: pd.DataFrame,
    generation_manifest: pd.DataFrame | MissingInput,
    params: dict[str, Any],
    source: dict[str, str] | None = None,
) -> pd.DataFrame:
    """The ``finetune_effect`` table: each LoRA adapter the generation manifest pairs with its base model
    (``meta.adapter.base``) against that base, on the samples both were scored on
    (``sciir.evaluation.finetune_effect``); its first column names the benchmark (``source``). Empty
    without such a pair."""
    config = EvaluateParams.model_validate(params)
    bases = manifest_bases(manifest_or_empty(generation_manifest))
    table = finetune_effect_table(sample_scores, bases, config.comparisons, config.bootstrap)
    table.insert(0, "benchmark", (source or {}).get("name", SAMPLE_BENCHMARK))
    return table


def list_missing_images(judge_summary: dict[str, Any]) -> pd.DataFrame:
    """The ``missing_images`` table: every (model, sample) without a usable image and why."""
    return missing_image_table(judge_summary["unavailable"])


def plot_tracks(leaderboard: pd.DataFrame, params: dict[str, Any]) -> Any:
    """Grouped bars of each model's score per track under the primary rule, with bootstrap interval
    whiskers; references are named so in the legend."""
    return track_plot(leaderboard, EvaluateParams.model_validate(params).primary_rule)


def plot_groups(evaluate_scores: pd.DataFrame, params: dict[str, Any]) -> Any:
    """Heatmap of each model's final score per benchmark group."""
    return group_plot(evaluate_scores, EvaluateParams.model_validate(params).primary_rule)


def build_report(
    leaderboard: pd.DataFrame,
    pairwise: pd.DataFrame,
    finetune_effect: pd.DataFrame,
    evaluate_scores: pd.DataFrame,
    sample_scores: pd.DataFrame,
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    generations: ImageFiles,
    judge_summary: dict[str, Any],
    params: dict[str, Any],
    source: dict[str, str] | None = None,
    judge_validation: pd.DataFrame | None = None,
    judge_audit: pd.DataFrame | None = None,
) -> ReportFolder:
    """The HTML report as a folder (``sciir.evaluation.report_and_plots.evaluate_report``): a summary page
    with scores and intervals, ranks with intervals, the paired comparisons, each LoRA adapter against its
    base, coverage, the group heatmap, the judge on planted faults beside the judge against people, and the
    missing images, then one page per model with every image's thumbnail beside its checklist."""
    config = EvaluateParams.model_validate(params)
    benchmark = benchmark_or_empty(benchmark)
    images = image_source(mapping_or_empty(generations), config.images_dir)
    return evaluate_report(
        leaderboard,
        pairwise,
        evaluate_scores,
        sample_scores,
        verdicts,
        checklists_or_empty(checklists),
        benchmark,
        with_blank(images, [str(sample) for sample in benchmark["sample_id"]], config.blank),
        judge_summary,
        config,
        source,
        judge_validation,
        judge_audit,
        finetune_effect,
    )


def validate_judge(
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    generation_manifest: pd.DataFrame,
    judge_summary: dict[str, Any],
    params: dict[str, Any],
) -> pd.DataFrame:
    """The ``judge_validation`` table: detection, false-alarm and abstention rates per question type on
    the images whose content is known (``sciir.evaluation.judge_validation``); none is known when
    ``images_dir`` or ``verdicts_file`` is set."""
    config = EvaluateParams.model_validate(params)
    setting = "images_dir" if config.images_dir else "verdicts_file" if config.verdicts_file else None
    return known_content_validation(
        verdicts,
        checklists_or_empty(checklists),
        benchmark_or_empty(benchmark),
        manifest_or_empty(generation_manifest),
        judge_summary["judge"],
        setting,
    )


def log_model_runs(
    evaluate_scores: pd.DataFrame, verdicts: pd.DataFrame, judge_summary: dict[str, Any]
) -> dict[str, str]:
    """One nested MLflow run per model inside the active run (its scores, intervals, coverage and
    missing images as metrics; its verdicts and missing images as artifacts): model -> run id."""
    return log_nested_runs(per_model_runs(evaluate_scores, verdicts, judge_summary), name_tag="sciir.model")


def summarise_evaluation(
    leaderboard: pd.DataFrame,
    pairwise: pd.DataFrame,
    finetune_effect: pd.DataFrame,
    evaluate_scores: pd.DataFrame,
    judge_validation: pd.DataFrame,
    judge_summary: dict[str, Any],
    judge_audit: pd.DataFrame | None = None,
) -> dict[str, float]:
    """``evaluate_metrics`` (``sciir.evaluation.run_metrics.evaluation_metrics``, the paired comparisons'
    per pair and each adapter's fine-tuning effect, the judge audit's per question kind when people audited),
    and the leaderboard logged as text with its comparisons."""
    metrics = evaluation_metrics(
        leaderboard, evaluate_scores, judge_validation, judge_summary, pairwise, finetune_effect
    )
    metrics |= audit_metrics(judge_audit if judge_audit is not None else pd.DataFrame())
    logger.info("leaderboard:\n%s", leaderboard_text(leaderboard, pairwise, finetune_effect))
    return metrics
