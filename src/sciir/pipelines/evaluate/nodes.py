"""Evaluate nodes: judge every image against its checklist, score, rank, validate the judge, report.

Images come from the ``generations`` folder (``<model>/<sample_id>.png``) or, when ``images_dir`` is
set, straight from that folder (same layout; .png, .jpg, .jpeg or .webp). Every model with an image
file, and every model of the generation manifest, is judged on every benchmark sample; for the
generations folder the manifest adds status and reasons. A (model, sample) pair without a usable image
(no file, a failed generation, an unreadable file) gets ``failed`` rows whose reason says so: it is
listed as missing, counted in coverage, and never scored as a pass or a fail behind the user's back.
With ``verdicts_file`` set, verdicts are read from that file instead of asked from the judge.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sciir.backends.base import Deferred, VisionLanguageModel, VLMRequest, VLMResult, window_setting
from sciir.backends.cache import stats_metrics
from sciir.catalog.optional_dataset import (
    MissingInput,
    frame_or_empty,
    is_missing,
    mapping_or_empty,
    required,
)
from sciir.evaluation.aggregation import AggregationRule
from sciir.evaluation.generated_images import (
    ExpectedImage,
    ImageFiles,
    PayloadLoaders,
    image_payloads,
    image_source,
    manifest_entries,
    missing_image_table,
    missing_per_model,
    model_names,
    unavailable_reason,
    unused_images,
)
from sciir.evaluation.judge_validation import question_truth, validation_metrics, validation_table
from sciir.evaluation.known_files import KnownFiles, with_image
from sciir.evaluation.plots import plot_group_heatmap, plot_track_pass_rates
from sciir.evaluation.report import (
    ReportFolder,
    breakdown_intervals,
    coverage_table,
    heatmap,
    image_views,
    leaderboard_table,
    missing_images,
    render_report,
    report_title,
)
from sciir.evaluation.scoring import (
    CONTESTANT,
    TRACKS,
    UnjudgedPolicy,
    breakdown_table,
    leaderboard,
    model_metrics,
    score_samples,
    score_table,
)
from sciir.images.payload import backend_image_limits
from sciir.runs.long_lists import log_list
from sciir.runs.progress import Progress
from sciir.runs.results_folder import SAMPLE_BENCHMARK
from sciir.runs.summary import leaderboard_text
from sciir.runs.tracking import NestedRun, log_nested_runs
from sciir.stats.bootstrap import BootstrapConfig
from sciir.tasks.judge import (
    JUDGE_TASK,
    ChecklistItem,
    ParsedReply,
    build_judge_request,
    checklist_chunks,
    checklist_items,
    failed_rows,
    parse_judge_reply,
    read_verdicts_file,
    verdicts_frame,
    with_parent_ids,
)
from sciir.tasks.prompts import prompt_template

logger = logging.getLogger(__name__)

RULE_LABELS = {
    "sciir_veto": "pass rate (strict veto)",
    "tifa": "TIFA score",
    "question_mean": "question-level mean",
    "dsg": "DSG score",
}


class EvaluateParams(BaseModel):
    """``params:evaluate`` (conf/base/parameters_evaluate.yml)."""

    model_config = ConfigDict(extra="forbid")

    unjudged_policy: UnjudgedPolicy = "exclude"
    # One rule, or several computed side by side (the first is the primary: ranking, plots, report).
    aggregation: AggregationRule | list[AggregationRule] = "sciir_veto"
    bootstrap: BootstrapConfig = Field(default_factory=BootstrapConfig)
    # A benchmark file (``sciir.user_files.benchmark_file``) evaluated instead of the catalog's SciIR-Bench.
    benchmark: str | None = None
    images_dir: str | None = None
    verdicts_file: str | None = None
    # Requests taken ahead of the judge's replies (read, encoded, in flight); null: the judge's own window
    # (an HTTP backend's concurrency). ``batch_size`` is its former name, still read.
    window: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)
    questions_per_request: int | None = Field(default=None, ge=1)
    thumbnail_px: int = Field(default=256, ge=16)

    @field_validator("aggregation")
    @classmethod
    def _rules_listed_once(cls, value: AggregationRule | list[AggregationRule]) -> Any:
        if isinstance(value, list) and (not value or len(set(value)) < len(value)):
            raise ValueError(f"aggregation lists each rule once and at least one, got {value}")
        return value

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> EvaluateParams:
        self.window = window_setting("evaluate", self.window, self.batch_size)
        return self

    @property
    def rules(self) -> list[AggregationRule]:
        """The aggregation rules in order; the first is the primary one."""
        return [self.aggregation] if isinstance(self.aggregation, str) else list(self.aggregation)

    @property
    def primary_rule(self) -> AggregationRule:
        return self.rules[0]


@dataclass(frozen=True)
class ImageJob(ExpectedImage):
    """One image to judge: which model drew which sample, its prompt and its checklist."""

    prompt: str
    checklist: list[ChecklistItem]


@dataclass
class JudgeRun:
    """What judging produced besides verdict rows; passed on to the report and the metrics."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # image id -> why there was no image
    failed_requests: int = 0
    ignored_answers: list[str] = field(default_factory=list)

    def mark_unavailable(self, job: ImageJob, reason: str) -> None:
        """Record that a job had no usable image: every question fails with ``reason``."""
        self.unavailable[job.image_id] = reason
        self.rows.extend(failed_rows(job.checklist, job.model, job.sample_id, reason))


