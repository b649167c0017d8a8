"""AIBench on the evaluate side: the solver answers the questions of each AIBench illustration, the judge
rates its aesthetics, baseline metrics (CLIPScore, VQAScore) of the SciIR-Bench images are computed when
configured, and everything is scored.

The AIBench examination reads ``aibench_generations``: each contestant's illustration of each paper of
the AIBench set, drawn from the paper's method text by generate (``sciir.pipelines.generate.aibench_nodes``),
with its manifest. Every model of that manifest (or with an image there) is expected to have drawn every
paper of ``aibench_set``. A failed generation (with the generator's reason), a missing or an unreadable
image gives rows marked ``failed`` with the reason, so it lowers coverage and is never scored as wrong.
The solver sees the image alone, never the generation prompt (AIBench section 3.5). References (role
``reference`` in the manifest: the logic graph drawn exactly or with planted faults) are examined too,
as images of known content that show what the solver can read; their scores are marked by role.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import count
from typing import Any, cast

import pandas as pd
from kedro.pipeline import Pipeline, node
from PIL import Image

from sciir.aibench.level_accuracy import metrics_from_table, score_answers
from sciir.aibench.params import AIBenchParams
from sciir.aibench.questions import LEVEL_NAMES
from sciir.backends.base import Deferred, VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import ResponseCache, stats_metrics
from sciir.catalog.optional_dataset import MissingInput, is_missing
from sciir.evaluation.baseline_metrics import (
    CLIP_SKIPPED,
    CLIPSCORE,
    VQASCORE,
    VQASCORE_SKIPPED,
    ClipSettings,
    VQAScoreSettings,
    baseline_frame,
    baseline_summary,
    build_vqascore_request,
    failed_row,
    scored_row,
    vqascore_from_result,
)
from sciir.evaluation.generated_images import (
    ExpectedImage,
    ImageLoaders,
    ManifestEntries,
    NoImageError,
    image_models,
    image_source,
    load_image,
    load_payload,
    manifest_entries,
    missing_per_model,
    model_names,
    unavailable_reason,
)
from sciir.evaluation.known_files import KnownFiles, with_image
from sciir.images.payload import backend_image_limits
from sciir.pipelines.evaluate.nodes import model_roles
from sciir.runs.long_lists import log_list
from sciir.runs.progress import Progress
from sciir.tasks import aesthetics
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


def image_jobs(generations: ImageLoaders, sample_ids: Sequence[str]) -> list[ExpectedImage]:
    """Every model x every sample: an image each model is expected to have drawn."""
    return [ExpectedImage(model, sample) for model in image_models(generations) for sample in sample_ids]


@dataclass(frozen=True)
class Asked:
    """A model's results for one image, by task, or why no request was sent (no usable image)."""

    job: ExpectedImage
    results: Mapping[str, VLMResult]
    unavailable: str | None = None

    @property
    def ok(self) -> bool:
        """Every request about the image was answered (for progress counts)."""
        return self.unavailable is None and all(result.ok for result in self.results.values())

    @property
    def cached(self) -> bool:
        """Every answer about the image came from the response cache."""
        return bool(self.results) and all(result.cached for result in self.results.values())


def ask_per_image(
    jobs: Sequence[ExpectedImage],
    generations: ImageLoaders,
    model: VisionLanguageModel,
    build: Callable[[ExpectedImage], dict[str, VLMRequest]],
    window: int | None,
    name: str,
) -> list[Asked]:
    """The requests ``build`` makes of each usable image (by task, made without the image, which is added
    here), streamed through ``model`` at most ``window`` ahead of the replies (None: the model's own
    window); each image is read when its first request is taken from the stream, or for a file checked
    before only on a cache miss (``sciir.evaluation.known_files``). Progress, per image, is shown and logged as
    ``name``."""
    limits, known = backend_image_limits(model), KnownFiles.beside(model)
    sent: dict[int, tuple[int, str]] = {}  # stream position -> (job number, task), while in flight
    waiting: dict[int, int] = {}  # job number -> its requests still without a result
    results: dict[int, dict[str, VLMResult]] = defaultdict(dict)
    unavailable: dict[int, str] = {}
    with Progress(name, len(jobs), unit="image") as progress, known or nullcontext():

        def requests() -> Iterator[VLMRequest | Deferred[VLMRequest]]:
            positions = count()
            for number, job in enumerate(jobs):
                try:
                    image = load_payload(job, generations, limits, known)
                except NoImageError as error:
                    unavailable[number] = str(error)
                    progress.skip(1)
                    continue
                built = build(job)
                waiting[number] = len(built)
                for task, request in built.items():
                    sent[next(positions)] = (number, task)
                    yield with_image(request, image)

        def arrived(position: int, result: VLMResult) -> None:
            number, task = sent.pop(position)
            results[number][task] = result
            waiting[number] -= 1
            if not waiting[number]:
                del waiting[number]
                progress.add(Asked(jobs[number], results[number]))

        model.generate_stream(requests(), arrived, window)
    if sent:
        raise RuntimeError(f"backend left {len(sent)} requests without a result")
    return [Asked(job, results.get(number, {}), unavailable.get(number)) for number, job in enumerate(jobs)]


