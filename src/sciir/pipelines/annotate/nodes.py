"""Annotate nodes: ask the annotator for track scores, Sci-RCoT, abstract prompts and checklists.

Samples go through in batches; within a batch the requests of each stage stream through the annotator
(a bounded window, the next request sent as soon as one finishes), stage after stage in dependency
order: track scores and reasoning (from the image, caption and methods text), then
the abstract prompt (from the reasoning), then the checklist (from the reasoning and the labels).
A sample whose image cannot be read or whose answer is unusable becomes a ``failed`` row naming
the sample and the task; the other samples go on. Samples with every track score below tau are
kept as ``ok`` rows without labels (low reasoning content, appendix B.4) and get no further tasks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.backends.base import VisionLanguageModel, VLMResult
from sciir.backends.cache import stats_metrics
from sciir.images.payload import ImageFile, ImageLimits, backend_image_limits, image_file, payload
from sciir.runs.progress import Progress
from sciir.tasks.annotation import (
    CHECKLIST_COLUMNS,
    TRACKS,
    AbstractPrompt,
    AnnotationError,
    Checklist,
    Reasoning,
    TrackScores,
    build_request,
    labels_from_scores,
    parse_output,
)

logger = logging.getLogger(__name__)

# Kedro's partitioned dataset gives loaders of handles; a pipeline run in memory passes the images themselves.
ImageLoaders = Mapping[str, Callable[[], ImageFile | Image.Image] | ImageFile | Image.Image]

# Tasks asked together in one call, in dependency order.
STAGES: tuple[tuple[str, ...], ...] = (("track_scores", "reasoning"), ("abstract_prompt",), ("checklist",))

ANNOTATION_COLUMNS = (
    "sample_id",
    *(f"score_{track}" for track in TRACKS),
    *(f"label_{track}" for track in TRACKS),
    "terms",
    "required_text",
    "relations",
    "laws",
    *(f"{part}_{track}" for track in TRACKS for part in ("terms", "visualizations")),
    "sci_rcot",
    "abstract_prompt",
    "status",
    "reason",
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


def load_image(work: SampleWork, images: ImageLoaders, limits: ImageLimits) -> None:
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

    requests = (build_request(task, CONTEXTS[task](work, tau), work.image) for work, task in jobs)
    annotator.generate_stream(requests, arrived)
    if len(results) != len(jobs):
        raise RuntimeError(f"annotator returned {len(results)} results for {len(jobs)} requests")
    for position, (work, task) in enumerate(jobs):
        try:
            setattr(work, task, parse_output(task, results[position]))
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
    images: ImageLoaders,
    tau: int,
    progress: Progress,
) -> None:
    """Load the batch's images, then run every stage in dependency order."""
    for work in batch:
        load_image(work, images, backend_image_limits(annotator))
    for tasks in STAGES:
        run_stage(annotator, tasks, batch, tau, progress)
        mark_low_reasoning(batch, tau)
    for work in batch:
        work.image = None  # the bytes are not needed any more; memory stays bounded by one batch


def _json(value: Any) -> str | None:
    return json.dumps(value, ensure_ascii=False) if value is not None else None


