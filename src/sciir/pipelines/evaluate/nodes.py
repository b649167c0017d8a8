"""Evaluate nodes: judge every generated image against its checklist, score, rank and report.

Every (model, benchmark sample) pair gets one verdict row per checklist question. A pair without a
usable image (no manifest entry, a failed generation, no file, an unreadable file) gets ``failed``
rows whose reason says so; it is never scored as a pass or a fail behind the user's back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.backends.base import VisionLanguageModel, VLMRequest
from sciir.judging import (
    JUDGE_TEMPLATE_VERSION,
    ChecklistItem,
    build_judge_request,
    checklist_items,
    failed_rows,
    image_png_bytes,
    parse_judge_reply,
    verdicts_frame,
)
from sciir.plots import plot_track_pass_rates
from sciir.report import image_views, render_report, table_from_frame
from sciir.scoring import (
    FINAL,
    TRACKS,
    UnjudgedPolicy,
    coverage_by_track,
    final_pass_rate_by,
    leaderboard,
    score_samples,
)

logger = logging.getLogger(__name__)

ImageLoaders = Mapping[str, Callable[[], Image.Image]]


class EvaluateParams(BaseModel):
    """``params:evaluate`` (conf/base/parameters_evaluate.yml)."""

    model_config = ConfigDict(extra="forbid")

    unjudged_policy: UnjudgedPolicy = "exclude"
    batch_size: int = Field(default=16, ge=1)
    thumbnail_px: int = Field(default=256, ge=16)


@dataclass(frozen=True)
class ImageJob:
    """One image to judge: which model drew which sample, its prompt and its checklist."""

    model: str
    sample_id: str
    prompt: str
    checklist: list[ChecklistItem]

    @property
    def image_id(self) -> str:
        return f"{self.model}/{self.sample_id}"

    def no_image(self, detail: str) -> str:
        """The reason recorded on every question of an image that could not be judged."""
        return f"no image from model {self.model} for sample {self.sample_id}: {detail}"


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


def model_names(generation_manifest: pd.DataFrame, generations: ImageLoaders) -> list[str]:
    """The models of the generation manifest; image files of other models are stale and only logged."""
    models = sorted(set(generation_manifest["model"].astype(str)))
    stale = sorted({key.rsplit("/", 1)[0] for key in generations} - set(models))
    if stale:
        logger.warning("image files of models not in the generation manifest are not judged: %s", stale)
    return models


def image_jobs(benchmark: pd.DataFrame, checklists: pd.DataFrame, models: Sequence[str]) -> list[ImageJob]:
    """One job per model and benchmark sample that has checklist questions (others are logged)."""
    questions = {
        sample: checklist_items(rows) for sample, rows in checklists.groupby("sample_id", sort=False)
    }
    without = [sample for sample in benchmark["sample_id"] if sample not in questions]
    if without:
        logger.warning(
            "%d benchmark samples have no checklist questions and are not judged: %s",
            len(without),
            ", ".join(without),
        )
    return [
        ImageJob(model, row.sample_id, row.prompt, questions[row.sample_id])
        for model in models
        for row in benchmark.itertuples(index=False)
        if row.sample_id in questions
    ]


def unavailable_reason(
    job: ImageJob, manifest: Mapping[tuple[str, str], Any], generations: ImageLoaders
) -> str | None:
    """Why a job has no image to judge, from the manifest and the image files; None when it has one."""
    entry = manifest.get((job.model, job.sample_id))
    if entry is None:
        return job.no_image("not in the generation manifest")
    if entry.status != "ok":
        return job.no_image(str(entry.reason))
    if job.image_id not in generations:
        return job.no_image("the manifest says ok but there is no image file")
    return None


def _batches(jobs: Sequence[ImageJob], size: int) -> Iterator[Sequence[ImageJob]]:
    for start in range(0, len(jobs), size):
        yield jobs[start : start + size]


def _judge_batch(
    jobs: Sequence[ImageJob], generations: ImageLoaders, judge: VisionLanguageModel, run: JudgeRun
) -> None:
    """Encode the batch's images, send one request per image, parse the replies into ``run``."""
    sent: list[ImageJob] = []
    requests: list[VLMRequest] = []
    for job in jobs:
        try:
            png = image_png_bytes(generations[job.image_id]())
        except (OSError, ValueError) as exc:
            run.mark_unavailable(job, job.no_image(f"the image file could not be read ({exc})"))
            continue
        sent.append(job)
        requests.append(build_judge_request(job.prompt, job.checklist, png))
    results = judge.generate(requests) if requests else []
    if len(results) != len(requests):
        raise RuntimeError(f"judge returned {len(results)} results for {len(requests)} requests")
    for job, result in zip(sent, results, strict=True):
        run.failed_requests += not result.ok
        parsed = parse_judge_reply(result, job.checklist, job.model, job.sample_id)
        run.rows.extend(parsed.rows)
        run.ignored_answers.extend(parsed.ignored)


