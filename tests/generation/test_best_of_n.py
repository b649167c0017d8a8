"""Best-of-N: each prompt drawn n times, a selector scores every candidate against the prompt alone, the
best is kept; a candidate nobody could score is never given a score."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Sequence

import pandas as pd
import pytest
from PIL import Image

from sciir.backends.base import (
    PENDING,
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
)
from sciir.backends.offline import OfflineVLM
from sciir.backends.programmatic import ProgrammaticGenerator
from sciir.catalog.backend_dataset import BackendSetDataset
from sciir.generation.best_of_n import BestOfNGenerator, BestOfSettings, build_score_request, choose
from sciir.images.payload import encode
from sciir.pipelines.generate.nodes import generate_images
from sciir.tasks.registry import rule_book

PROMPT = 'A flow diagram: "Glucose" -> "Pyruvate".'


def test_the_best_score_wins_the_earliest_on_a_tie_and_unscored_candidates_never_do() -> None:
    assert choose([3, 7, None, 7]) == 1
    assert choose([None, 2]) == 1
    assert choose([None, None]) is None


class SeedPainter(ImageGenerator):
    """Paints each candidate with its seed as the grey level; seed 2, and seeds from 100 on, fail."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        return [
            GenerationResult(sample_id=r.sample_id, failure="out of memory")
            if r.seed == 2 or r.seed >= 100
            else GenerationResult(sample_id=r.sample_id, image=encode(Image.new("L", (4, 4), r.seed), "png"))
            for r in requests
        ]


class GreySelector(VisionLanguageModel):
    """Scores a candidate by its grey level (its seed), or cannot score any when ``blind``."""

    def __init__(self, blind: bool = False) -> None:
        super().__init__()
        self.blind, self.prompts = blind, []

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.prompts += [r.context["prompt"] for r in requests]
        if self.blind:
            return [VLMResult.failed("HTTP 500") for _ in requests]
        levels = [Image.open(io.BytesIO(r.images[0])).getpixel((0, 0)) for r in requests]
        return [VLMResult(output={"score": level, "rationale": "grey level"}) for level in levels]


def test_the_best_candidate_is_kept_with_every_seed_and_score_recorded() -> None:
    selector = GreySelector()
    generator = BestOfNGenerator(SeedPainter(), selector, BestOfSettings(n=4))
    [result] = generator.generate([GenerationRequest(sample_id="s1", prompt=PROMPT, seed=1)])
    # Seeds 1..4: seed 2 failed, so 1, 3 and 4 were scored 1, 3, 4 and seed 4 is kept.
    assert result.ok and Image.open(io.BytesIO(result.image)).getpixel((0, 0)) == 4
    assert result.meta["best_of"] == {
        "n": 4, "seeds": [1, 3, 4], "failed_candidates": 1, "scores": [1, 3, 4], "chosen_seed": 4
    }  # fmt: skip
    assert selector.prompts == [PROMPT] * 3  # the prompt alone, never a checklist


def test_when_no_candidate_is_scored_the_first_is_kept_and_the_manifest_says_why() -> None:
    generator = BestOfNGenerator(SeedPainter(), GreySelector(blind=True), BestOfSettings(n=2))
    [result] = generator.generate([GenerationRequest(sample_id="s1", prompt=PROMPT, seed=5)])
    record = result.meta["best_of"]
    assert record["scores"] == [None, None] and record["chosen_seed"] == 5
    assert record["unscored"].startswith(
        "no candidate was scored, the first drawn is kept: candidate_score failed"
    )


def test_a_sample_whose_candidates_all_failed_fails_with_their_reason() -> None:
    generator = BestOfNGenerator(SeedPainter(), GreySelector(), BestOfSettings(n=2))
    [result] = generator.generate([GenerationRequest(sample_id="s1", prompt=PROMPT, seed=100)])
    assert not result.ok and result.failure == "all 2 candidates failed: out of memory"


