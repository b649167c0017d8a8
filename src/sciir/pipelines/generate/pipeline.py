"""Generate pipeline wiring: benchmark x generators -> images, manifest, metrics; and the AIBench set x
generators (references with the logic graphs) -> AIBench images, manifest, metrics."""

from __future__ import annotations

from kedro.pipeline import Pipeline, node

from sciir.pipelines.generate.aibench_nodes import generate_aibench_images
from sciir.pipelines.generate.nodes import generate_images


def create_pipeline(**kwargs) -> Pipeline:
    """The ``generate`` pipeline (inputs: benchmark, aibench_set, aibench_graphs, finetune_summary, generators,
    params:generate; outputs: generations, generation_plans, generation_manifest, generation_timings,
    generate_metrics, aibench_generations, aibench_generation_manifest, aibench_generation_timings,
    generate_aibench_metrics)."""
    return Pipeline(
        [
            node(
                generate_images,
                ["benchmark", "finetune_summary", "generators", "params:generate"],
                [
                    "generations",
                    "generation_plans",
                    "generation_manifest",
                    "generation_timings",
                    "generate_metrics",
                ],
                name="generate_images",
            ),
            node(
                generate_aibench_images,
                ["aibench_set", "aibench_graphs", "finetune_summary", "generators", "params:generate"],
                [
                    "aibench_generations",
                    "aibench_generation_manifest",
                    "aibench_generation_timings",
                    "generate_aibench_metrics",
                ],
                name="generate_aibench_images",
            ),
        ]
    )