# ---- judging


def image_jobs(benchmark: pd.DataFrame, checklists: pd.DataFrame, models: Sequence[str]) -> list[ImageJob]:
    """One job per model and benchmark sample that has checklist questions (others are logged)."""
    questions = {
        sample: checklist_items(rows) for sample, rows in checklists.groupby("sample_id", sort=False)
    }
    without = [sample for sample in benchmark["sample_id"] if sample not in questions]
    what = "benchmark samples have no checklist questions (not judged)"
    log_list(logger, logging.WARNING, what, [str(sample) for sample in without], "samples_without_questions")
    return [
        ImageJob(model, row.sample_id, row.prompt, questions[row.sample_id])
        for model in models
        for row in benchmark.itertuples(index=False)
        if row.sample_id in questions
    ]


def _judge_requests(
    jobs: Sequence[ImageJob],
    images: PayloadLoaders,
    run: JudgeRun,
    questions_per_request: int | None,
    sent: dict[int, tuple[ImageJob, list[ChecklistItem]]],
    progress: Progress,
) -> Iterator[VLMRequest | Deferred[VLMRequest]]:
    """The judge requests of ``jobs``, made lazily: each image is read when its first request is taken
    from the stream (or, for a file checked before, only if the response cache has no answer:
    ``sciir.evaluation.known_files``). ``sent`` learns which image and questions each position of the stream asks
    about; an image that cannot be read is marked unavailable in ``run`` instead."""
    positions = count()
    # A sample's requests differ only by image: its prompt and checklist are rendered once, not per model.
    without_image: dict[str, list[tuple[list[ChecklistItem], VLMRequest]]] = {}
    for job in jobs:
        if job.sample_id not in without_image:
            chunks = checklist_chunks(job.checklist, questions_per_request)
            without_image[job.sample_id] = [
                (chunk, build_judge_request(job.prompt, chunk)) for chunk in chunks
            ]
        requests = without_image[job.sample_id]
        try:
            image = images[job.image_id]()
        except (OSError, ValueError) as exc:
            run.mark_unavailable(job, job.no_image(f"the image file could not be read ({exc})"))
            progress.skip(len(requests))
            continue
        for chunk, request in requests:
            sent[next(positions)] = (job, chunk)
            yield with_image(request, image)


def _judge_stream(
    jobs: Sequence[ImageJob],
    images: PayloadLoaders,
    judge: VisionLanguageModel,
    run: JudgeRun,
    config: EvaluateParams,
) -> None:
    """Stream one request per image (or per chunk of its checklist) through the judge, ``config.window``
    ahead of the replies at most; parse each reply as it arrives. Rows are added to ``run`` in stream
    order, whatever order the replies came in."""
    questions_per_request = config.questions_per_request
    total = sum(len(checklist_chunks(job.checklist, questions_per_request)) for job in jobs)
    sent: dict[int, tuple[ImageJob, list[ChecklistItem]]] = {}  # only the requests in flight
    parsed: dict[int, ParsedReply] = {}
    with Progress("judge_generations", total) as progress:

        def arrived(position: int, result: VLMResult) -> None:
            job, chunk = sent.pop(position)
            progress.add(result)
            run.failed_requests += not result.ok
            parsed[position] = parse_judge_reply(result, chunk, job.model, job.sample_id)

        requests = _judge_requests(jobs, images, run, questions_per_request, sent, progress)
        judge.generate_stream(requests, arrived, config.window)
    if sent:
        raise RuntimeError(f"the judge left {len(sent)} requests without a result")
    for position in sorted(parsed):
        run.rows.extend(parsed[position].rows)
        run.ignored_answers.extend(parsed[position].ignored)


