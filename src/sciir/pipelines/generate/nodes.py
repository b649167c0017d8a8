"""Generate nodes: every selected generator draws every benchmark sample, with one manifest row each.

A contestant generator receives only each sample's prompt, the seed and the size
(:class:`GenerationRequest`); the benchmark's plan (the annotation's labels and edges) goes only to
generators whose role is ``reference`` (:class:`PlanRequest`): ``sciir.generation.requests``. The drawing,
the manifest and the timings: ``sciir.generation.drawing`` and ``sciir.generation.manifest``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sciir.backends.base import ImageGenerator
from sciir.catalog.image_dataset import EncodedImage
from sciir.generation.drawing import draw_every_sample
from sciir.generation.manifest import generation_metrics
from sciir.generation.params import GenerateParams
from sciir.generation.requests import build_requests, requests_for_role, select_generators


def image_partitions(images: dict[str, bytes]) -> dict[str, EncodedImage]:
    """Each image's PNG bytes as a partition the image folder writes as they are (never decoded and
    encoded again; Kedro's PartitionedDataset saves a callable partition lazily)."""
    return {key: EncodedImage(png) for key, png in images.items()}


def generate_images(
    benchmark: pd.DataFrame,
    finetune_summary: dict[str, Any],
    generators: dict[str, ImageGenerator],
    params: dict[str, Any],
) -> tuple[dict[str, EncodedImage], dict[str, str], pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Every selected generator on every benchmark sample, with the same seed for all.

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
    selected = select_generators(generators, config.models)
    contestant_requests = build_requests(benchmark, config)
    drawn = draw_every_sample(
        selected,
        lambda generator: requests_for_role(generator.role, benchmark, config, contestant_requests),
        list(benchmark["sample_id"]),
        config,
        finetune_summary,
    )
    metrics = generation_metrics(drawn.manifest, drawn.seconds, selected)
    return image_partitions(drawn.images), drawn.plans, drawn.manifest, drawn.timings, metrics
