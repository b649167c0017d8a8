"""The reasoning planner: a language model rewrites each prompt into a Sci-RCoT plan that the generator
draws; the plan is saved beside the image, and a sample without a plan fails with the reason."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest
from kedro.io import DatasetError

from sciir.backends.base import (
    PENDING,
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
)
from sciir.catalog.backend_dataset import BackendSetDataset
from sciir.generation.planning import PlannedGenerator
from sciir.pipelines.generate.nodes import generate_images
from sciir.testing.fake_openai_server import FakeOpenAIServer

PROMPTS = {"s1": 'A flow diagram of "Glycolysis".', "s2": 'A structure of "Benzene".'}
BENCHMARK = pd.DataFrame({"sample_id": list(PROMPTS), "prompt": list(PROMPTS.values())})
PLAN = 'Style: flow diagram on white. Required text: "Glucose", "Pyruvate". "Glucose" -> "Pyruvate".'


class Drawer(ImageGenerator):
    """Keeps the prompts it is given and returns a tiny PNG for each."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[str] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        from PIL import Image

        from sciir.images.payload import encode

        self.prompts += [request.prompt for request in requests]
        png = encode(Image.new("RGB", (8, 8), "white"), "png")
        return [
            GenerationResult(sample_id=r.sample_id, image=png, meta={"backend": "drawer"}) for r in requests
        ]


class ScriptedPlanner(VisionLanguageModel):
    """Plans s1; fails s2's request, or answers it off the schema."""

    def __init__(self, s2: VLMResult) -> None:
        super().__init__()
        self.s2 = s2

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [
            VLMResult(output={"plan": PLAN}) if "Glycolysis" in r.context["prompt"] else self.s2
            for r in requests
        ]


@pytest.mark.parametrize(
    ("s2", "reason"),
    [
        (VLMResult.failed("HTTP 503"), "no plan for sample s2: planner failed: HTTP 503"),
        (VLMResult(output={"plan": "  "}), "no plan for sample s2: planner answer does not match its schema"),
    ],
)
def test_the_generator_draws_the_plan_and_a_sample_without_one_fails(s2: VLMResult, reason: str) -> None:
    drawer = Drawer()
    planned = PlannedGenerator(drawer, ScriptedPlanner(s2))
    first, second = planned.generate([GenerationRequest(sample_id=s, prompt=p) for s, p in PROMPTS.items()])
    assert drawer.prompts == [PLAN]  # the original prompt is never drawn in a plan's place
    assert first.ok and first.meta["planner"] == {"prompt": PROMPTS["s1"], "plan": PLAN}
    assert not second.ok and second.failure.startswith(reason)


def _prompt_sent(body: dict[str, Any]) -> str:
    """The text of every message part the server received."""
    return "\n".join(
        part["text"] for message in body["messages"] for part in message["content"] if part["type"] == "text"
    )


def _plan_responder(body: dict[str, Any]) -> str:
    assert body["response_format"]["json_schema"]["name"] == "planner"
    return json.dumps(
        {
            "plan": PLAN
            if "Glycolysis" in _prompt_sent(body)
            else 'Style: structural drawing. Required text: "Benzene".'
        }
    )


def test_a_configured_planner_is_asked_over_http_and_its_plans_are_saved_beside_the_images() -> None:
    with FakeOpenAIServer(responder=_plan_responder) as server:
        generators = BackendSetDataset(
            kind="generator",
            members={
                "planned": {
                    "backend": "programmatic",
                    "planner": {"backend": "openai", "base_url": server.base_url, "model": "planner-lm",
                                "max_retries": 0, "max_words": 60},
                },
                "plain": {"backend": "programmatic"},
            },
        ).load()  # fmt: skip
        images, plans, manifest, _, _ = generate_images(
            BENCHMARK, {}, generators, {"width": 256, "height": 256}
        )
        sent = [request.body for request in server.requests]
    assert len(sent) == 2 and all(body["response_format"]["json_schema"]["strict"] for body in sent)
    assert PROMPTS["s1"] in _prompt_sent(sent[0]) and "At most 60 words" in _prompt_sent(sent[0])
    assert plans == {"planned/s1": PLAN, "planned/s2": 'Style: structural drawing. Required text: "Benzene".'}
    assert set(images) == {"planned/s1", "planned/s2", "plain/s1", "plain/s2"}
    rows = manifest.set_index(["model", "sample_id"])
    assert json.loads(rows.loc[("planned", "s1"), "meta"])["planner"]["plan"] == PLAN
    assert "planner" not in json.loads(rows.loc[("plain", "s1"), "meta"])
    # The programmatic baseline draws what it is given: the plan's arrow, which the prompt does not state.
    assert images["planned/s1"]().tobytes() != images["plain/s1"]().tobytes()