def test_the_offline_selector_scores_text_rendering_and_abstains_without_quoted_text() -> None:
    drawn = ProgrammaticGenerator().generate(
        [GenerationRequest(sample_id="s", prompt=PROMPT, width=512, height=512)]
    )
    misspelt = ProgrammaticGenerator().generate(
        [
            GenerationRequest(
                sample_id="s", prompt='A flow diagram: "Glucoze" -> "Pyruvat".', width=512, height=512
            )
        ]
    )
    offline = OfflineVLM(rule_book("offline"))
    good, bad, unquoted = offline.generate(
        [
            build_score_request(PROMPT, drawn[0].image),
            build_score_request(PROMPT, misspelt[0].image),
            build_score_request("A flow diagram of glycolysis.", drawn[0].image),
        ]
    )
    assert good.output["score"] == 10 and "2 of 2 quoted strings" in good.output["rationale"]
    assert bad.output["score"] == 1 and "0 of 2 quoted strings" in bad.output["rationale"]
    assert unquoted.output == {"score": None, "rationale": "abstained: the prompt quotes no text to check"}


def test_a_configured_best_of_n_records_its_candidates_in_the_manifest() -> None:
    generators = BackendSetDataset(
        kind="generator",
        members={
            "best3": {"backend": "programmatic", "best_of": {"n": 3, "selector": {"backend": "offline"}}}
        },
    ).load()
    benchmark = pd.DataFrame({"sample_id": ["s1"], "prompt": [PROMPT]})
    images, _, manifest, _, _ = generate_images(benchmark, {}, generators, {"width": 512, "height": 512})
    record = json.loads(manifest.loc[0, "meta"])["best_of"]
    assert set(images) == {"best3/s1"} and record["n"] == 3 and record["seeds"] == [0, 1, 2]
    assert record["scores"] == [10, 10, 10] and record["chosen_seed"] == 0


def test_a_reference_takes_no_best_of() -> None:
    members = {"ref": {"backend": "plan_reference", "role": "reference", "best_of": {"n": 2}}}
    with pytest.raises(
        Exception, match="'ref': a reference draws the annotation's plan; it takes no best_of"
    ):
        BackendSetDataset(kind="generator", members=members).load()


class GatedPainter(SeedPainter):
    """Counts the windows it is given; from its second on it waits (at most 10 s) until the selector has
    scored a candidate: a best-of-N that drew every candidate before scoring any would keep it waiting."""

    def __init__(self, selector: GreySelector) -> None:
        super().__init__()
        self.selector, self.calls, self.waited_for_nothing = selector, [], True

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.calls.append(len(requests))
        if len(self.calls) > 1:
            deadline = time.monotonic() + 10
            while not self.selector.prompts and time.monotonic() < deadline:
                time.sleep(0.01)
            self.waited_for_nothing &= bool(self.selector.prompts)
        return super().generate(requests)


def test_candidates_are_scored_as_they_are_drawn_not_after_every_draw() -> None:
    selector = GreySelector()
    painter = GatedPainter(selector)
    generator = BestOfNGenerator(painter, selector, BestOfSettings(n=2))
    requests = [GenerationRequest(sample_id=f"s{n}", prompt=PROMPT, seed=2 * n + 3) for n in range(4)]
    seen: dict[int, GenerationResult] = {}
    generator.stream(requests, seen.__setitem__, window=2)  # candidates (3, 4) ... (9, 10): grey levels
    assert painter.waited_for_nothing and len(painter.calls) >= 4 and max(painter.calls) <= 2
    assert len(selector.prompts) == 8
    assert [seen[n].meta["best_of"]["chosen_seed"] for n in range(4)] == [4, 6, 8, 10]


def test_it_takes_the_wrapped_generators_role_and_counts_and_refuses_requests_that_wait() -> None:
    painter = SeedPainter()
    painter.role, painter.stats = "reference", {"cache_hits": 3.0}
    generator = BestOfNGenerator(painter, GreySelector(), BestOfSettings(n=2))
    assert generator.role == "reference" and generator.stats == {"cache_hits": 3.0}
    request = GenerationRequest(sample_id="s1", prompt=PROMPT, seed=1)
    with pytest.raises(RuntimeError, match="a best-of-N generator's requests cannot wait for answers"):
        generator.stream(iter([request, PENDING]), lambda position, result: None)
