"""Generate nodes: every selected generator draws every benchmark sample, with one manifest row each.

A contestant generator receives only each sample's prompt, the seed and the size
(:class:`GenerationRequest`); the benchmark's plan (the annotation's labels and edges) goes only to
generators whose role is ``reference`` (:class:`PlanRequest`). Each manifest row records the role.
"""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    GeneratorRole,
    ImageGenerator,
    PlanRequest,
)
from sciir.catalog.image_dataset import EncodedImage
from sciir.runs.progress import Progress

logger = logging.getLogger(__name__)

ImageLoader = Callable[[], Image.Image]

MANIFEST_COLUMNS = ["model", "sample_id", "backend", "role", "seed", "status", "reason", "seconds", "meta"]
# What the manifest keeps of the finetune summary for a generator that loads its adapter.
ADAPTER_FIELDS = ("adapter_path", "base_model_path", "steps", "final_loss", "lora_rank", "seed")


class AIBenchGenerationParams(BaseModel):
    """``params:generate.aibench``: whether the contestants draw the AIBench set, and which of them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    # None: every contestant among ``generate.models``; else these generators (contestants only).
    models: list[str] | None = None


class GenerateParams(BaseModel):
    """``params:generate``. One seed for every sample and model, so model comparisons are paired."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    width: int = Field(default=1024, gt=0)
    height: int = Field(default=1024, gt=0)
    models: list[str] | None = None
    batch_size: int = Field(default=8, gt=0)
    aibench: AIBenchGenerationParams = Field(default_factory=AIBenchGenerationParams)


def select_generators(
    generators: dict[str, ImageGenerator], models: list[str] | None, setting: str = "params:generate.models"
) -> dict[str, ImageGenerator]:
    """The generators named in ``models`` (all of them when ``None``), in the order given.

    Raises:
        ValueError: a name that is not among the configured generators (the message names ``setting``).
    """
    if models is None:
        return dict(generators)
    unknown = [name for name in models if name not in generators]
    if unknown:
        raise ValueError(f"{setting} names unknown generator(s) {unknown}; available: {sorted(generators)}")
    return {name: generators[name] for name in models}


def decode_plan(sample_id: str, plan_json: Any) -> dict[str, Any] | None:
    """The benchmark row's plan as a dict, or ``None`` when the row has none.

    Raises:
        ValueError: the plan is not a JSON object; the message names the sample.
    """
    if not isinstance(plan_json, str) and pd.isna(plan_json):
        return None
    try:
        plan = json.loads(plan_json)
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"benchmark plan for sample {sample_id} is not valid JSON: {error}") from None
    if not isinstance(plan, dict):
        raise ValueError(
            f"benchmark plan for sample {sample_id} is a JSON {type(plan).__name__}, not an object"
        )
    return plan


def _check_unique_samples(benchmark: pd.DataFrame) -> None:
    """Raises ValueError when the benchmark repeats a sample_id (images are stored by sample_id)."""
    repeated = sorted(set(benchmark["sample_id"][benchmark["sample_id"].duplicated()]))
    if repeated:
        raise ValueError(f"benchmark repeats sample_id(s) {repeated}; each sample must appear once")


def build_requests(benchmark: pd.DataFrame, params: GenerateParams) -> list[GenerationRequest]:
    """One contestant request per benchmark row: the row's prompt, the seed and the size, nothing else.

    Only ``sample_id`` and ``prompt`` are read; the plan and every other annotation column stay behind.

    Raises:
        ValueError: the benchmark repeats a sample_id.
    """
    _check_unique_samples(benchmark)
    return [
        GenerationRequest(
            sample_id=sample_id, prompt=prompt, seed=params.seed, width=params.width, height=params.height
        )
        for sample_id, prompt in zip(benchmark["sample_id"], benchmark["prompt"], strict=True)
    ]


def build_reference_requests(
    benchmark: pd.DataFrame, params: GenerateParams
) -> tuple[list[PlanRequest], dict[str, str]]:
    """For reference renderers only: each row's request with its plan, and the reason for each row
    whose plan could not be read.

    Raises:
        ValueError: the benchmark repeats a sample_id.
    """
    unreadable: dict[str, str] = {}
    requests: list[PlanRequest] = []
    for request, plan_json in zip(build_requests(benchmark, params), benchmark["plan"], strict=True):
        try:
            plan = decode_plan(request.sample_id, plan_json)
        except ValueError as error:
            unreadable[request.sample_id] = str(error)
            continue
        if plan is None:
            unreadable[request.sample_id] = f"benchmark has no plan for sample {request.sample_id}"
            continue
        requests.append(PlanRequest(**request.model_dump(), plan=plan))
    return requests, unreadable


