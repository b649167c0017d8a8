"""A generator sees only its prompt: the generate node, on intrinsic-reasoning rows, hands every
contestant backend (programmatic, diffusers on the tiny local pipeline, openai_images against the
loopback images server) the prompt, the seed and the size, and nothing of the annotation; only the
reference renderer receives the plan, and the manifest marks it ``reference``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator, PlanRequest
from sciir.catalog.backend_dataset import BackendSetDataset
from sciir.generation.params import GenerateParams
from sciir.generation.requests import build_requests
from sciir.pipelines.generate.nodes import generate_images
from sciir.testing.fake_images_server import FakeImagesServer
from sciir.training.tiny_stable_diffusion import ensure_tiny_pipeline

PARAMS = {"seed": 3, "width": 48, "height": 40, "models": None}
# Strings that exist only in the annotation: any of them reaching a contestant is a leak.
CANARIES = ("Zyxolase canary", "Qwertin canary")
REQUEST_FIELDS = {"sample_id", "prompt", "seed", "width", "height"}
PAYLOAD_FIELDS = {"model", "prompt", "size", "n", "response_format", "seed"}


def intrinsic_benchmark() -> pd.DataFrame:
    """Two intrinsic-reasoning rows: abstract prompts that quote terms and state no connection, whose
    plans carry edges between those terms and a label the prompt never mentions."""
    prompts = [
        'A flow diagram showing "Coagulation", "Filtration"; render every quoted label exactly.',
        'A cell diagram showing "Nucleus", "Ribosome".',
    ]
    plans = [
        {"labels": ["Coagulation", "Filtration", CANARIES[0]], "edges": [["Coagulation", "Filtration"]]},
        {"labels": ["Nucleus", "Ribosome", CANARIES[1]], "edges": [["Nucleus", CANARIES[1]]]},
    ]
    return pd.DataFrame(
        {
            "sample_id": ["s-a-p0", "s-b-p0"],
            "group": ["Law_Process", "Entity_Process"],
            "setting": ["intrinsic_reasoning"] * 2,
            "term_count": [2, 2],
            "prompt": prompts,
            "plan": [json.dumps(plan) for plan in plans],
        }
    )


class Spy(ImageGenerator):
    """Records every request the generate node hands to the wrapped generator, then delegates."""

    def __init__(self, inner: ImageGenerator) -> None:
        super().__init__()
        self.inner, self.role, self.seen = inner, inner.role, []

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.seen.extend(requests)
        return self.inner.generate(requests)


class RecordingPipeline:
    """A diffusers pipeline that records each call's arguments before running it."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline, self.calls = pipeline, []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.pipeline(*args, **kwargs)


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory) -> str:
    return str(ensure_tiny_pipeline(tmp_path_factory.mktemp("tiny") / "base", seed=0))


def configured_generators(tiny_pipeline: str, images_url: str) -> dict[str, ImageGenerator]:
    """The generators as conf/base/backends.yml builds them: one of each contestant backend plus the
    reference renderer, by config (roles included)."""
    members = {
        "programmatic": {"backend": "programmatic"},
        "tiny_diffusers": {
            "backend": "diffusers",
            "pipeline_path": tiny_pipeline,
            "steps": 1,
            "resolution": 32,
        },
        "images_api": {
            "backend": "openai_images",
            "base_url": images_url,
            "model": "fake-image-model",
            "api_key": "sk-test",
            "retry_base_delay_s": 0.01,
        },
        "reference_renderer": {"backend": "plan_reference", "role": "reference"},
    }
    return BackendSetDataset(kind="generator", members=members).load()


def assert_no_canary(text: str) -> None:
    assert not any(canary in text for canary in CANARIES), text


