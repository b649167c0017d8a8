"""Generate's AIBench half: every contestant draws each AIBench-set paper's main illustration from the
paper's method text (AIBench 3.1 and B.4), into its own folder and manifest; every reference draws the
paper's logic graph.

A contestant receives the AIBench prompt (``sciir.tasks.aibench_illustration``: the instruction of task
``aibench_illustration`` around the method text), the seed and the size, nothing else. A reference
(role ``reference``) also receives the paper's plan, which for an AIBench paper is its logic graph
(``sciir.aibench.reference_plan``: components, flows, phases as groups), the examination's answer key:
its images are of known content, so the solver is calibrated on them, and they are never ranked. A paper
without method text fails for every generator with the reason, a paper without a logic graph fails for
the references with annotate's reason, and so does every sample a generator cannot draw; the run goes
on. Generators are the ``generators`` catalog entry, response-cached like the SciIR-Bench generation, so
a rerun draws only what is missing.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.aibench.reference_plan import graph_plans
from sciir.backends.base import GenerationRequest, ImageGenerator, PlanRequest
from sciir.catalog.optional_dataset import MissingInput, is_missing
from sciir.pipelines.generate.nodes import (
    MANIFEST_COLUMNS,
    GenerateParams,
    ImageLoader,
    draw_every_sample,
    generation_metrics,
    select_generators,
)
from sciir.tasks.aibench_illustration import ILLUSTRATION_TASK, NoMethodText, illustration_prompt
from sciir.tasks.prompts import prompt_template

logger = logging.getLogger(__name__)


def aibench_generators(
    generators: dict[str, ImageGenerator], config: GenerateParams
) -> dict[str, ImageGenerator]:
    """The generators that draw the AIBench set: ``generate.aibench.models`` when set, else those of
    ``generate.models``; contestants and references alike.

    Raises:
        ValueError: ``generate.aibench.models`` names an unknown generator.
    """
    if config.aibench.models is None:
        return select_generators(generators, config.models)
    return select_generators(generators, config.aibench.models, "params:generate.aibench.models")


def aibench_requests(
    aibench_set: pd.DataFrame, config: GenerateParams
) -> tuple[list[GenerationRequest], dict[str, str]]:
    """One request per paper of the AIBench set (its prompt from the method text, the seed, the size),
    and the reason for each paper that has no method text.

    Raises:
        ValueError: the AIBench set repeats a sample_id (images are stored by sample_id).
    """
    repeated = sorted(set(aibench_set["sample_id"][aibench_set["sample_id"].duplicated()]))
    if repeated:
        raise ValueError(f"aibench_set repeats sample_id(s) {repeated}; each paper must appear once")
    requests: list[GenerationRequest] = []
    unsent: dict[str, str] = {}
    for sample_id, methods_text in zip(aibench_set["sample_id"], aibench_set["methods_text"], strict=True):
        try:
            prompt = illustration_prompt(str(sample_id), methods_text)
        except NoMethodText as error:
            unsent[str(sample_id)] = str(error)
            continue
        requests.append(
            GenerationRequest(
                sample_id=str(sample_id),
                prompt=prompt,
                seed=config.seed,
                width=config.width,
                height=config.height,
            )
        )
    return requests, unsent


def reference_requests(
    contestant_requests: list[GenerationRequest], aibench_graphs: pd.DataFrame
) -> tuple[list[PlanRequest], dict[str, str]]:
    """For references only: each contestant request with its paper's logic graph as the plan, and the
    reason for each paper without a usable graph."""
    plans, unplanned = graph_plans(aibench_graphs, [request.sample_id for request in contestant_requests])
    requests = [
        PlanRequest(**request.model_dump(), plan=plans[request.sample_id])
        for request in contestant_requests
        if request.sample_id in plans
    ]
    return requests, unplanned


def _nothing_drawn(reason: str) -> tuple[dict[str, ImageLoader], pd.DataFrame, dict[str, float]]:
    logger.info("AIBench generation skipped: %s", reason)
    return {}, pd.DataFrame(columns=MANIFEST_COLUMNS), {}


def generate_aibench_images(
    aibench_set: pd.DataFrame | MissingInput,
    aibench_graphs: pd.DataFrame,
    finetune_summary: dict[str, Any],
    generators: dict[str, ImageGenerator],
    params: dict[str, Any],
) -> tuple[dict[str, ImageLoader], pd.DataFrame, dict[str, float]]:
    """Every AIBench generator on every paper of the AIBench set, with generate's seed and size:
    contestants from the method text, references from the logic graph (``aibench_graphs``) too.

    Returns:
        Image loaders keyed ``<model>/<sample_id>`` (``aibench_generations``), the AIBench generation
        manifest (the columns of ``generation_manifest``; each row's meta names the prompt version),
        and its metrics per model (ok, failed, seconds, cache hits and misses). Nothing when
        ``generate.aibench.enabled`` is false, the AIBench set does not exist yet or no generator
        is selected (one log line says which).
    """
    config = GenerateParams.model_validate(params)
    if not config.aibench.enabled:
        return _nothing_drawn("generate.aibench.enabled is false")
    if is_missing(aibench_set):
        return _nothing_drawn(f"aibench_set ({aibench_set.location}) not found")
    selected = aibench_generators(generators, config)
    if not selected:
        return _nothing_drawn("no generator is selected")
    requests, unsent = aibench_requests(aibench_set, config)
    planned, unplanned = reference_requests(requests, aibench_graphs)
    by_role = {"contestant": (requests, unsent), "reference": (planned, {**unsent, **unplanned})}
    drawn = draw_every_sample(
        selected,
        lambda generator: by_role[generator.role],
        [str(sample) for sample in aibench_set["sample_id"]],
        config,
        finetune_summary,
        meta={"prompt_version": prompt_template(ILLUSTRATION_TASK).version},
    )
    _log_failures(drawn.manifest)
    return drawn.images, drawn.manifest, generation_metrics(drawn.manifest, selected)


def _log_failures(manifest: pd.DataFrame) -> None:
    """One line per contestant that could not draw some papers, with its first reason."""
    failed = manifest[manifest["status"] == "failed"]
    for model, rows in failed.groupby("model", sort=True):
        logger.warning(
            "AIBench generation: %s failed on %d of %d papers (first reason: %s)",
            model,
            len(rows),
            int((manifest["model"] == model).sum()),
            rows["reason"].iloc[0],
        )
