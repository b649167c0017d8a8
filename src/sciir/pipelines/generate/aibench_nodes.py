"""Generate's AIBench half: every contestant draws each AIBench-set paper's main illustration from the
paper's method text (AIBench 3.1 and B.4), into its own folder and manifest; every reference draws the
paper's logic graph (``sciir.generation.aibench_requests``).

A reference's images are of known content, so the solver is calibrated on them, and they are never
ranked. A paper without method text fails for every generator with the reason, a paper without a logic
graph fails for the references with annotate's reason, and so does every sample a generator cannot
draw; the run goes on. Generators are the ``generators`` catalog entry, response-cached like the
SciIR-Bench generation, so a rerun draws only what is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pandas as pd

from sciir.backends.base import GenerationRequest, ImageGenerator
from sciir.catalog.image_dataset import EncodedImage
from sciir.catalog.optional_dataset import MissingInput, is_missing_input, mapping_or_empty
from sciir.generation.aibench_requests import aibench_generators, aibench_reference_requests, aibench_requests
from sciir.generation.drawing import draw_every_sample
from sciir.generation.manifest import (
    MANIFEST_COLUMNS,
    TIMING_COLUMNS,
    generation_metrics,
    log_aibench_failures,
)
from sciir.generation.params import GenerateParams
from sciir.pipelines.generate.nodes import image_partitions
from sciir.tasks.aibench_illustration import ILLUSTRATION_TASK
from sciir.tasks.prompts import prompt_template

logger = logging.getLogger(__name__)

AIBenchDrawn = tuple[dict[str, EncodedImage], pd.DataFrame, pd.DataFrame, dict[str, float]]


def _nothing_drawn(reason: str) -> AIBenchDrawn:
    logger.info("AIBench generation skipped: %s", reason)
    return {}, pd.DataFrame(columns=MANIFEST_COLUMNS), pd.DataFrame(columns=TIMING_COLUMNS), {}


def generate_aibench_images(
    aibench_set: pd.DataFrame | MissingInput,
    aibench_graphs: pd.DataFrame | MissingInput,
    finetune_summary: dict[str, Any] | MissingInput,
    generators: dict[str, ImageGenerator],
    params: dict[str, Any],
) -> AIBenchDrawn:
    """Every AIBench generator on every paper of the AIBench set, with generate's seed and size:
    contestants from the method text, references from the logic graph (``aibench_graphs``) too.

    Returns:
        Image loaders keyed ``<model>/<sample_id>`` (``aibench_generations``), the AIBench generation
        manifest (the columns of ``generation_manifest``; each row's meta names the prompt version), the
        seconds each image took (``aibench_generation_timings``, MLflow only) and its metrics per model
        (ok, failed, seconds, cache hits and misses). Nothing when ``generate.aibench.enabled`` is false,
        ``generate.benchmark`` names a benchmark file, the AIBench set does not exist yet or no generator
        is selected (one log line says which).
    """
    config = GenerateParams.model_validate(params)
    if not config.aibench.enabled:
        return _nothing_drawn("generate.aibench.enabled is false")
    if config.benchmark is not None:
        return _nothing_drawn(
            f"generate.benchmark is set ({config.benchmark}): the AIBench set is SciIR-Bench's"
        )
    if is_missing_input(aibench_set):
        return _nothing_drawn(f"aibench_set ({aibench_set.location}) not found")
    selected = aibench_generators(generators, config)
    if not selected:
        return _nothing_drawn("no generator is selected")
    requests, unsent = aibench_requests(aibench_set, config)
    # A missing aibench_graphs raises MissingInputError, naming it, where it is first used.
    planned, unplanned = aibench_reference_requests(requests, aibench_graphs)  # type: ignore[arg-type]
    by_role: dict[str, tuple[Sequence[GenerationRequest], dict[str, str]]] = {
        "contestant": (requests, unsent),
        "reference": (planned, {**unsent, **unplanned}),
    }
    drawn = draw_every_sample(
        selected,
        lambda generator: by_role[generator.role],
        [str(sample) for sample in aibench_set["sample_id"]],
        config,
        mapping_or_empty(finetune_summary),
        meta={"prompt_version": prompt_template(ILLUSTRATION_TASK).version},
    )
    log_aibench_failures(drawn.manifest)
    metrics = generation_metrics(drawn.manifest, drawn.seconds, selected)
    return image_partitions(drawn.images), drawn.manifest, drawn.timings, metrics