def test_a_reference_takes_no_planner() -> None:
    members = {"ref": {"backend": "plan_reference", "role": "reference", "planner": {"backend": "offline"}}}
    with pytest.raises(
        DatasetError, match="'ref': a reference draws the annotation's plan; it takes no planner"
    ):
        BackendSetDataset(kind="generator", members=members).load()


class NumberedPlanner(VisionLanguageModel):
    """Plans each prompt as "plan of <prompt>", reporting each window's plans last to first; counts the
    plan requests it is handed per call. From its second call on it waits (at most 10 s) until the drawer
    has drawn something: a planned generator that planned every prompt before drawing any would keep it
    waiting."""

    def __init__(self, drawer: Drawer) -> None:
        super().__init__()
        self.calls: list[int] = []
        self.drawer = drawer
        self.waited_for_nothing = True

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.calls.append(len(requests))
        if len(self.calls) > 1:
            deadline = time.monotonic() + 10
            while not self.drawer.prompts and time.monotonic() < deadline:
                time.sleep(0.01)
            self.waited_for_nothing &= bool(self.drawer.prompts)
        return [VLMResult(output={"plan": f"plan of {r.context['prompt']}"}) for r in requests]

    def _answer_window(self, requests: Sequence[VLMRequest], on_result: Any) -> list[VLMResult]:
        results = self.generate(requests)
        for index in reversed(range(len(results))):
            on_result(index, results[index])
        return results


def test_plans_are_drawn_as_they_arrive_and_results_keep_their_positions() -> None:
    """The planner takes its own windows over every prompt, and each plan is drawn as soon as it arrives
    (not after every plan); plans arriving out of order are reported at their request's position."""
    drawer = Drawer()
    planner = NumberedPlanner(drawer)
    requests = [GenerationRequest(sample_id=f"s{n}", prompt=f"prompt {n}") for n in range(7)]
    seen: dict[int, GenerationResult] = {}
    PlannedGenerator(drawer, planner).stream(iter(requests), seen.__setitem__, window=3)
    assert planner.waited_for_nothing and len(planner.calls) >= 3
    assert sum(planner.calls) == 7 and max(planner.calls) <= 3
    assert sorted(drawer.prompts) == sorted(f"plan of prompt {n}" for n in range(7))
    assert {p: r.sample_id for p, r in seen.items()} == {n: f"s{n}" for n in range(7)}
    assert all(
        seen[n].meta["planner"] == {"prompt": f"prompt {n}", "plan": f"plan of prompt {n}"} for n in range(7)
    )


def test_it_takes_the_wrapped_generators_role_and_counts_and_refuses_requests_that_wait() -> None:
    drawer = Drawer()
    drawer.role, drawer.stats = "reference", {"cache_misses": 2.0}
    planned = PlannedGenerator(drawer, ScriptedPlanner(VLMResult.failed("HTTP 503")))
    assert planned.role == "reference" and planned.stats == {"cache_misses": 2.0}
    request = GenerationRequest(sample_id="s1", prompt=PROMPTS["s1"])
    with pytest.raises(RuntimeError, match="a planned generator's requests cannot wait for answers"):
        planned.stream(iter([request, PENDING]), lambda position, result: None)
