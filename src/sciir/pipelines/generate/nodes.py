"""Generate nodes: every selected generator draws every benchmark sample, with one manifest row each.

A contestant generator receives only each sample's prompt, the seed and the size
(:class:`GenerationRequest`); the benchmark's plan (the annotation's labels and edges) goes only to
generators whose role is ``reference`` (:class:`PlanRequest`): ``sciir.generation.requests``. The drawing,
the manifest and the timings: ``sciir.generation.drawing`` and ``sciir.generation.manifest``.

The benchmark is the catalog's SciIR-Bench, or the benchmark file ``generate.benchmark`` names
(``sciir.user_files.benchmark_file``, as evaluate reads it), so generate runs with nothing else run
first; a benchmark file has no plans, so the references are left out, and its images go to their own
folder (``sciir.runs.results_folder.generated_folder``). Without finetune's summary (finetune has not
run), a generator whose LoRA adapter does not exist fails each sample with that reason.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd

from sciir.backends.base import ImageGenerator
from sciir.catalog.image_dataset import EncodedImage
from sciir.catalog.optional_dataset import MissingInput, mapping_or_empty, supplied
from sciir.generation.adapters import checked_bases, with_bases
from sciir.generation.drawing import draw_every_sample
from sciir.generation.manifest import generation_metrics, warn_if_nothing_drawn
from sciir.generation.params import GenerateParams
from sciir.generation.requests import (
    build_requests,
    contestants_only,
    requests_for_role,
    select_generators,
)
from sciir.user_files.benchmark_file import read_benchmark_file

logger = logging.getLogger(__name__)


def image_partitions(images: dict[str, bytes]) -> dict[str, EncodedImage]:
    """Each image's PNG bytes as a partition the image folder writes as they are (never decoded and
    encoded again; Kedro's PartitionedDataset saves a callable partition lazily)."""
    return {key: EncodedImage(png) for key, png in images.items()}


def benchmark_to_draw(benchmark: pd.DataFrame | MissingInput, config: GenerateParams) -> pd.DataFrame:
    """The benchmark file ``generate.benchmark`` names, else the catalog's benchmark.

    Raises:
        MissingInputError: no benchmark file is named and bench_select has not written the benchmark.
        BenchmarkFileError: the file cannot be read (named with its line and field).
    """
    if config.benchmark is None:
        return supplied(
            benchmark, "generate: no benchmark", "give a benchmark file with generate.benchmark=FILE"
        )
    tables = read_benchmark_file(config.benchmark, "generate.benchmark")
    logger.info("benchmark %s from %s: %d items", tables.name, config.benchmark, len(tables.benchmark))
    return tables.benchmark


def generators_to_draw(
    generators: dict[str, ImageGenerator], config: GenerateParams
) -> dict[str, ImageGenerator]:
    """The generators of ``generate.models``; for a benchmark file only the contestants (a reference draws
    the annotation's plan, and a benchmark file has none)."""
    selected = select_generators(generators, config.models)
    if config.benchmark is None:
        return selected
    return contestants_only(selected, f"the benchmark file {config.benchmark} has no plans, which they draw")


def generate_images(
    benchmark: pd.DataFrame | MissingInput,
    finetune_summary: dict[str, Any] | MissingInput,
    generators: dict[str, ImageGenerator],
    params: dict[str, Any],
) -> tuple[dict[str, EncodedImage], dict[str, str], pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Every selected generator on every benchmark sample, with the same seed for all; a selected generator
    that loads a LoRA adapter draws with its base (``generate.adapter_bases``, checked to differ only by the
    LoRA: ``sciir.generation.adapters``), whose name its manifest rows record (``meta.adapter.base``).

    ``finetune_summary`` orders this pipeline after finetune and is recorded in the manifest
    meta (``adapter``) of generators that load that LoRA adapter. A contestant receives only the
    prompt, seed and size; a ``reference`` generator also receives the plan (a sample whose plan
    cannot be read fails for references only). A failed sample gets a ``failed`` manifest row with
    its reason and no image; the run goes on.

    Returns:
        Image loaders keyed ``<model>/<sample_id>`` (saved lazily by the PartitionedDataset), the plans
        of planned generators under the same keys (saved beside the images as text), the generation
        manifest, the seconds each image took (``generation_timings``, MLflow only), and generate_metrics.
    """
    config = GenerateParams.model_validate(params)
    benchmark = benchmark_to_draw(benchmark, config)
    bases = checked_bases(generators, config.adapter_bases)
    selected = with_bases(generators_to_draw(generators, config), generators, bases)
    contestant_requests = build_requests(benchmark, config)
    drawn = draw_every_sample(
        selected,
        lambda generator: requests_for_role(generator.role, benchmark, config, contestant_requests),
        list(benchmark["sample_id"]),
        config,
        mapping_or_empty(finetune_summary),
        bases=bases,
    )
    warn_if_nothing_drawn(drawn.manifest, len(benchmark))
    metrics = generation_metrics(drawn.manifest, drawn.seconds, selected)
    return image_partitions(drawn.images), drawn.plans, drawn.manifest, drawn.timings, metrics
