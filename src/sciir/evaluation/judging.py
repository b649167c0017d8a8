"""Judging every generated image against its checklist: one job per model and benchmark sample, the judge
requests made lazily and streamed through the judge, the verdict rows in stream order, and the run summary
(unavailable images, failed requests, ignored answers, cache counts).

Every model with an image file, and every model of the generation manifest, is judged on every benchmark
sample. A (model, sample) pair without a usable image (no file, a failed generation, an unreadable file)
gets ``failed`` rows whose reason says so: it is listed as missing, counted in coverage, and never scored
as a pass or a fail behind the user's back. Verdicts of another system read from a file
(:func:`verdicts_from_file`) come with a summary in which no judge was called.
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

from sciir.backends.base import Deferred, VisionLanguageModel, VLMRequest, VLMResult
from sciir.evaluation.generated_images import (
    ExpectedImage,
    ImageLoaders,
    ManifestEntries,
    PayloadLoaders,
    image_payloads,
    missing_per_model,
    model_names,
    unavailable_reason,
    unused_images,
)
from sciir.evaluation.known_files import KnownFiles, with_image
from sciir.evaluation.verdicts import read_verdicts_file, with_parent_ids
from sciir.runs.long_lists import log_list
from sciir.runs.progress import Progress
from sciir.tasks.judge import (
    ChecklistItem,
    ParsedReply,
    build_judge_request,
    checklist_chunks,
    checklist_items,
    failed_rows,
    parse_judge_reply,
    verdicts_frame,
)

logger = logging.getLogger(__name__)


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


def judge_jobs(benchmark: pd.DataFrame, checklists: pd.DataFrame, models: Sequence[str]) -> list[ImageJob]:
    """One job per model and benchmark sample that has checklist questions (others are logged)."""
    questions = {
        sample: checklist_items(rows) for sample, rows in checklists.groupby("sample_id", sort=False)
    }
    without = [sample for sample in benchmark["sample_id"] if sample not in questions]
    what = "benchmark samples have no checklist questions (not judged)"
    log_list(logger, logging.WARNING, what, [str(sample) for sample in without], "samples_without_questions")
    # Each row's fields are typed by the table (pandas-stubs types each as any scalar).
    rows: list[Any] = list(benchmark.itertuples(index=False))
    return [
        ImageJob(model, row.sample_id, row.prompt, questions[row.sample_id])
        for model in models
        for row in rows
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
    window: int | None,
    questions_per_request: int | None,
) -> None:
    """Stream one request per image (or per chunk of its checklist) through the judge, ``window`` ahead
    of the replies at most; parse each reply as it arrives. Rows are added to ``run`` in stream order,
    whatever order the replies came in."""
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
        # A Deferred request comes only of a file known beside the response cache (``judge_images``):
        # the judge is then a cached one, whose stream takes it (Model.stream does not).
        judge.stream(requests, arrived, window)  # type: ignore[arg-type]
    if sent:
        raise RuntimeError(f"the judge left {len(sent)} requests without a result")
    for position in sorted(parsed):
        run.rows.extend(parsed[position].rows)
        run.ignored_answers.extend(parsed[position].ignored)


def judge_label(judge: VisionLanguageModel) -> str:
    """The judge's backend name, with its model when configured (e.g. ``OpenAICompatVLM:Qwen3-VL-8B``)."""
    identity = judge.identity()
    model = (identity.get("config") or {}).get("model")
    return f"{identity.get('backend', type(judge).__name__)}{f':{model}' if model else ''}"


def _summary(judge: str) -> dict[str, Any]:
    """A run summary in which no judge request was made and no image was looked at."""
    return {
        "judge": judge,
        "unavailable": {},
        "missing_images": {},
        "unused_images": [],
        "failed_requests": 0,
        "ignored_answers": [],
        "cache": {},
    }


def no_checklist_questions(
    checklists: pd.DataFrame, judge: VisionLanguageModel
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """No verdicts, for a benchmark without yes/no checklist questions (one of multiple-choice questions
    only, such as AIBench's file, is examined by the AIBench solver), said in one log line."""
    logger.info(
        "the benchmark has no checklist questions: the judge has nothing to ask (multiple-choice "
        "questions are the AIBench examination's)"
    )
    return with_parent_ids(verdicts_frame([]), checklists), _summary(judge_label(judge))


def verdicts_from_file(
    path: Path, checklists: pd.DataFrame, benchmark: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Verdicts of another system read from ``path`` (see ``sciir.evaluation.verdicts.read_verdicts_file``),
    and a run summary in which no judge was called and no image was looked for."""
    verdicts = read_verdicts_file(path, checklists, benchmark)
    logger.info(
        "read %d verdicts of %d models from %s; the judge is not called",
        len(verdicts),
        verdicts["model"].nunique(),
        path,
    )
    return verdicts, _summary(f"verdicts_file:{path.name}")


def judge_images(
    benchmark: pd.DataFrame,
    checklists: pd.DataFrame,
    images: ImageLoaders,
    manifest: ManifestEntries,
    judge: VisionLanguageModel,
    window: int | None,
    questions_per_request: int | None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judge every (model, sample) image of ``images`` and of the generation ``manifest``: the
    ``verdicts`` table (with ``parent_ids``) and a run summary.

    The summary holds ``judge`` (its label), ``unavailable`` (image id -> reason), ``missing_images``
    (model -> count), ``unused_images`` (image files of no benchmark sample), ``failed_requests``,
    ``ignored_answers`` and the judge's cache ``stats`` (empty when it has none).
    """
    models = model_names((model for model, _ in manifest), images)
    jobs = judge_jobs(benchmark, checklists, models)
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
    known = KnownFiles.beside(judge.cache_file)
    with known or nullcontext():
        payloads = image_payloads(images, image_ids, judge.image_limits, known)
        _judge_stream(available, payloads, judge, run, window, questions_per_request)
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
        "cache": dict(judge.stats),
    }
    return with_parent_ids(verdicts_frame(run.rows), checklists), summary
