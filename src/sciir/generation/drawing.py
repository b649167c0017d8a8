"""Every selected generator draws the samples it is sent, streamed through a bounded window (an images
API answers each request as it finishes, a local generator a window at a time), showing progress: the
images' PNG bytes and the plans a planner wrote, by ``<model>/<sample_id>``, one manifest row per sample
and the seconds from each request's sending to its image (``sciir.generation.manifest``).

A window the generator crashed on fails each of its samples, and a sample never sent (a plan or a prompt
that could not be made) fails with its reason: the run goes on.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator
from sciir.generation.manifest import MANIFEST_COLUMNS, TIMING_COLUMNS, manifest_row, timing_row
from sciir.generation.params import GenerateParams
from sciir.runs.progress import Progress

logger = logging.getLogger(__name__)

# What the manifest keeps of the finetune summary for a generator that loads its adapter.
ADAPTER_FIELDS = ("adapter_path", "base_model_path", "steps", "final_loss", "lora_rank", "seed")

RequestsOf = Callable[[ImageGenerator], tuple[Sequence[GenerationRequest], dict[str, str]]]
Rows = list[dict[str, Any]]


class _Timed:
    """Each request's result and the seconds from its sending to its image, by position."""

    def __init__(self, requests: Sequence[GenerationRequest], progress: Progress) -> None:
        self.requests, self.progress = requests, progress
        self.results: dict[int, tuple[GenerationResult, float]] = {}
        self.sent_at: dict[int, float] = {}
        self.taken = 0

    def rest(self) -> Iterator[GenerationRequest]:
        """The requests not taken yet, each stamped when the stream takes it."""
        while self.taken < len(self.requests):
            self.sent_at[self.taken] = time.perf_counter()
            self.taken += 1
            yield self.requests[self.taken - 1]

    def stream_rest(self, generator: ImageGenerator, window: int | None) -> None:
        """Stream the requests not taken yet (a stream's positions count from its first request)."""
        first = self.taken
        generator.stream(self.rest(), lambda position, result: self.arrived(first + position, result), window)

    def arrived(self, index: int, result: GenerationResult) -> None:
        request = self.requests[index]
        if result.sample_id != request.sample_id:
            raise RuntimeError(
                f"generator returned sample {result.sample_id} for request {index}, sample {request.sample_id}"
            )
        self.results[index] = (result, time.perf_counter() - self.sent_at.pop(index))
        self.progress.add(result)

    def fail_unanswered(self, model: str, error: Exception) -> None:
        """The requests taken and not answered when the generator raised fail with its error."""
        logger.warning("generate %s: %d requests failed: %r", model, len(self.sent_at), error)
        for index in sorted(self.sent_at):
            sample_id = self.requests[index].sample_id
            reason = f"generator {model} raised on the window with sample {sample_id}: {error!r}"
            self.arrived(index, GenerationResult(sample_id=sample_id, failure=reason))


def run_generator(
    model: str, generator: ImageGenerator, requests: Sequence[GenerationRequest], window: int | None
) -> list[tuple[GenerationResult, float]]:
    """Each request's result with the seconds from its sending to its image, in request order, streamed
    through the generator (``window`` requests ahead at most, else the generator's own window) with
    progress. A window the generator raised on fails each of its samples; the stream goes on with the
    rest."""
    with Progress(f"generate {model}", len(requests), unit="image") as progress:
        timed = _Timed(requests, progress)
        while timed.taken < len(requests):
            first = timed.taken
            try:
                timed.stream_rest(generator, window)
            except Exception as error:  # a model library can raise anything (out of memory, bad weights ...)
                if timed.taken == first:  # raised before taking a request: it would raise on every retry
                    raise
                timed.fail_unanswered(model, error)
    return [timed.results[index] for index in range(len(requests))]


def checked_png(result: GenerationResult) -> bytes:
    """The result's image bytes, checked now to be a readable image file (never decoded and encoded
    again: they are written as they are).

    Raises:
        ValueError: the bytes are not an image; the message names the sample.
    """
    png = result.image or b""
    try:
        Image.open(io.BytesIO(png)).verify()
    except Exception as error:  # PIL raises many types for corrupt data
        raise ValueError(
            f"image bytes for sample {result.sample_id} are not a readable image: {error}"
        ) from None
    return png


def image_or_reason(model: str, result: GenerationResult) -> tuple[bytes | None, str | None]:
    """The result's image bytes, or the reason there are none (the generator's failure or unusable bytes)."""
    if result.failure is not None:
        return None, result.failure
    if result.image is None:
        return (
            None,
            f"generator {model} returned neither an image nor a failure for sample {result.sample_id}",
        )
    try:
        return checked_png(result), None
    except ValueError as error:
        return None, str(error)


def plan_text(result: GenerationResult) -> str | None:
    """The Sci-RCoT a planned generator drew for this result (``sciir.generation.planning``), else None."""
    planner = result.meta.get("planner")
    return planner.get("plan") if isinstance(planner, dict) else None


def lora_path_of(generator: ImageGenerator) -> str | None:
    """The LoRA adapter a generator loads (its ``lora_path``), or None."""
    return generator.identity().get("config", {}).get("lora_path")


def missing_adapter(model: str, generator: ImageGenerator) -> str | None:
    """Why a generator that loads a LoRA adapter cannot draw: the adapter does not exist (finetune writes
    it); None when it loads none or the adapter is there."""
    lora_path = lora_path_of(generator)
    if lora_path is None or Path(lora_path).exists():
        return None
    return (
        f"generator {model} loads the LoRA adapter {lora_path}, which does not exist: "
        f"`kedro run --pipelines finetune` writes it (to finetune.adapter_path), or leave {model} out "
        "with generate.models"
    )