def failed_requests(asked: Sequence[Asked], task: str) -> int:
    return sum(1 for item in asked if task in item.results and not item.results[task].ok)


def missing_images(asked: Sequence[Asked]) -> dict[str, int]:
    """Per model, the images it was expected to draw but that are missing or unreadable."""
    missing = (item.job.image_id for item in asked if item.unavailable)
    return missing_per_model(missing, sorted({item.job.model for item in asked}))


# ---- the solver answers every question of an image in one request; the judge rates its aesthetics


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


def image_requests(job: ExpectedImage, items: Mapping[str, list[dict[str, Any]]]) -> dict[str, VLMRequest]:
    """The aesthetics request of an image, and its solver request when its sample has questions (made
    without the image, which :func:`ask_per_image` adds)."""
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
    outcomes, ignored = parse_solver_reply(asked.results[SOLVER_TASK], ids, job.image_id)
    return answer_rows(job.model, job.sample_id, questions, outcomes), ignored


def aesthetics_rating(asked: Asked) -> AestheticsRating:
    if asked.unavailable is not None:
        return AestheticsRating(reason=asked.unavailable)
    return parse_aesthetics_reply(asked.results[AESTHETICS_TASK], asked.job.image_id)


def image_branch_skip(verdicts_file: str | None, **inputs: Any) -> str | None:
    """Why a branch that looks at images does not run: verdicts come from a file (no image is involved),
    or one of its inputs does not exist yet. None when it runs."""
    if verdicts_file:
        return f"evaluate.verdicts_file is set ({verdicts_file}): no image is looked at"
    missing = [f"{name} ({value.location})" for name, value in inputs.items() if is_missing(value)]
    return f"{', '.join(missing)} not found" if missing else None


def examination_skip(verdicts_file: str | None, images_dir: str | None, **inputs: Any) -> str | None:
    """Why the AIBench examination does not run (see :func:`image_branch_skip`); also when
    ``evaluate.images_dir`` is set, as that folder holds SciIR-Bench images, not AIBench illustrations."""
    skip = image_branch_skip(verdicts_file, **inputs)
    if skip is None and images_dir:
        return (
            f"evaluate.images_dir is set ({images_dir}): it holds SciIR-Bench images, and the AIBench "
            "illustrations are read from aibench_generations"
        )
    return skip


def examination_jobs(
    images: ImageLoaders, manifest: ManifestEntries, sample_ids: Sequence[str]
) -> tuple[list[ExpectedImage], dict[ExpectedImage, str]]:
    """Every model of the manifest or the images x every sample, and why each pair that cannot be
    examined cannot (a failed generation with its reason, no file)."""
    models = model_names((model for model, _ in manifest), images)
    jobs = [ExpectedImage(model, sample) for model in models for sample in sample_ids]
    reasons = {job: unavailable_reason(job, manifest, images) for job in jobs}
    return jobs, {job: reason for job, reason in reasons.items() if reason is not None}


def _no_examination(reason: str) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    logger.info("AIBench examination skipped: %s", reason)
    summary = {"missing_images": {}, "failed_requests": {}, "ignored_answers": [], "cache": {}}
    return answers_frame([]), aesthetics_frame([]), summary


