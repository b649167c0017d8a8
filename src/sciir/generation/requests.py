"""What each generator is sent for SciIR-Bench: a contestant the prompt, seed and size of each sample; a
generator whose role is ``reference`` also the sample's plan (the annotation's labels and edges)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import pandas as pd

from sciir.backends.base import GenerationRequest, GeneratorRole, ImageGenerator, PlanRequest
from sciir.generation.params import GenerateParams

logger = logging.getLogger(__name__)


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


def contestants_only(generators: dict[str, ImageGenerator], why: str) -> dict[str, ImageGenerator]:
    """The generators that are not references; the references left out are named in one log line, with
    ``why``."""
    references = [name for name, generator in generators.items() if generator.role == "reference"]
    if references:
        logger.info("generate: reference(s) %s skipped: %s", ", ".join(references), why)
    return {name: generator for name, generator in generators.items() if generator.role != "reference"}


def refuse_repeated_samples(table: pd.DataFrame, name: str, unit: str) -> None:
    """Raises ValueError when ``table`` repeats a sample_id (images are stored by sample_id); the message
    names the table and what each row is (a sample, a paper)."""
    repeated = sorted(set(table["sample_id"][table["sample_id"].duplicated()]))
    if repeated:
        raise ValueError(f"{name} repeats sample_id(s) {repeated}; each {unit} must appear once")


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


def build_requests(benchmark: pd.DataFrame, params: GenerateParams) -> list[GenerationRequest]:
    """One contestant request per benchmark row: the row's prompt, the seed and the size, nothing else.

    Only ``sample_id`` and ``prompt`` are read; the plan and every other annotation column stay behind.

    Raises:
        ValueError: the benchmark repeats a sample_id.
    """
    refuse_repeated_samples(benchmark, "benchmark", "sample")
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
