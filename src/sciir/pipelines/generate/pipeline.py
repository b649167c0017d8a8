"""Generate pipeline wiring: benchmark x generators -> images, manifest, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.generate.nodes import generate_images


def create_pipeline(**kwargs) -> Pipeline:
    """The ``generate`` pipeline (inputs: benchmark, finetune_summary, generators, params:generate;
    outputs: generations, generation_plans, generation_manifest, generate_metrics)."""
    return Pipeline(
        [
            node(
                generate_images,
                ["benchmark", "finetune_summary", "generators", "params:generate"],
                ["generations", "generation_plans", "generation_manifest", "generate_metrics"],
                name="generate_images",
            )
        ]
    )