def examine_images(
    aibench_generations: ImageLoaders | MissingInput,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    aibench_set: pd.DataFrame | MissingInput,
    aibench_qa: pd.DataFrame | MissingInput,
    judge: VisionLanguageModel,
    params: dict[str, Any],
    verdicts_file: str | None = None,
    images_dir: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """Every model's illustration of every AIBench-set paper: the solver answers its AIBench questions
    (one request, the image alone) and the judge rates its aesthetics (one request).

    Returns ``aibench_answers`` (one row per model, sample and question), ``aesthetics_ratings`` (one row
    per model and sample) and a run summary: missing images per model, failed requests per task, the
    answers given to unknown question ids, and the judge's cache stats. Skipped with one log line (empty
    tables) when ``verdicts_file`` or ``images_dir`` is set, or the AIBench set, its questions or the
    AIBench generation manifest do not exist yet. A manifest without images (every generation failed)
    is examined: each pair fails with its generation's reason.
    """
    skip = examination_skip(
        verdicts_file,
        images_dir,
        aibench_generation_manifest=aibench_generation_manifest,
        aibench_set=aibench_set,
        aibench_qa=aibench_qa,
    )
    if skip:
        return _no_examination(skip)
    images: ImageLoaders = {} if is_missing(aibench_generations) else aibench_generations
    settings = AIBenchParams.model_validate(params)
    sample_ids = [str(sample) for sample in aibench_set["sample_id"]]
    questions = questions_by_sample(sample_ids, aibench_qa)
    items = {sample: solver_items(frame) for sample, frame in questions.items()}
    jobs, unavailable = examination_jobs(images, manifest_entries(aibench_generation_manifest), sample_ids)
    answered = ask_per_image(
        [job for job in jobs if job not in unavailable],
        images,
        judge,
        lambda job: image_requests(job, items),
        settings.window,
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
        "missing_images": missing_images(asked),
        "failed_requests": {task: failed_requests(asked, task) for task in (SOLVER_TASK, AESTHETICS_TASK)},
        "ignored_answers": ignored,
        "cache": dict(getattr(judge, "stats", {}) or {}),
    }
    return answers_frame(answers), aesthetics_frame(ratings), summary


def score_aibench(
    aibench_answers: pd.DataFrame,
    aibench_generation_manifest: pd.DataFrame | MissingInput,
    params: dict[str, Any],
) -> pd.DataFrame:
    """``aibench_scores``: accuracy per level, question-level global average and coverage per model, each
    with its role from the AIBench generation manifest (references listed last, never ranked)."""
    return score_answers(aibench_answers, model_roles(aibench_generation_manifest, params))


def score_aesthetics(aesthetics_ratings: pd.DataFrame) -> pd.DataFrame:
    """``aesthetics_scores``: mean rating per criterion, coverage and image count per model."""
    return aesthetics.score_aesthetics(aesthetics_ratings)


# ---- baseline metrics


def clip_rows(
    jobs: Sequence[ExpectedImage],
    generations: ImageLoaders,
    prompts: Mapping[str, str],
    settings: ClipSettings,
) -> list[dict[str, Any]]:
    """CLIPScore of each image against its benchmark prompt (the model is loaded first: a wrong
    model folder stops the run with its path, as a misconfigured judge would)."""
    from sciir.backends.clip_score import CLIPScorer

    scorer = CLIPScorer(
        str(settings.model_path),
        device=settings.device,
        batch_size=settings.batch_size,
        text_prefix=settings.text_prefix,
    )
    scorer.load()
    rows: list[dict[str, Any]] = []
    for start in range(0, len(jobs), settings.batch_size):
        loaded: list[tuple[ExpectedImage, Image.Image]] = []
        for job in jobs[start : start + settings.batch_size]:
            try:
                loaded.append((job, load_image(job, generations)))
            except NoImageError as error:
                rows.append(failed_row(job.model, job.sample_id, CLIPSCORE, str(error)))
        if not loaded:
            continue
        try:
            scores = scorer.score(
                [image for _, image in loaded], [prompts[job.sample_id] for job, _ in loaded]
            )
        except (RuntimeError, ValueError) as error:  # this batch fails, the others go on
            rows += [
                failed_row(job.model, job.sample_id, CLIPSCORE, f"CLIP failed on {job.image_id}: {error}")
                for job, _ in loaded
            ]
            continue
        rows += [
            scored_row(job.model, job.sample_id, CLIPSCORE, score)
            for (job, _), score in zip(loaded, scores, strict=True)
        ]
    return rows


def vqascore_backend(settings: VQAScoreSettings) -> VisionLanguageModel:
    """The configured VQA model, built like a catalog backend (cached when ``cache_path`` is set)."""
    from sciir.catalog.backend_dataset import make_backend

    cache = ResponseCache(settings.cache_path) if settings.cache_path else None
    spec = {"backend": settings.backend, **settings.config}
    # kind "vlm" builds only vision-language models (the registry checks the class)
    return cast(VisionLanguageModel, make_backend("vqascore", "vlm", spec, cache, None))


def vqascore_rows(
    jobs: Sequence[ExpectedImage],
    generations: ImageLoaders,
    prompts: Mapping[str, str],
    model: VisionLanguageModel,
    settings: VQAScoreSettings,
) -> list[dict[str, Any]]:
    """VQAScore of each image: P(yes) to the question built from its benchmark prompt."""
    asked = ask_per_image(
        jobs,
        generations,
        model,
        lambda job: {VQASCORE: build_vqascore_request(prompts[job.sample_id])},
        settings.window,
        "vqascore",
    )
    rows = []
    for item in asked:
        job = item.job
        if item.unavailable is not None:
            rows.append(failed_row(job.model, job.sample_id, VQASCORE, item.unavailable))
            continue
        try:
            probability = vqascore_from_result(item.results[VQASCORE])
        except ValueError as error:
            rows.append(
                failed_row(job.model, job.sample_id, VQASCORE, f"VQAScore of {job.image_id}: {error}")
            )
            continue
        rows.append(scored_row(job.model, job.sample_id, VQASCORE, probability.value, probability.note))
    return rows


def baseline_metrics(
    generations: ImageLoaders,
    benchmark: pd.DataFrame,
    params: dict[str, Any],
    verdicts_file: str | None = None,
    images_dir: str | None = None,
) -> pd.DataFrame:
    """``baseline_scores``: CLIPScore and VQAScore per image where configured; each metric that is not
    configured is skipped with one log line and adds no rows, and so is everything when
    ``verdicts_file`` is set or an input does not exist yet. The images are the judge's (``images_dir``
    when set)."""
    generations = image_source(generations, images_dir)
    skip = image_branch_skip(verdicts_file, generations=generations, benchmark=benchmark)
    if skip:
        logger.info("baseline metrics skipped: %s", skip)
        return baseline_frame([])
    settings = AIBenchParams.model_validate(params).baseline_metrics
    prompts = dict(zip(benchmark["sample_id"], benchmark["prompt"], strict=True))
    jobs = image_jobs(generations, list(benchmark["sample_id"]))
    rows: list[dict[str, Any]] = []
    if settings.clip.model_path:
        rows += clip_rows(jobs, generations, prompts, settings.clip)
    else:
        logger.info(CLIP_SKIPPED)
    if settings.vqascore.backend:
        rows += vqascore_rows(
            jobs, generations, prompts, vqascore_backend(settings.vqascore), settings.vqascore
        )
    else:
        logger.info(VQASCORE_SKIPPED)
    return baseline_frame(rows)


# ---- metrics


def summarise_aibench(
    aibench_scores: pd.DataFrame,
    aesthetics_scores: pd.DataFrame,
    baseline_scores: pd.DataFrame,
    run_summary: dict[str, Any],
) -> dict[str, float]:
    """``aibench_metrics``: per model the AIBench scores, aesthetics and baseline means with coverage,
    missing images; for the judge its failed requests per task, ignored answers and cache counts."""
    metrics = metrics_from_table(aibench_scores, lambda model, column: f"{model}.{column}")
    metrics |= metrics_from_table(aesthetics_scores, lambda model, column: f"{model}.aesthetics.{column}")
    for row in baseline_summary(baseline_scores).itertuples(index=False):
        metrics[f"{row.model}.{row.metric}"] = float(row.mean)
        metrics[f"{row.model}.{row.metric}.coverage"] = float(row.coverage)
    metrics |= {f"{model}.missing_images": float(n) for model, n in run_summary["missing_images"].items()}
    metrics |= {f"{task}_failed_requests": float(n) for task, n in run_summary["failed_requests"].items()}
    metrics["aibench_qa_ignored_answers"] = float(len(run_summary["ignored_answers"]))
    metrics |= stats_metrics(run_summary["cache"], prefix="judge_")
    levels = ", ".join(f"level{level}: {name}" for level, name in LEVEL_NAMES.items())
    table = aibench_scores.to_string(index=False, float_format=lambda x: f"{x:.3f}")
    logger.info("AIBench scores (%s):\n%s", levels, table)
    return metrics


def create_aibench_pipeline(**kwargs: Any) -> Pipeline:
    """Evaluate-side AIBench (inputs: aibench_generations, aibench_generation_manifest, aibench_set,
    evaluation_aibench_qa, generations and evaluation_benchmark (baseline metrics), judge, params:aibench,
    params:evaluate (model roles), params:evaluate.verdicts_file, params:evaluate.images_dir; outputs:
    aibench_answers, aibench_scores,
    aesthetics_ratings, aesthetics_scores, baseline_scores, aibench_metrics)."""
    return Pipeline(
        [
            node(
                examine_images,
                [
                    "aibench_generations",
                    "aibench_generation_manifest",
                    "aibench_set",
                    "evaluation_aibench_qa",
                    "judge",
                    "params:aibench",
                    "params:evaluate.verdicts_file",
                    "params:evaluate.images_dir",
                ],
                ["aibench_answers", "aesthetics_ratings", "aibench_run_summary"],
                name="examine_aibench_images",
            ),
            node(
                score_aibench,
                ["aibench_answers", "aibench_generation_manifest", "params:evaluate"],
                "aibench_scores",
                name="score_aibench_answers",
            ),
            node(score_aesthetics, "aesthetics_ratings", "aesthetics_scores", name="score_aesthetics"),
            node(
                baseline_metrics,
                [
                    "generations",
                    "evaluation_benchmark",
                    "params:aibench",
                    "params:evaluate.verdicts_file",
                    "params:evaluate.images_dir",
                ],
                "baseline_scores",
                name="baseline_metrics",
            ),
            node(
                summarise_aibench,
                ["aibench_scores", "aesthetics_scores", "baseline_scores", "aibench_run_summary"],
                "aibench_metrics",
                name="summarise_aibench",
            ),
        ]
    )