def judge_generations(
    benchmark: pd.DataFrame,
    checklists: pd.DataFrame,
    generations: ImageLoaders,
    generation_manifest: pd.DataFrame,
    judge: VisionLanguageModel,
    params: dict[str, Any],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judge every (model, sample) image: the ``verdicts`` table and a run summary for later nodes.

    The summary holds ``unavailable`` (image id -> reason), ``missing_images`` (model -> count),
    ``failed_requests``, ``ignored_answers`` and the judge's cache ``stats`` when it has them.
    """
    config = EvaluateParams.model_validate(params)
    models = model_names(generation_manifest, generations)
    manifest = {
        (str(row.model), str(row.sample_id)): row for row in generation_manifest.itertuples(index=False)
    }
    run = JudgeRun()
    available: list[ImageJob] = []
    for job in image_jobs(benchmark, checklists, models):
        reason = unavailable_reason(job, manifest, generations)
        if reason is None:
            available.append(job)
        else:
            run.mark_unavailable(job, reason)
    for batch in _batches(available, config.batch_size):
        _judge_batch(batch, generations, judge, run)
    for message in run.ignored_answers:
        logger.warning(message)
    missing = Counter(image_id.rsplit("/", 1)[0] for image_id in run.unavailable)
    logger.info(
        "judged %d images; %d had no image; %d judge requests failed",
        len(available),
        len(run.unavailable),
        run.failed_requests,
    )
    summary = {
        "unavailable": run.unavailable,
        "missing_images": {model: missing.get(model, 0) for model in models},
        "failed_requests": run.failed_requests,
        "ignored_answers": run.ignored_answers,
        "cache": dict(getattr(judge, "stats", {}) or {}),
    }
    return verdicts_frame(run.rows), summary


def score_verdicts(verdicts: pd.DataFrame, benchmark: pd.DataFrame, params: dict[str, Any]) -> pd.DataFrame:
    """The ``sample_scores`` table under the configured unjudged policy (see ``sciir.scoring``)."""
    return score_samples(verdicts, benchmark, EvaluateParams.model_validate(params).unjudged_policy)


def rank_models(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """The ``leaderboard`` table, best final pass rate first."""
    return leaderboard(sample_scores)


def plot_tracks(leaderboard: pd.DataFrame) -> Any:
    """Grouped bars of each model's pass rate per track."""
    return plot_track_pass_rates(leaderboard, TRACKS)


def build_report(
    leaderboard: pd.DataFrame,
    sample_scores: pd.DataFrame,
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    generations: ImageLoaders,
    judge_summary: dict[str, Any],
    params: dict[str, Any],
) -> str:
    """The self-contained HTML report: summary tables, then every image beside its checklist."""
    config = EvaluateParams.model_validate(params)
    tables = [
        table_from_frame("Leaderboard (pass rates, strict veto)", leaderboard),
        table_from_frame("Coverage (judged / all questions)", coverage_by_track(sample_scores)),
        table_from_frame("Final pass rate per group", final_pass_rate_by(sample_scores, "group")),
        table_from_frame("Final pass rate per setting", final_pass_rate_by(sample_scores, "setting")),
    ]
    views = image_views(
        verdicts,
        checklists,
        sample_scores,
        benchmark,
        generations,
        judge_summary["unavailable"],
        config.thumbnail_px,
    )
    meta = {"judge template": JUDGE_TEMPLATE_VERSION, "unjudged questions": config.unjudged_policy}
    return render_report(tables, views, meta)


def _wide_metrics(table: pd.DataFrame, name: Callable[[str, str], str]) -> dict[str, float]:
    """``{name(model, column): value}`` for every cell of a table with one row per model."""
    metrics: dict[str, float] = {}
    for record in table.to_dict("records"):
        model = record.pop("model")
        metrics |= {name(model, column): float(value) for column, value in record.items()}
    return metrics


def summarise_evaluation(
    leaderboard: pd.DataFrame, sample_scores: pd.DataFrame, judge_summary: dict[str, Any]
) -> dict[str, float]:
    """``evaluate_metrics`` and a logged leaderboard table.

    Per model: the leaderboard columns, coverage per track, final pass rate per group and setting,
    missing images. For the judge: failed requests, ignored answers, cache hits / misses / failures.
    """
    metrics = _wide_metrics(leaderboard, lambda model, column: f"{model}.{column}")
    per_track = coverage_by_track(sample_scores).drop(columns=[FINAL], errors="ignore")
    metrics |= _wide_metrics(per_track, lambda model, track: f"{model}.coverage.{track}")
    for column in ("group", "setting"):
        metrics |= _wide_metrics(
            final_pass_rate_by(sample_scores, column),
            lambda model, value, column=column: f"{model}.{column}.{value}",
        )
    metrics |= {f"{model}.missing_images": float(n) for model, n in judge_summary["missing_images"].items()}
    metrics["judge_failed_requests"] = float(judge_summary["failed_requests"])
    metrics["judge_ignored_answers"] = float(len(judge_summary["ignored_answers"]))
    metrics |= {f"judge_cache_{key}": float(value) for key, value in judge_summary["cache"].items()}
    logger.info("leaderboard:\n%s", leaderboard.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return metrics
