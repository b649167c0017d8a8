"""Annotate's work on each kept curated figure: the annotator asked for track scores, Sci-RCoT, the abstract
prompt and the checklist (``sciir.tasks.registry.ANNOTATION_TASKS``), and what each sample answered so far.

Samples go through in batches; within a batch the requests of each stage stream through the annotator
(a bounded window, the next request sent as soon as one finishes), stage after stage in dependency
order: track scores and reasoning (from the image, caption and methods text), then
the abstract prompt (from the reasoning), then the checklist (from the reasoning and the labels).
A sample whose image cannot be read or whose answer is unusable fails with a reason naming the sample
and the task; the other samples go on. Samples with every track score below tau are kept without labels
(low reasoning content, appendix B.4) and get no further tasks. The tables written from the samples are
``sciir.annotation.tables``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.backends.base import VisionLanguageModel, VLMResult
from sciir.images.payload import ImageFile, ImageLimits, image_file, payload
from sciir.runs.progress import Progress
from sciir.tasks.abstract_prompt import AbstractPrompt
from sciir.tasks.annotation import AnnotationError
from sciir.tasks.checklist import Checklist
from sciir.tasks.reasoning import Reasoning
from sciir.tasks.registry import ANNOTATION_TASKS
from sciir.tasks.track_scores import TrackScores, labels_from_scores

logger = logging.getLogger(__name__)

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
    batch_size: int = Field(default=32, ge=1)
    max_methods_chars: int = Field(default=4000, ge=0)


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
            sample_id=row.sample_id,
            caption=_text(row.caption),
            methods_text=_text(row.methods_text)[:max_methods_chars],
        )
        for row in kept.itertuples(index=False)
    ]


def run_stage(
    annotator: VisionLanguageModel,
    tasks: Sequence[str],
    batch: Sequence[SampleWork],
    tau: int,
    progress: Progress,
) -> None:
    """Stream every active sample's requests of this stage to the annotator; record the answers in the
    order of the samples and tasks, whatever order they arrived in."""
    jobs = [(work, task) for work in batch if work.active for task in tasks]
    progress.not_needed(len(batch) * len(tasks) - len(jobs))
    if not jobs:
        return
    results: dict[int, VLMResult] = {}

    def arrived(position: int, result: VLMResult) -> None:
        progress.add(result)
        results[position] = result

    requests = (ANNOTATION_TASKS[task].build(CONTEXTS[task](work, tau), work.image) for work, task in jobs)
    annotator.stream(requests, arrived)
    if len(results) != len(jobs):
        raise RuntimeError(f"annotator returned {len(results)} results for {len(jobs)} requests")
    for position, (work, task) in enumerate(jobs):
        try:
            setattr(work, task, ANNOTATION_TASKS[task].parse_output(results[position]))
        except AnnotationError as error:
            work.failures.append(f"sample {work.sample_id}: {error}")


def mark_low_reasoning(batch: Sequence[SampleWork], tau: int) -> None:
    """Samples scored below tau on every track leave the run as low reasoning content (appendix B.4)."""
    for work in batch:
        if work.active and work.track_scores is not None and not work.tracks(tau):
            work.low_reasoning = True


def annotate_batch(
    annotator: VisionLanguageModel,
    batch: Sequence[SampleWork],
    images: CuratedImages,
    tau: int,
    progress: Progress,
) -> None:
    """Load the batch's images, then run every stage in dependency order."""
    for work in batch:
        read_sample_image(work, images, annotator.image_limits)
    for tasks in TASK_STAGES:
        run_stage(annotator, tasks, batch, tau, progress)
        mark_low_reasoning(batch, tau)
    for work in batch:
        work.image = None  # the bytes are not needed any more; memory stays bounded by one batch


def annotate_samples(
    annotator: VisionLanguageModel,
    samples: Sequence[SampleWork],
    images: CuratedImages,
    settings: AnnotateParams,
) -> None:
    """Every task of every sample, batch after batch, until a failure or low reasoning content makes the
    rest of a sample's tasks unneeded; progress is shown and logged as ``annotate``."""
    with Progress("annotate", len(samples) * sum(len(tasks) for tasks in TASK_STAGES)) as progress:
        for start in range(0, len(samples), settings.batch_size):
            batch = samples[start : start + settings.batch_size]
            annotate_batch(annotator, batch, images, settings.tau, progress)
            logger.debug("annotate: %d of %d samples done", start + len(batch), len(samples))