# What evaluate reads of the tables that may not exist yet (``sciir.catalog.optional_dataset``).
CHECKLIST_INPUT_COLUMNS = (
    "sample_id",
    "question_id",
    "layer",
    "track",
    "question",
    "expected_text",
    "parent_ids",
)
BENCHMARK_INPUT_COLUMNS = ("sample_id", "group", "setting", "tracks", "prompt", "plan")
MANIFEST_INPUT_COLUMNS = ("model", "sample_id", "backend", "role", "seed", "status", "reason", "meta")


def checklists_or_empty(checklists: pd.DataFrame | MissingInput) -> pd.DataFrame:
    """The checklists, or none (a verdicts file brings its own layer and track)."""
    return frame_or_empty(checklists, CHECKLIST_INPUT_COLUMNS)


def benchmark_or_empty(benchmark: pd.DataFrame | MissingInput) -> pd.DataFrame:
    """The benchmark, or none (samples of a verdicts file then have no group or setting)."""
    return frame_or_empty(benchmark, BENCHMARK_INPUT_COLUMNS)


def manifest_or_empty(generation_manifest: pd.DataFrame | MissingInput) -> pd.DataFrame:
    """The generation manifest, or none (images without one are judged all the same)."""
    return frame_or_empty(generation_manifest, MANIFEST_INPUT_COLUMNS)


def judge_label(judge: VisionLanguageModel) -> str:
    """The judge's backend name, with its model when configured (e.g. ``OpenAICompatVLM:Qwen3-VL-8B``)."""
    identity = judge.identity()
    model = (identity.get("config") or {}).get("model")
    return f"{identity.get('backend', type(judge).__name__)}{f':{model}' if model else ''}"