def generate_batch(
    model: str, generator: ImageGenerator, batch: Sequence[GenerationRequest]
) -> list[GenerationResult]:
    """The generator's results for one batch; a batch the generator crashed on fails each of its samples.

    Raises:
        RuntimeError: the generator broke its contract (results missing or out of order).
    """
    try:
        results = generator.generate(batch)
    except Exception as error:  # a model library can raise anything (out of memory, bad weights ...)
        logger.warning("generate %s: batch of %d failed: %r", model, len(batch), error)
        return [
            GenerationResult(
                sample_id=request.sample_id,
                failure=f"generator {model} raised on the batch with sample {request.sample_id}: {error!r}",
            )
            for request in batch
        ]
    returned = [result.sample_id for result in results]
    expected = [request.sample_id for request in batch]
    if returned != expected:
        raise RuntimeError(f"generator {model} returned results for {returned}, expected {expected} in order")
    return results


def run_generator(
    model: str, generator: ImageGenerator, requests: Sequence[GenerationRequest], batch_size: int
) -> list[tuple[GenerationResult, float]]:
    """Each request's result with its seconds (its batch's wall time shared evenly), showing progress."""
    timed: list[tuple[GenerationResult, float]] = []
    with Progress(f"generate {model}", len(requests), unit="image") as progress:
        for start in range(0, len(requests), batch_size):
            batch = list(requests[start : start + batch_size])
            began = time.perf_counter()
            results = generate_batch(model, generator, batch)
            per_request = (time.perf_counter() - began) / len(batch)
            timed.extend((result, per_request) for result in results)
            for result in results:
                progress.add(result)
    return timed


def _open_png(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png))


def png_loader(result: GenerationResult) -> ImageLoader:
    """A loader of the result's image, checked now to be a readable image file.

    Kedro's PartitionedDataset saves a callable partition lazily, so only compressed bytes
    stay in memory until each image is written, and they are written as they are (a generated or
    cached PNG is never decoded and encoded again); evaluate reads the same loader shape back.

    Raises:
        ValueError: the bytes are not an image; the message names the sample.
    """
    png = result.image or b""
    try:
        _open_png(png).verify()
    except Exception as error:  # PIL raises many types for corrupt data
        raise ValueError(
            f"image bytes for sample {result.sample_id} are not a readable image: {error}"
        ) from None
    return EncodedImage(png)


def adapter_record(generator: ImageGenerator, finetune_summary: dict[str, Any]) -> dict[str, Any] | None:
    """For a generator that loads a LoRA: its path, plus the finetune run's facts when it is that run's adapter."""
    lora_path = generator.identity().get("config", {}).get("lora_path")
    if lora_path is None:
        return None
    record: dict[str, Any] = {"lora_path": str(lora_path)}
    trained_path = finetune_summary.get("adapter_path")
    if trained_path is not None and Path(trained_path).resolve() == Path(lora_path).resolve():
        record.update({key: finetune_summary[key] for key in ADAPTER_FIELDS if key in finetune_summary})
    return record


def manifest_row(
    model: str,
    generator: ImageGenerator,
    seed: int,
    result: GenerationResult,
    seconds: float,
    reason: str | None,
) -> dict[str, Any]:
    """One manifest row, with the generator's role; ``reason`` set means the generation failed."""
    return {
        "model": model,
        "sample_id": result.sample_id,
        "backend": result.meta.get("backend") or generator.identity()["backend"],
        "role": generator.role,
        "seed": seed,
        "status": "failed" if reason else "ok",
        "reason": reason,
        "seconds": seconds,
        "meta": json.dumps({**result.meta, "cached": result.cached}, sort_keys=True, default=str),
    }


def image_or_reason(model: str, result: GenerationResult) -> tuple[ImageLoader | None, str | None]:
    """The result's image loader, or the reason there is none (the generator's failure or unusable bytes)."""
    if result.failure is not None:
        return None, result.failure
    if result.image is None:
        return (
            None,
            f"generator {model} returned neither an image nor a failure for sample {result.sample_id}",
        )
    try:
        return png_loader(result), None
    except ValueError as error:
        return None, str(error)


def plan_text(result: GenerationResult) -> str | None:
    """The Sci-RCoT a planned generator drew for this result (``sciir.generation.planning``), else None."""
    planner = result.meta.get("planner")
    return planner.get("plan") if isinstance(planner, dict) else None


def collect_model(
    model: str,
    generator: ImageGenerator,
    requests: Sequence[GenerationRequest],
    params: GenerateParams,
    meta: dict[str, Any],
) -> tuple[dict[str, ImageLoader], list[dict[str, Any]], dict[str, str]]:
    """Run one generator over the requests: its images and the plans a planner wrote for them, both by
    ``<model>/<sample_id>``, and its manifest rows (each result's meta with ``meta`` added)."""
    images: dict[str, ImageLoader] = {}
    plans: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for result, seconds in run_generator(model, generator, requests, params.batch_size):
        if meta:
            result = result.model_copy(update={"meta": {**result.meta, **meta}})
        loader, reason = image_or_reason(model, result)
        if loader is not None:
            images[f"{model}/{result.sample_id}"] = loader
            if (plan := plan_text(result)) is not None:
                plans[f"{model}/{result.sample_id}"] = plan
        rows.append(manifest_row(model, generator, params.seed, result, seconds, reason))
    return images, rows, plans


