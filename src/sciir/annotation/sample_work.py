"""Annotate's work on each kept curated figure: the annotator asked for track scores, Sci-RCoT, the abstract
prompt and the checklist (``sciir.tasks.registry.ANNOTATION_TASKS``), and what each sample answered so far.

All samples' requests go through one stream over the whole stage (``sciir.runs.follow_ups``: a bounded
window, the next request sent as soon as one finishes), each sample's stages in dependency order, the
next stage sent as soon as the stage before is answered: track scores and reasoning (from the image,
caption and methods text), then the abstract prompt (from the reasoning), then the checklist (from the
reasoning and the labels). No sample waits for another's answers.
A sample whose image cannot be read or whose answer is unusable fails with a reason naming the sample
and the task; the other samples go on. Samples with every track score below tau are kept without labels
(low reasoning content, appendix B.4) and get no further tasks. The tables written from the samples are
``sciir.annotation.tables``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, model_validator

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult, window_setting
from sciir.images.payload import ImageFile, ImageLimits, image_file, payload
from sciir.runs.follow_ups import stream_with_follow_ups
from sciir.runs.progress import Progress
from sciir.tasks.abstract_prompt import AbstractPrompt
from sciir.tasks.annotation import AnnotationError
from sciir.tasks.checklist import Checklist
from sciir.tasks.reasoning import Reasoning
from sciir.tasks.registry import ANNOTATION_TASKS
from sciir.tasks.track_scores import TrackScores, labels_from_scores

# sample_id -> its curated image: Kedro's partitioned dataset gives loaders of handles; a pipeline run in
# memory passes the images themselves.
CuratedImages = Mapping[str, Callable[[], ImageFile | Image.Image] | ImageFile | Image.Image]

# Tasks asked together in one call, in dependency order.
TASK_STAGES: tuple[tuple[str, ...], ...] = (
    ("track_scores", "reasoning"),
    ("abstract_prompt",),
    ("checklist",),
)


class AnnotateParams(BaseModel):
    """``params:annotate`` (conf/base/parameters_annotate.yml)."""

    model_config = ConfigDict(extra="forbid")

    tau: int = Field(default=7, ge=1, le=10)
    window: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)  # the former name of the window, still read
    max_methods_chars: int = Field(default=4000, ge=0)

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> AnnotateParams:
        self.window = window_setting("annotate", self.window, self.batch_size)
        return self


@dataclass
class SampleWork:
    """One sample on its way through the tasks: its inputs, the answers so far, or why it failed."""

    sample_id: str
    caption: str
    methods_text: str
    image: bytes | None = None
    track_scores: TrackScores | None = None
    reasoning: Reasoning | None = None
    abstract_prompt: AbstractPrompt | None = None
    checklist: Checklist | None = None
    failures: list[str] = field(default_factory=list)
    low_reasoning: bool = False

    @property
    def active(self) -> bool:
        return not self.failures and not self.low_reasoning

    def labels(self, tau: int) -> dict[str, bool]:
        return labels_from_scores(self.track_scores, tau) if self.track_scores else {}

    def tracks(self, tau: int) -> list[str]:
        return [track for track, on in self.labels(tau).items() if on]

    @property
    def answered_reasoning(self) -> Reasoning:
        """The reasoning answer, which every later task reads."""
        if self.reasoning is None:  # stages run in dependency order, so this is a bug, not bad data
            raise RuntimeError(f"sample {self.sample_id}: a task needs the reasoning before it was answered")
        return self.reasoning


def _figure_context(work: SampleWork, tau: int) -> dict[str, Any]:
    return {"caption": work.caption, "methods_text": work.methods_text}


def _abstract_context(work: SampleWork, tau: int) -> dict[str, Any]:
    reasoning = work.answered_reasoning
    return {"caption": work.caption, "terms": reasoning.terms, "sci_rcot": reasoning.sci_rcot}


def _checklist_context(work: SampleWork, tau: int) -> dict[str, Any]:
    reasoning = work.answered_reasoning
    return {
        "terms": reasoning.terms,
        "required_text": reasoning.required_text,
        "relations": reasoning.relations,
        "laws": reasoning.laws,
        "tracks": work.tracks(tau),
    }


# What each task reads about a sample (docs/pipelines_contract.md).
CONTEXTS: dict[str, Callable[[SampleWork, int], dict[str, Any]]] = {
    "track_scores": _figure_context,
    "reasoning": _figure_context,
    "abstract_prompt": _abstract_context,
    "checklist": _checklist_context,
}


def read_sample_image(work: SampleWork, images: CuratedImages, limits: ImageLimits) -> None:
    """Read the sample's image once as the bytes a request carries under the annotator's ``limits``
    (the file's own bytes when they fit), or record why it cannot be used."""
    loader = images.get(work.sample_id)
    if loader is None:
        work.failures.append(f"sample {work.sample_id}: no image in curated_images")
        return
    try:
        work.image = payload(image_file(loader), limits)
    except (OSError, ValueError) as error:
        work.failures.append(f"sample {work.sample_id}: image could not be read: {error}")


def _text(value: Any) -> str:
    return "" if value is None or pd.isna(value) else str(value)


def kept_samples(curated: pd.DataFrame, max_methods_chars: int) -> list[SampleWork]:
    """The curated rows marked ``kept``, with their texts (the methods text cut to the prompt budget)."""
    kept = curated[curated["status"] == "kept"]
    return [
        SampleWork(
            sample_id=cast(str, row.sample_id),  # a text column (itertuples types a field as any scalar)
            caption=_text(row.caption),
            methods_text=_text(row.methods_text)[:max_methods_chars],
        )
        for row in kept.itertuples(index=False)
    ]


def _parse_stage(work: SampleWork, tasks: Sequence[str], results: Mapping[str, VLMResult], tau: int) -> None:
    """Record a stage's answers in task order, whatever order they arrived in; a sample scored below tau
    on every track leaves the run as low reasoning content (appendix B.4)."""
    for task in tasks:
        try:
            setattr(work, task, ANNOTATION_TASKS[task].parse_output(results[task]))
        except AnnotationError as error:
            work.failures.append(f"sample {work.sample_id}: {error}")
    if work.active and work.track_scores is not None and not work.tracks(tau):
        work.low_reasoning = True


@dataclass
class _SampleRun:
    """A sample's place in the stream: the stage it is at and that stage's answers so far."""

    work: SampleWork
    stage: int = 0
    answers: dict[str, VLMResult] = field(default_factory=dict)

    def stage_jobs(self) -> list[tuple[_SampleRun, str]]:
        return [(self, task) for task in TASK_STAGES[self.stage]]

    def tasks_left(self) -> int:
        return sum(len(tasks) for tasks in TASK_STAGES[self.stage :])


class _AnnotationStream:
    """Annotate's jobs ``(sample, task)`` for :func:`stream_with_follow_ups`: a sample starts (its image
    read) when the stream has room for it, and its next stage is sent as soon as the last answer of the
    stage before arrives."""

    def __init__(
        self, samples: Sequence[SampleWork], images: CuratedImages, limits: ImageLimits, tau: int
    ) -> None:
        self.samples, self.images, self.limits, self.tau = samples, images, limits, tau
        self.progress = Progress("annotate", len(samples) * sum(len(tasks) for tasks in TASK_STAGES))

    def first_jobs(self) -> Iterator[tuple[_SampleRun, str]]:
        for work in self.samples:
            read_sample_image(work, self.images, self.limits)
            run = _SampleRun(work)
            if work.active:
                yield from run.stage_jobs()
            else:
                self._finish(run)

    def request(self, job: tuple[_SampleRun, str]) -> VLMRequest:
        run, task = job
        return ANNOTATION_TASKS[task].build(CONTEXTS[task](run.work, self.tau), run.work.image)

    def answered(self, job: tuple[_SampleRun, str], result: VLMResult) -> list[tuple[_SampleRun, str]]:
        run, task = job
        self.progress.add(result)
        run.answers[task] = result
        tasks = TASK_STAGES[run.stage]
        if len(run.answers) < len(tasks):
            return []
        _parse_stage(run.work, tasks, run.answers, self.tau)
        run.stage, run.answers = run.stage + 1, {}
        if run.work.active and run.stage < len(TASK_STAGES):
            return run.stage_jobs()
        self._finish(run)
        return []

    def _finish(self, run: _SampleRun) -> None:
        """The sample needs no more requests: its image bytes go, its unneeded tasks leave the total."""
        if run.stage < len(TASK_STAGES):
            self.progress.not_needed(run.tasks_left())
        run.work.image = None


def annotate_samples(
    annotator: VisionLanguageModel,
    samples: Sequence[SampleWork],
    images: CuratedImages,
    settings: AnnotateParams,
) -> None:
    """Every task of every sample through one stream over the whole stage (the window: ``settings.window``,
    else the annotator's own), until a failure or low reasoning content makes the rest of a sample's tasks
    unneeded; progress is shown and logged as ``annotate``. Memory is bounded by the window: a sample's
    image bytes are read when it starts and dropped when it ends."""
    stream = _AnnotationStream(samples, images, annotator.image_limits, settings.tau)
    with stream.progress:
        stream_with_follow_ups(
            annotator, stream.first_jobs(), stream.request, stream.answered, settings.window
        )