def verdicts_from_file(
    path: Path, checklists: pd.DataFrame, benchmark: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Verdicts of another system read from ``path`` (see ``sciir.tasks.judge.read_verdicts_file``), and a
    run summary in which no judge was called and no image was looked for."""
    verdicts = read_verdicts_file(path, checklists, benchmark)
    logger.info(
        "read %d verdicts of %d models from %s; the judge is not called",
        len(verdicts),
        verdicts["model"].nunique(),
        path,
    )
    summary = {
        "judge": f"verdicts_file:{path.name}",
        "unavailable": {},
        "missing_images": {},
        "unused_images": [],
        "failed_requests": 0,
        "ignored_answers": [],
        "cache": {},
    }
    return verdicts, summary


def judge_generations(
    benchmark: pd.DataFrame,
    checklists: pd.DataFrame,
    generations: ImageFiles,
    generation_manifest: pd.DataFrame,
    judge: VisionLanguageModel,
    params: dict[str, Any],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judge every (model, sample) image: the ``verdicts`` table (with ``parent_ids``) and a run summary.

    The summary holds ``judge`` (its label), ``unavailable`` (image id -> reason), ``missing_images``
    (model -> count), ``unused_images`` (image files of no benchmark sample), ``failed_requests``,
    ``ignored_answers`` and the judge's cache ``stats`` when it has them.
    """
    config = EvaluateParams.model_validate(params)
    if config.verdicts_file:
        known = None if is_missing(benchmark) else benchmark
        return verdicts_from_file(Path(config.verdicts_file), checklists_or_empty(checklists), known)
    why = "to judge images (set evaluate.verdicts_file to re-aggregate verdicts instead)"
    benchmark, checklists = required(benchmark, why), required(checklists, why)
    images = image_source(mapping_or_empty(generations), config.images_dir)
    # The manifest describes the generations folder only, not a folder the user points at.
    manifest = {} if config.images_dir else manifest_entries(manifest_or_empty(generation_manifest))
    models = model_names((model for model, _ in manifest), images)
    jobs = image_jobs(benchmark, checklists, models)
    unused = unused_images(images, jobs)
    run = JudgeRun()
    available: list[ImageJob] = []
    for job in jobs:
        reason = unavailable_reason(job, manifest, images)
        if reason is None:
            available.append(job)
        else:
            run.mark_unavailable(job, reason)
    image_ids = [job.image_id for job in available]
    known = KnownFiles.beside(judge)
    with known or nullcontext():
        payloads = image_payloads(images, image_ids, backend_image_limits(judge), known)
        _judge_stream(available, payloads, judge, run, config)
    for message in run.ignored_answers:
        logger.warning(message)
    logger.info(
        "judged %d images of %d models; %d had no image; %d judge requests failed",
        len(available),
        len(models),
        len(run.unavailable),
        run.failed_requests,
    )
    summary = {
        "judge": judge_label(judge),
        "unavailable": run.unavailable,
        "missing_images": missing_per_model(run.unavailable, models),
        "unused_images": unused,
        "failed_requests": run.failed_requests,
        "ignored_answers": run.ignored_answers,
        "cache": dict(getattr(judge, "stats", {}) or {}),
    }
    return with_parent_ids(verdicts_frame(run.rows), checklists), summary


# ---- scores


def score_verdicts(verdicts: pd.DataFrame, benchmark: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``sample_scores`` table under the configured policy and every aggregation rule (``sciir.evaluation.scoring``)."""
    config = EvaluateParams.model_validate(params)
    return score_samples(verdicts, benchmark_or_empty(benchmark), config.unjudged_policy, config.rules)


def tabulate_scores(sample_scores: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``evaluate_scores`` table: per model and track / group / setting, score, interval, coverage."""
    return score_table(sample_scores, EvaluateParams.model_validate(params).bootstrap)


def model_roles(generation_manifest: pd.DataFrame, params: dict[str, Any]) -> dict[str, str]:
    """Model -> role (``contestant`` / ``reference``) from the generation manifest's ``role`` column;
    empty for a folder of the user's own images, whose models are all contestants."""
    generation_manifest = manifest_or_empty(generation_manifest)
    if EvaluateParams.model_validate(params).images_dir or "role" not in generation_manifest.columns:
        return {}
    roles = generation_manifest[["model", "role"]].dropna().drop_duplicates("model")
    return dict(zip(roles["model"].astype(str), roles["role"].astype(str), strict=True))


def rank_models(
    evaluate_scores: pd.DataFrame,
    generation_manifest: pd.DataFrame,
    params: dict[str, Any],
    source: dict[str, str] | None = None,
) -> pd.DataFrame:
    """The ``leaderboard`` table with intervals, samples counted and coverage: per rule, contestants by
    final score, then references (never ranked); its first column names the benchmark (``source``)."""
    board = leaderboard(evaluate_scores, model_roles(generation_manifest, params))
    board.insert(0, "benchmark", (source or {}).get("name", SAMPLE_BENCHMARK))
    return board


def list_missing_images(judge_summary: dict[str, Any]) -> pd.DataFrame:
    """The ``missing_images`` table: every (model, sample) without a usable image and why."""
    return missing_image_table(judge_summary["unavailable"])


# ---- plots and report


def plot_tracks(leaderboard: pd.DataFrame, params: dict[str, Any]) -> Any:
    """Grouped bars of each model's score per track, with bootstrap interval whiskers; references are
    named so in the legend."""
    rule = EvaluateParams.model_validate(params).primary_rule
    board = leaderboard[leaderboard["aggregation"] == rule]
    names = board["model"].where(board["role"] == CONTESTANT, board["model"] + " (reference)")
    return plot_track_pass_rates(board.assign(model=names), TRACKS, RULE_LABELS[rule])


def plot_groups(evaluate_scores: pd.DataFrame, params: dict[str, Any]) -> Any:
    """Heatmap of each model's final score per benchmark group."""
    label = RULE_LABELS[EvaluateParams.model_validate(params).primary_rule]
    return plot_group_heatmap(breakdown_table(evaluate_scores, "group"), f"Final {label} per group")


def _report_meta(
    config: EvaluateParams, judge_summary: dict[str, Any], source: dict[str, str] | None
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


def build_report(
    leaderboard: pd.DataFrame,
    evaluate_scores: pd.DataFrame,
    sample_scores: pd.DataFrame,
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    generations: ImageFiles,
    judge_summary: dict[str, Any],
    params: dict[str, Any],
    source: dict[str, str] | None = None,
) -> ReportFolder:
    """The HTML report as a folder (``sciir.evaluation.report``): a summary page with scores and intervals, coverage,
    the group heatmap and the missing images, then one page per model with every image's thumbnail
    beside its checklist."""
    config = EvaluateParams.model_validate(params)
    label = RULE_LABELS[config.primary_rule]
    boards = [
        leaderboard_table(f"Leaderboard ({RULE_LABELS[rule]}, 95% interval, n = samples counted)", rows)
        for rule, rows in leaderboard.groupby("aggregation", sort=False)
    ]
    primary = leaderboard[leaderboard["aggregation"] == config.primary_rule]
    tables = [
        *boards,
        coverage_table("Coverage (judged / all questions)", primary),
        breakdown_intervals(f"Final {label} per setting", evaluate_scores, "setting"),
        breakdown_intervals(f"Final {label} per group", evaluate_scores, "group"),
    ]
    views = image_views(
        verdicts,
        checklists_or_empty(checklists),
        sample_scores,
        benchmark_or_empty(benchmark),
        image_source(mapping_or_empty(generations), config.images_dir),
        judge_summary["unavailable"],
        config.thumbnail_px,
    )
    return render_report(
        tables,
        views,
        _report_meta(config, judge_summary, source),
        title=report_title((source or {}).get("name", SAMPLE_BENCHMARK)),
        heatmaps=[heatmap(f"Final {label} per group (heatmap)", evaluate_scores, "group")],
        missing=missing_images(judge_summary["unavailable"]),
    )


# ---- judge validation, MLflow runs per model, metrics


def validate_judge(
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    generation_manifest: pd.DataFrame,
    judge_summary: dict[str, Any],
    params: dict[str, Any],
) -> pd.DataFrame:
    """The ``judge_validation`` table: detection, false-alarm and abstention rates per question type on
    the images whose content is known (``sciir.evaluation.judge_validation``)."""
    config = EvaluateParams.model_validate(params)
    generation_manifest = manifest_or_empty(generation_manifest)
    if config.images_dir or config.verdicts_file:
        logger.info(
            "%s is set: the generation manifest does not describe those images; no ground truth",
            "images_dir" if config.images_dir else "verdicts_file",
        )
        generation_manifest = generation_manifest.iloc[0:0]
    checklists, benchmark = checklists_or_empty(checklists), benchmark_or_empty(benchmark)
    truth = question_truth(verdicts, checklists, benchmark, generation_manifest)
    table = validation_table(truth, judge_summary["judge"])
    logger.info(
        "judge validation on %d images with known content:\n%s",
        truth[["model", "sample_id"]].drop_duplicates().shape[0],
        table.to_string(index=False),
    )
    return table


def log_model_runs(
    evaluate_scores: pd.DataFrame, verdicts: pd.DataFrame, judge_summary: dict[str, Any]
) -> dict[str, str]:
    """One nested MLflow run per model inside the active run (its scores, intervals, coverage and
    missing images as metrics; its verdicts and missing images as artifacts): model -> run id."""
    missing = list_missing_images(judge_summary)
    runs = {
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
    return log_nested_runs(runs, name_tag="sciir.model")


def summarise_evaluation(
    leaderboard: pd.DataFrame,
    evaluate_scores: pd.DataFrame,
    judge_validation: pd.DataFrame,
    judge_summary: dict[str, Any],
) -> dict[str, float]:
    """``evaluate_metrics`` and a logged leaderboard table.

    Per model: scores per track, group and setting with their intervals, coverage overall and per
    track, missing images (``sciir.evaluation.scoring.model_metrics``). For the judge: its validation rates,
    failed requests, ignored answers, cache hits / misses / failures, and the HTTP requests, tokens and
    estimated cost of the calls actually sent (see ``stats_metrics``).
    """
    metrics: dict[str, float] = {}
    for model in pd.unique(leaderboard["model"]):
        metrics |= {f"{model}.{name}": value for name, value in model_metrics(evaluate_scores, model).items()}
    metrics |= {f"{model}.missing_images": float(n) for model, n in judge_summary["missing_images"].items()}
    metrics["unused_images"] = float(len(judge_summary["unused_images"]))
    metrics |= validation_metrics(judge_validation)
    metrics["judge_failed_requests"] = float(judge_summary["failed_requests"])
    metrics["judge_ignored_answers"] = float(len(judge_summary["ignored_answers"]))
    metrics |= stats_metrics(judge_summary["cache"], prefix="judge_")
    logger.info("leaderboard:\n%s", leaderboard_text(leaderboard))
    return metrics