@pytest.fixture(scope="module")
def generated(tiny_pipeline: str) -> dict[str, Any]:
    """One generate node run on the intrinsic rows, with everything each backend received."""
    benchmark = intrinsic_benchmark()
    with FakeImagesServer() as server:
        spies = {
            name: Spy(generator)
            for name, generator in configured_generators(tiny_pipeline, server.base_url).items()
        }
        diffusers = spies["tiny_diffusers"].inner
        recorder = RecordingPipeline(diffusers._loaded_pipeline())
        diffusers._pipeline = recorder
        _, _plans, manifest, _, _ = generate_images(benchmark, {}, dict(spies), PARAMS)
        payloads = [request.body for request in server.requests]
    return {
        "benchmark": benchmark,
        "spies": spies,
        "manifest": manifest,
        "payloads": payloads,
        "pipeline_calls": recorder.calls,
    }


@pytest.mark.slow
def test_every_contestant_receives_exactly_prompt_seed_and_size(generated: dict[str, Any]) -> None:
    prompts = dict(zip(generated["benchmark"]["sample_id"], generated["benchmark"]["prompt"], strict=True))
    for name in ("programmatic", "tiny_diffusers", "images_api"):
        seen = generated["spies"][name].seen
        assert [request.sample_id for request in seen] == list(prompts), name
        for request in seen:
            assert type(request) is GenerationRequest and set(request.model_dump()) == REQUEST_FIELDS
            assert request.prompt == prompts[request.sample_id]
            assert (request.seed, request.width, request.height) == (3, 48, 40)
            assert_no_canary(request.model_dump_json())


def test_the_images_api_payloads_carry_only_the_prompt(generated: dict[str, Any]) -> None:
    payloads = generated["payloads"]
    assert sorted(body["prompt"] for body in payloads) == sorted(generated["benchmark"]["prompt"])
    for body in payloads:
        assert set(body) <= PAYLOAD_FIELDS and body["size"] == "48x40" and body["seed"] == 3
        assert_no_canary(json.dumps(body))


def test_the_diffusers_pipeline_is_called_with_the_prompt_alone(generated: dict[str, Any]) -> None:
    calls = generated["pipeline_calls"]
    assert all(len(args) == 1 for args, _ in calls)  # the prompts of one batch, nothing else positional
    assert [prompt for args, _ in calls for prompt in args[0]] == list(generated["benchmark"]["prompt"])
    for _, kwargs in calls:
        assert set(kwargs) == {"num_inference_steps", "guidance_scale", "generator", "height", "width"}
        assert_no_canary(repr(kwargs))


def test_the_programmatic_baseline_draws_no_arrow_the_prompt_does_not_state(
    generated: dict[str, Any],
) -> None:
    manifest = generated["manifest"]
    rows = manifest[manifest["model"] == "programmatic"]
    assert list(rows["status"]) == ["ok", "ok"]
    metas = [json.loads(meta) for meta in rows["meta"]]
    assert [meta["drawn_labels"] for meta in metas] == [
        ["Coagulation", "Filtration"],
        ["Nucleus", "Ribosome"],
    ]
    assert [meta["drawn_edges"] for meta in metas] == [[], []]  # the plans' edges never reached it


def test_only_the_reference_renderer_receives_the_plan_and_is_marked_reference(
    generated: dict[str, Any],
) -> None:
    seen = generated["spies"]["reference_renderer"].seen
    assert all(isinstance(request, PlanRequest) for request in seen)
    assert [request.plan["labels"][-1] for request in seen] == list(CANARIES)

    manifest = generated["manifest"]
    roles = dict(zip(manifest["model"], manifest["role"], strict=False))
    assert roles == {
        "programmatic": "contestant",
        "tiny_diffusers": "contestant",
        "images_api": "contestant",
        "reference_renderer": "reference",
    }
    assert set(manifest["status"]) == {"ok"}
    reference = manifest[manifest["model"] == "reference_renderer"]
    drawn = [json.loads(meta)["drawn_labels"] for meta in reference["meta"]]
    assert [labels[-1] for labels in drawn] == list(CANARIES)  # the canary was there to leak


def test_build_requests_reads_no_annotation_column() -> None:
    benchmark, params = intrinsic_benchmark(), GenerateParams.model_validate(PARAMS)
    requests = build_requests(benchmark[["sample_id", "prompt"]], params)
    assert requests == build_requests(benchmark, params) and len(requests) == 2