def adapter_record(generator: ImageGenerator, finetune_summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """For a generator that loads a LoRA: its path, plus the finetune run's facts when it is that run's adapter."""
    lora_path = lora_path_of(generator)
    if lora_path is None:
        return None
    record: dict[str, Any] = {"lora_path": str(lora_path)}
    trained_path = finetune_summary.get("adapter_path")
    if trained_path is not None and Path(trained_path).resolve() == Path(lora_path).resolve():
        record.update({key: finetune_summary[key] for key in ADAPTER_FIELDS if key in finetune_summary})
    return record


@dataclass(frozen=True)
class Drawn:
    """What the generators drew: images (PNG bytes) and plans by ``<model>/<sample_id>``, the manifest, the
    seconds from each request's sending to its image (``MANIFEST_COLUMNS``, ``TIMING_COLUMNS``) and the wall
    seconds each generator took over all its images (requests stream, so these are not the images' sum)."""

    images: dict[str, bytes]
    plans: dict[str, str]
    manifest: pd.DataFrame
    timings: pd.DataFrame
    seconds: dict[str, float]


def collect_model(
    model: str,
    generator: ImageGenerator,
    requests: Sequence[GenerationRequest],
    params: GenerateParams,
    meta: dict[str, Any],
) -> tuple[dict[str, bytes], dict[str, str], Rows, Rows]:
    """Run one generator over the requests: its images and the plans a planner wrote for them, both by
    ``<model>/<sample_id>``, its manifest rows (each result's meta with ``meta`` added) and timing rows."""
    images: dict[str, bytes] = {}
    plans: dict[str, str] = {}
    rows: Rows = []
    timings: Rows = []
    for result, seconds in run_generator(model, generator, requests, params.window):
        if meta:
            result = result.model_copy(update={"meta": {**result.meta, **meta}})
        png, reason = image_or_reason(model, result)
        if png is not None:
            images[f"{model}/{result.sample_id}"] = png
            if (plan := plan_text(result)) is not None:
                plans[f"{model}/{result.sample_id}"] = plan
        rows.append(manifest_row(model, generator, params.seed, result, reason))
        timings.append(timing_row(model, result.sample_id, seconds))
    return images, plans, rows, timings


def unsent_rows(
    model: str, generator: ImageGenerator, unsent: dict[str, str], seed: int
) -> tuple[Rows, Rows]:
    """Failed manifest rows for the samples never sent to the generator (a plan or a prompt that could
    not be made), each with its reason, and their timing rows (0 seconds)."""
    rows = [
        manifest_row(model, generator, seed, GenerationResult(sample_id=sample_id), reason)
        for sample_id, reason in unsent.items()
    ]
    return rows, [timing_row(model, sample_id, 0.0) for sample_id in unsent]


def draw_every_sample(
    generators: dict[str, ImageGenerator],
    requests_of: RequestsOf,
    sample_order: Sequence[str],
    config: GenerateParams,
    finetune_summary: Mapping[str, Any],
    meta: dict[str, Any] | None = None,
    bases: Mapping[str, str] | None = None,
) -> Drawn:
    """Each generator on the requests ``requests_of`` gives it (with the samples never sent and why),
    manifest and timing rows in ``sample_order`` per model; ``meta`` is added to every row's meta, and so
    is the adapter record of a generator that loads the finetuned LoRA (with its ``base``, the generator
    of its base model, from ``bases``). A generator whose LoRA adapter does
    not exist (finetune has not run) is sent nothing: each of its samples fails with that reason."""
    position = {sample_id: index for index, sample_id in enumerate(sample_order)}

    def in_sample_order(model_rows: Rows) -> Rows:
        return sorted(model_rows, key=lambda row: position[row["sample_id"]])

    images: dict[str, bytes] = {}
    plans: dict[str, str] = {}
    rows: Rows = []
    timings: Rows = []
    seconds: dict[str, float] = {}
    for model, generator in generators.items():
        began = time.perf_counter()
        requests, unsent = requests_of(generator)
        if (reason := missing_adapter(model, generator)) is not None:
            logger.warning("generate %s: nothing drawn: %s", model, reason)
            unsent = {**dict.fromkeys((request.sample_id for request in requests), reason), **unsent}
            requests = []
        logger.info("generate %s (%s): %d samples", model, generator.role, len(requests))
        adapter = adapter_record(generator, finetune_summary)
        if adapter is not None and model in (bases or {}):
            adapter["base"] = (bases or {})[model]
        row_meta = {**(meta or {}), **({"adapter": adapter} if adapter is not None else {})}
        model_images, model_plans, model_rows, model_timings = collect_model(
            model, generator, requests, config, row_meta
        )
        seconds[model] = time.perf_counter() - began
        images.update(model_images)
        plans.update(model_plans)
        unsent_manifest, unsent_timings = unsent_rows(model, generator, unsent, config.seed)
        rows.extend(in_sample_order(model_rows + unsent_manifest))
        timings.extend(in_sample_order(model_timings + unsent_timings))
    return Drawn(
        images,
        plans,
        pd.DataFrame(rows, columns=MANIFEST_COLUMNS),
        pd.DataFrame(timings, columns=TIMING_COLUMNS),
        seconds,
    )