def unsent_rows(
    model: str, generator: ImageGenerator, unsent: dict[str, str], seed: int
) -> list[dict[str, Any]]:
    """Failed rows for the samples never sent to the generator (a plan or a prompt that could not be
    made), each with its reason."""
    return [
        manifest_row(model, generator, seed, GenerationResult(sample_id=sample_id), 0.0, reason)
        for sample_id, reason in unsent.items()
    ]


def generation_metrics(manifest: pd.DataFrame, generators: dict[str, ImageGenerator]) -> dict[str, float]:
    """Per model: ok and failed counts, seconds spent, and response-cache hits/misses when it is cached."""
    metrics: dict[str, float] = {}
    for model, generator in generators.items():
        rows = manifest[manifest["model"] == model]
        metrics[f"{model}.ok"] = float((rows["status"] == "ok").sum())
        metrics[f"{model}.failed"] = float((rows["status"] == "failed").sum())
        metrics[f"{model}.seconds"] = float(rows["seconds"].sum())
        cache_stats = getattr(generator, "stats", None)
        if isinstance(cache_stats, dict):
            metrics[f"{model}.cache_hits"] = float(cache_stats.get("hits", 0))
            metrics[f"{model}.cache_misses"] = float(cache_stats.get("misses", 0))
    return metrics


def requests_for_role(
    role: GeneratorRole,
    benchmark: pd.DataFrame,
    params: GenerateParams,
    contestant_requests: list[GenerationRequest],
) -> tuple[Sequence[GenerationRequest], dict[str, str]]:
    """What a generator of ``role`` receives: contestants the prompt-only requests, references the
    requests with their plan (and the samples whose plan could not be read)."""
    if role == "reference":
        return build_reference_requests(benchmark, params)
    return contestant_requests, {}


def generate_images(
    benchmark: pd.DataFrame,
    finetune_summary: dict[str, Any],
    generators: dict[str, ImageGenerator],
    params: dict[str, Any],
) -> tuple[dict[str, ImageLoader], dict[str, str], pd.DataFrame, dict[str, float]]:
    """Every selected generator on every benchmark sample, with the same seed for all.

    ``finetune_summary`` orders this pipeline after finetune and is recorded in the manifest
    meta (``adapter``) of generators that load that LoRA adapter. A contestant receives only the
    prompt, seed and size; a ``reference`` generator also receives the plan (a sample whose plan
    cannot be read fails for references only). A failed sample gets a ``failed`` manifest row with
    its reason and no image; the run goes on.

    Returns:
        Image loaders keyed ``<model>/<sample_id>`` (saved lazily by the PartitionedDataset), the plans
        of planned generators under the same keys (saved beside the images as text), the generation
        manifest, and generate_metrics.
    """
    config = GenerateParams.model_validate(params)
    selected = select_generators(generators, config.models)
    contestant_requests = build_requests(benchmark, config)
    drawn = draw_every_sample(
        selected,
        lambda generator: requests_for_role(generator.role, benchmark, config, contestant_requests),
        list(benchmark["sample_id"]),
        config,
        finetune_summary,
    )
    return drawn.images, drawn.plans, drawn.manifest, generation_metrics(drawn.manifest, selected)


RequestsOf = Callable[[ImageGenerator], tuple[Sequence[GenerationRequest], dict[str, str]]]


@dataclass(frozen=True)
class Drawn:
    """What the generators drew: images and plans by ``<model>/<sample_id>``, and the manifest."""

    images: dict[str, ImageLoader]
    plans: dict[str, str]
    manifest: pd.DataFrame


def draw_every_sample(
    generators: dict[str, ImageGenerator],
    requests_of: RequestsOf,
    sample_order: Sequence[str],
    config: GenerateParams,
    finetune_summary: dict[str, Any],
    meta: dict[str, Any] | None = None,
) -> Drawn:
    """Each generator on the requests ``requests_of`` gives it (with the samples never sent and why),
    manifest rows in ``sample_order`` per model; ``meta`` is added to every row's meta, and so is the
    adapter record of a generator that loads the finetuned LoRA."""
    position = {sample_id: index for index, sample_id in enumerate(sample_order)}
    images: dict[str, ImageLoader] = {}
    plans: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for model, generator in generators.items():
        requests, unsent = requests_of(generator)
        logger.info("generate %s (%s): %d samples", model, generator.role, len(requests))
        adapter = adapter_record(generator, finetune_summary)
        row_meta = {**(meta or {}), **({"adapter": adapter} if adapter is not None else {})}
        model_images, model_rows, model_plans = collect_model(model, generator, requests, config, row_meta)
        images.update(model_images)
        plans.update(model_plans)
        model_rows += unsent_rows(model, generator, unsent, config.seed)
        rows.extend(sorted(model_rows, key=lambda row: position[row["sample_id"]]))
    return Drawn(images, plans, pd.DataFrame(rows, columns=MANIFEST_COLUMNS))
