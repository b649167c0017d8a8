"""The AIBench examination: the solver answers the questions of each AIBench illustration (one request, the
image alone, never the generation prompt: AIBench section 3.5) and the judge rates its aesthetics (one
request).

Every model of the AIBench generation manifest (or with an image) is expected to have drawn every paper of
the AIBench set. A failed generation (with the generator's reason), a missing or an unreadable image gives
rows marked ``failed`` with the reason, so it lowers coverage and is never scored as wrong. References
(role ``reference`` in the manifest: the logic graph drawn exactly or with planted faults) are examined
too, as images of known content that show what the solver can read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from sciir.aibench.choices import question_options
from sciir.backends.base import VisionLanguageModel, VLMRequest
from sciir.evaluation.generated_images import (
    ExpectedImage,
    ImageLoaders,
    ManifestEntries,
    manifest_entries,
    model_names,
    unavailable_reason,
)
from sciir.evaluation.per_image_requests import (
    Asked,
    ask_per_image,
    failed_request_count,
    missing_image_counts,
)
from sciir.runs.long_lists import log_list
from sciir.tasks.aesthetics import (
    AESTHETICS_TASK,
    AestheticsRating,
    aesthetics_frame,
    aesthetics_row,
    build_aesthetics_request,
    parse_aesthetics_reply,
)
from sciir.tasks.aibench_qa import (
    SOLVER_TASK,
    AnswerOutcome,
    answer_rows,
    answers_frame,
    build_solver_request,
    parse_solver_reply,
    solver_items,
)

logger = logging.getLogger(__name__)


def questions_by_sample(sample_ids: Sequence[str], aibench_qa: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The AIBench questions of each of ``sample_ids`` (samples without any are logged)."""
    questions = {str(sample): frame for sample, frame in aibench_qa.groupby("sample_id", sort=False)}
    without = [sample for sample in sample_ids if sample not in questions]
    log_list(
        logger,
        logging.WARNING,
        "AIBench-set samples have no AIBench questions",
        without,
        "no_aibench_questions",
    )
    return {sample: questions[sample] for sample in sample_ids if sample in questions}


def examination_requests(
    job: ExpectedImage, items: Mapping[str, list[dict[str, Any]]]
) -> dict[str, VLMRequest]:
    """The aesthetics request of an image, and its solver request when its sample has questions (made
    without the image, which ``ask_per_image`` adds)."""
    requests = {AESTHETICS_TASK: build_aesthetics_request()}
    if job.sample_id in items:
        requests[SOLVER_TASK] = build_solver_request(items[job.sample_id])
    return requests


def solver_answer_rows(asked: Asked, questions: pd.DataFrame) -> tuple[list[dict[str, Any]], list[str]]:
    """The ``aibench_answers`` rows of one image, and the answers its reply gave to unknown ids."""
    job, ids = asked.job, [str(qid) for qid in questions["question_id"]]
    if asked.unavailable is not None:
        outcomes = dict.fromkeys(ids, AnswerOutcome(None, "failed", reason=asked.unavailable))
        return answer_rows(job.model, job.sample_id, questions, outcomes), []
    letters = {
        str(row.question_id): tuple(options)
        for row in questions.itertuples(index=False)
        if (options := question_options(row)) is not None
    }
    outcomes, ignored = parse_solver_reply(asked.results[SOLVER_TASK], ids, job.image_id, letters)
    return answer_rows(job.model, job.sample_id, questions, outcomes), ignored


def aesthetics_rating(asked: Asked) -> AestheticsRating:
    """The judge's aesthetics rating of one image, or why it has none."""
    if asked.unavailable is not None:
        return AestheticsRating(reason=asked.unavailable)
    return parse_aesthetics_reply(asked.results[AESTHETICS_TASK], asked.job.image_id)


def examination_jobs(
    images: ImageLoaders, manifest: ManifestEntries, sample_ids: Sequence[str]
) -> tuple[list[ExpectedImage], dict[ExpectedImage, str]]:
    """Every model of the manifest or the images x every sample, and why each pair that cannot be
    examined cannot (a failed generation with its reason, no file)."""
    models = model_names((model for model, _ in manifest), images)
    jobs = [ExpectedImage(model, sample) for model in models for sample in sample_ids]
    reasons = {job: unavailable_reason(job, manifest, images) for job in jobs}
    return jobs, {job: reason for job, reason in reasons.items() if reason is not None}


def no_examination(reason: str) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Empty ``aibench_answers`` and ``aesthetics_ratings`` and an empty run summary, with one log line
    saying why the examination did not run."""
    logger.info("AIBench examination skipped: %s", reason)
    summary: dict[str, Any] = {
        "missing_images": {},
        "failed_requests": {},
        "ignored_answers": [],
        "cache": {},
    }
    return answers_frame([]), aesthetics_frame([]), summary


def examine_illustrations(
    images: ImageLoaders,
    generation_manifest: pd.DataFrame,
    aibench_set: pd.DataFrame,
    aibench_qa: pd.DataFrame,
    judge: VisionLanguageModel,
    window: int | None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Every model's illustration of every AIBench-set paper, ``window`` requests ahead of the replies:
    ``aibench_answers`` (one row per model, sample and question), ``aesthetics_ratings`` (one row per
    model and sample) and a run summary (missing images per model, failed requests per task, the answers
    given to unknown question ids, and the judge's cache stats). A manifest without images (every
    generation failed) is examined: each pair fails with its generation's reason."""
    sample_ids = [str(sample) for sample in aibench_set["sample_id"]]
    questions = questions_by_sample(sample_ids, aibench_qa)
    items = {sample: solver_items(frame) for sample, frame in questions.items()}
    jobs, unavailable = examination_jobs(images, manifest_entries(generation_manifest), sample_ids)
    answered = ask_per_image(
        [job for job in jobs if job not in unavailable],
        images,
        judge,
        lambda job: examination_requests(job, items),
        window,
        "examine_aibench_images",
    )
    by_job = {item.job: item for item in answered}
    asked = [by_job.get(job) or Asked(job, {}, unavailable[job]) for job in jobs]
    answers: list[dict[str, Any]] = []
    ignored: list[str] = []
    for item in asked:
        if item.job.sample_id in questions:
            rows, extra = solver_answer_rows(item, questions[item.job.sample_id])
            answers += rows
            ignored += extra
    ratings = [aesthetics_row(item.job.model, item.job.sample_id, aesthetics_rating(item)) for item in asked]
    for message in ignored:
        logger.warning(message)
    summary = {
        "missing_images": missing_image_counts(asked),
        "failed_requests": {
            task: failed_request_count(asked, task) for task in (SOLVER_TASK, AESTHETICS_TASK)
        },
        "ignored_answers": ignored,
        "cache": dict(judge.stats),
    }
    return answers_frame(answers), aesthetics_frame(ratings), summary
