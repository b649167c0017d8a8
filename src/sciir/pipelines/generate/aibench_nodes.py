"""Generate's AIBench half: every contestant draws each AIBench-set paper's main illustration from the
paper's method text (AIBench 3.1 and B.4), into its own folder and manifest.

A contestant receives the AIBench prompt (``sciir.aibench.illustration``: the instruction of task
``aibench_illustration`` around the method text), the seed and the size, nothing else. References are
not asked: they draw an annotation's plan, and the only plan of an AIBench paper is its logic graph, the
examination's answer key. A paper without method text fails for every contestant with the reason, and so
does every sample a contestant cannot draw; the run goes on. Generators are the ``generators`` catalog
entry, response-cached like the SciIR-Bench generation, so a rerun draws only what is missing.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.aibench.illustration import ILLUSTRATION_TASK, NoMethodText, illustration_prompt
from sciir.backends.base import GenerationRequest, ImageGenerator
from sciir.optional_inputs import MissingInput, is_missing
from sciir.pipelines.generate.nodes import (
    MANIFEST_COLUMNS,
    GenerateParams,
    ImageLoader,
    draw_every_sample,
    generation_metrics,
    select_generators,
)
from sciir.tasks.prompts import prompt_template

logger = logging.getLogger(__name__)


def aibench_contestants(
    generators: dict[str, ImageGenerator], config: GenerateParams
) -> dict[str, ImageGenerator]:
    """The contestants that draw the AIBench set: ``generate.aibench.models`` when set, else the
    contestants among ``generate.models``.

    Raises:
        ValueError: ``generate.aibench.models`` names an unknown generator or a reference.
    """
    if config.aibench.models is None:
        selected = select_generators(generators, config.models)
        return {name: generator for name, generator in selected.items() if generator.role == "contestant"}
    selected = select_generators(generators, config.aibench.models)
    references = [name for name, generator in selected.items() if generator.role != "contestant"]
    if references:
        raise ValueError(
            f"params:generate.aibench.models names reference generator(s) {references}: the AIBench set "
            "is drawn by contestants only"
        )
    return selected


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


def _nothing_drawn(reason: str) -> tuple[dict[str, ImageLoader], pd.DataFrame, dict[str, float]]:
    logger.info("AIBench generation skipped: %s", reason)
    return {}, pd.DataFrame(columns=MANIFEST_COLUMNS), {}


def generate_aibench_images(
    aibench_set: pd.DataFrame | MissingInput,
    finetune_summary: dict[str, Any],
    generators: dict[str, ImageGenerator],
    params: dict[str, Any],
) -> tuple[dict[str, ImageLoader], pd.DataFrame, dict[str, float]]:
    """Every AIBench contestant on every paper of the AIBench set, with generate's seed and size.

    Returns:
        Image loaders keyed ``<model>/<sample_id>`` (``aibench_generations``), the AIBench generation
        manifest (the columns of ``generation_manifest``; each row's meta names the prompt version),
        and its metrics per model (ok, failed, seconds, cache hits and misses). Nothing when
        ``generate.aibench.enabled`` is false, the AIBench set does not exist yet or no contestant
        is selected (one log line says which).
    """
    config = GenerateParams.model_validate(params)
    if not config.aibench.enabled:
        return _nothing_drawn("generate.aibench.enabled is false")
    if is_missing(aibench_set):
        return _nothing_drawn(f"aibench_set ({aibench_set.location}) not found")
    contestants = aibench_contestants(generators, config)
    if not contestants:
        return _nothing_drawn("no contestant generator is selected")
    requests, unsent = aibench_requests(aibench_set, config)
    drawn = draw_every_sample(
        contestants,
        lambda _generator: (requests, unsent),
        [str(sample) for sample in aibench_set["sample_id"]],
        config,
        finetune_summary,
        meta={"prompt_version": prompt_template(ILLUSTRATION_TASK).version},
    )
    _log_failures(drawn.manifest)
    return drawn.images, drawn.manifest, generation_metrics(drawn.manifest, contestants)


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
