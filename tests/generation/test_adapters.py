"""A LoRA generator's base: checked to be the same generator without the LoRA, drawn beside it; and the
generator drawing with another adapter in place of its own (finetune's scored checkpoints)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator
from sciir.generation.adapters import checked_bases, with_adapter, with_bases
from sciir.generation.aibench_requests import aibench_generators
from sciir.generation.params import GenerateParams


class Painter(ImageGenerator):
    """A generator that draws nothing: only its settings matter here."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [GenerationResult(sample_id=request.sample_id, failure="not drawn") for request in requests]


SHARED = {"pipeline_path": "data/06_models/tiny_base", "steps": 4, "resolution": 64}


def generators(**base_settings) -> dict[str, ImageGenerator]:
    return {
        "programmatic": Painter(),
        "tuned": Painter(**SHARED, lora_path="data/06_models/lora"),
        "base": Painter(**(SHARED | base_settings)),
    }


def test_a_base_is_its_adapter_generator_without_the_lora_and_draws_just_before_it():
    found = generators()
    assert checked_bases(found, {"tuned": "base", "not_configured": "base"}) == {"tuned": "base"}
    selected = {"programmatic": found["programmatic"], "tuned": found["tuned"]}
    assert list(with_bases(selected, found, {"tuned": "base"})) == ["programmatic", "base", "tuned"]
    assert list(with_bases({"programmatic": found["programmatic"]}, found, {"tuned": "base"})) == [
        "programmatic"
    ]


@pytest.mark.parametrize(
    ("bases", "settings", "message"),
    [
        ({"tuned": "base"}, {"steps": 8}, "steps: 8 != 4"),
        ({"tuned": "base"}, {"lora_path": "other"}, "'other' (a base loads none)"),
        ({"tuned": "absent"}, {}, "no generator of that name is configured"),
        ({"programmatic": "base"}, {}, "generator programmatic (Painter) loads no LoRA adapter"),
    ],
)
def test_a_base_that_would_measure_something_else_is_refused(bases, settings, message):
    with pytest.raises(ValueError) as refused:
        checked_bases(generators(**settings), bases)
    assert message in str(refused.value)


def test_a_generator_draws_with_another_adapter_in_its_own_place():
    tuned = generators()["tuned"]
    drawer = with_adapter("tuned", tuned, "lora/scored/step-000004")
    assert type(drawer) is Painter and drawer is not tuned
    assert drawer.config == SHARED | {"lora_path": "lora/scored/step-000004"}
    assert tuned.config["lora_path"] == "data/06_models/lora"


def test_a_base_draws_the_aibench_set_only_when_named():
    found = generators()
    config = GenerateParams(adapter_bases={"tuned": "base"})
    assert list(aibench_generators(found, config)) == ["programmatic", "tuned"]
    named = GenerateParams.model_validate(
        {"adapter_bases": {"tuned": "base"}, "aibench": {"models": ["base"]}}
    )
    assert list(aibench_generators(found, named)) == ["base"]
    listed = GenerateParams(adapter_bases={"tuned": "base"}, models=["tuned", "base"])
    assert list(aibench_generators(found, listed)) == ["tuned", "base"]