def annotation_row(work: SampleWork, tau: int) -> dict[str, Any]:
    """The ``annotations`` row of one sample (docs/data_contract.md); what was not answered is null."""
    scores, reasoning, labels = work.track_scores, work.reasoning, work.labels(tau)
    row: dict[str, Any] = {"sample_id": work.sample_id}
    for track in TRACKS:
        row[f"score_{track}"] = getattr(scores, track) if scores else None
        row[f"label_{track}"] = labels.get(track)
    row["terms"] = _json(reasoning.terms) if reasoning else None
    row["required_text"] = _json(reasoning.required_text) if reasoning else None
    row["relations"] = _json(reasoning.relations) if reasoning else None
    row["laws"] = _json(reasoning.laws) if reasoning else None
    # Per track, what the image shows (null when the annotator gave no per-track answer).
    evidence = reasoning.tracks if reasoning else None
    for track in TRACKS:
        shown = evidence.of(track) if evidence else None
        row[f"terms_{track}"] = _json(shown.terms) if shown else None
        row[f"visualizations_{track}"] = _json(shown.visualizations) if shown else None
    row["sci_rcot"] = reasoning.sci_rcot if reasoning else None
    row["abstract_prompt"] = work.abstract_prompt.prompt if work.abstract_prompt else None
    row["status"] = "failed" if work.failures else "ok"
    row["reason"] = "; ".join(work.failures) or (
        f"low reasoning content: every track score is below tau={tau}; no abstract prompt or checklist"
        if work.low_reasoning
        else None
    )
    return row


def checklist_rows(work: SampleWork) -> list[dict[str, Any]]:
    """The ``checklists`` rows of one sample, one per question (none for a failed sample)."""
    if work.checklist is None or work.failures:
        return []
    return [
        {
            "sample_id": work.sample_id,
            "question_id": q.id,
            "layer": q.layer,
            "track": q.track,
            "kind": q.kind,
            "polarity": q.polarity,
            "about": _json(q.about),
            "question": q.question,
            "expected_text": q.expected_text,
            "parent_ids": _json(q.parent_ids),
        }
        for q in work.checklist.questions
    ]


def annotations_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(ANNOTATION_COLUMNS))
    for track in TRACKS:
        frame[f"score_{track}"] = frame[f"score_{track}"].astype("Int64")
        frame[f"label_{track}"] = frame[f"label_{track}"].astype("boolean")
    return frame


def annotate_metrics(
    annotations: pd.DataFrame, checklists: pd.DataFrame, annotator: VisionLanguageModel
) -> dict[str, float]:
    """Counts of the run, label counts per track, and, when the annotator is cached, its cache hits and
    misses with the HTTP requests, tokens and estimated cost of the calls sent (see ``stats_metrics``)."""
    ok = annotations["status"] == "ok"
    metrics = {
        "samples": float(len(annotations)),
        "annotated_ok": float(ok.sum()),
        "failed": float((annotations["status"] == "failed").sum()),
        "low_reasoning": float(
            (ok & ~annotations[[f"label_{t}" for t in TRACKS]].fillna(False).any(axis=1)).sum()
        ),
        "checklist_questions": float(len(checklists)),
    }
    for track in TRACKS:
        metrics[f"label_{track}"] = float(annotations[f"label_{track}"].fillna(False).sum())
    stats = getattr(annotator, "stats", None)
    if isinstance(stats, Mapping):
        metrics.update(stats_metrics(stats))
    return metrics


def annotate(
    curated: pd.DataFrame,
    curated_images: ImageLoaders,
    annotator: VisionLanguageModel,
    params: dict[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Annotate every kept curated sample: annotations, checklists and the run's metrics."""
    settings = AnnotateParams.model_validate(params)
    samples = kept_samples(curated, settings.max_methods_chars)
    # Every task of every sample, until a failure or low reasoning content makes the rest unneeded.
    with Progress("annotate", len(samples) * sum(len(tasks) for tasks in STAGES)) as progress:
        for start in range(0, len(samples), settings.batch_size):
            batch = samples[start : start + settings.batch_size]
            annotate_batch(annotator, batch, curated_images, settings.tau, progress)
            logger.debug("annotate: %d of %d samples done", start + len(batch), len(samples))
    annotations = annotations_frame([annotation_row(work, settings.tau) for work in samples])
    checklists = pd.DataFrame(
        [row for work in samples for row in checklist_rows(work)], columns=list(CHECKLIST_COLUMNS)
    )
    for reason in annotations.loc[annotations["status"] == "failed", "reason"]:
        logger.warning("annotate: %s", reason)
    return annotations, checklists, annotate_metrics(annotations, checklists, annotator)
