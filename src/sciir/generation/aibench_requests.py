"""What each generator is sent for the AIBench set (AIBench 3.1 and B.4): a contestant the AIBench prompt
(``sciir.tasks.aibench_illustration``: the instruction of task ``aibench_illustration`` around the paper's
method text), the seed and the size, nothing else; a reference (role ``reference``) also the paper's
plan, which for an AIBench paper is its logic graph (``sciir.aibench.reference_plan``: components,
flows, phases as groups), the examination's answer key."""

from __future__ import annotations

import pandas as pd

from sciir.aibench.reference_plan import graph_plans
from sciir.backends.base import GenerationRequest, ImageGenerator, PlanRequest
from sciir.generation.params import GenerateParams
from sciir.generation.requests import refuse_repeated_samples, select_generators
from sciir.tasks.aibench_illustration import NoMethodText, illustration_prompt


def aibench_generators(
    generators: dict[str, ImageGenerator], config: GenerateParams
) -> dict[str, ImageGenerator]:
    """The generators that draw the AIBench set: ``generate.aibench.models`` when set, else those of
    ``generate.models``; contestants and references alike. With neither set, the bases of
    ``generate.adapter_bases`` are left out: they draw SciIR-Bench for the fine-tuning effect only.

    Raises:
        ValueError: ``generate.aibench.models`` names an unknown generator.
    """
    if config.aibench.models is None:
        selected = select_generators(generators, config.models)
        bases = set(config.adapter_bases.values()) if config.models is None else set()
        return {name: generator for name, generator in selected.items() if name not in bases}
    return select_generators(generators, config.aibench.models, "params:generate.aibench.models")


def aibench_requests(
    aibench_set: pd.DataFrame, config: GenerateParams
) -> tuple[list[GenerationRequest], dict[str, str]]:
    """One request per paper of the AIBench set (its prompt from the method text, the seed, the size),
    and the reason for each paper that has no method text.

    Raises:
        ValueError: the AIBench set repeats a sample_id (images are stored by sample_id).
    """
    refuse_repeated_samples(aibench_set, "aibench_set", "paper")
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


def aibench_reference_requests(
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
