"""The programmatic baseline draws from its prompt text alone: the quoted labels and the arrows the
prompt states, readably; it can never read a plan; its faulty variant plants visible faults."""

from __future__ import annotations

import io

import pytest
from PIL import Image
from pydantic import ValidationError

from sciir.backends.base import GenerationRequest, GenerationResult, PlanRequest
from sciir.backends.plan_drawing import plan_to_dot
from sciir.backends.plan_faults import DrawingPlan
from sciir.backends.programmatic import ProgrammaticGenerator, prompt_plan
from sciir.backends.registry import build_backend
from sciir.testing.drawings import ocr_words, visible_edges

# An instruction-following (Sci-RCoT) prompt: it quotes its labels and narrates its arrows.
PROCESS_PROMPT = (
    'Style: flow diagram, white background. Required text: "Sample", "Centrifuge", "Supernatant", '
    '"Pellet". Topology: arrows connect Sample -> Centrifuge; Centrifuge -> Supernatant; '
    "Centrifuge -> Pellet. Process: Sample leads to Centrifuge, then Centrifuge leads to Supernatant."
)
PROCESS_LABELS = ["Sample", "Centrifuge", "Supernatant", "Pellet"]
PROCESS_EDGES = [["Sample", "Centrifuge"], ["Centrifuge", "Supernatant"], ["Centrifuge", "Pellet"]]
# An intrinsic-reasoning (abstract) prompt: terms only, no connection stated.
ABSTRACT_PROMPT = (
    'A cell diagram showing "Mitochondria", "Nucleus", "Ribosome", "Membrane", "Cytoplasm"; '
    "render every quoted label with exactly this spelling."
)
FAULTS = {"misspell_labels": 1, "reverse_edges": 1, "drop_nodes": 1, "seed": 0}


def request(prompt: str, sample_id: str = "fig-1-p0", **size: int) -> GenerationRequest:
    return GenerationRequest(sample_id=sample_id, prompt=prompt, **size)


def draw(generator: ProgrammaticGenerator, prompt: str, **size: int) -> GenerationResult:
    (result,) = generator.generate([request(prompt, **size)])
    return result


@pytest.fixture(scope="module")
def process_drawing() -> GenerationResult:
    return draw(ProgrammaticGenerator(), PROCESS_PROMPT)


def test_every_quoted_label_is_drawn_readably_on_a_white_canvas(process_drawing: GenerationResult) -> None:
    assert process_drawing.ok
    assert process_drawing.meta["backend"] == "programmatic"
    assert process_drawing.meta["drawn_labels"] == PROCESS_LABELS
    assert process_drawing.meta["planted_faults"] == []
    assert set(PROCESS_LABELS) <= ocr_words(process_drawing.image)
    image = Image.open(io.BytesIO(process_drawing.image))
    assert image.size == (1024, 1024) and image.mode == "RGB"
    assert image.getpixel((0, 0)) == image.getpixel((1023, 1023)) == (255, 255, 255)


def test_one_arrow_per_edge_the_prompt_states(process_drawing: GenerationResult) -> None:
    assert process_drawing.meta["drawn_edges"] == PROCESS_EDGES  # "leads to" repeats are not doubled
    dot = plan_to_dot(prompt_plan(PROCESS_PROMPT), font_size=28)
    laid_out = [
        line for line in dot.pipe(format="plain", encoding="utf-8").splitlines() if line.startswith("edge")
    ]
    assert len(visible_edges(dot.source)) == len(laid_out) == len(PROCESS_EDGES)


def test_an_abstract_prompt_that_states_no_connection_gives_labels_without_arrows() -> None:
    result = draw(ProgrammaticGenerator(), ABSTRACT_PROMPT, width=768, height=512)
    labels = ["Mitochondria", "Nucleus", "Ribosome", "Membrane", "Cytoplasm"]
    assert result.ok and result.meta["drawn_labels"] == labels and result.meta["drawn_edges"] == []
    assert Image.open(io.BytesIO(result.image)).size == (768, 512)
    assert set(labels) <= ocr_words(result.image)
    assert visible_edges(plan_to_dot(prompt_plan(ABSTRACT_PROMPT), font_size=28).source) == []


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ('"A" -> "B" -> "C"', DrawingPlan(("A", "B", "C"), (("A", "B"), ("B", "C")))),  # a chain
        ('"Heat" flows into "Sink"; "Sink" => "Air"', DrawingPlan(("Heat", "Sink", "Air"), (("Heat", "Sink"), ("Sink", "Air")))),
        ("\u201cCa\u201d \u2192 \u201cCO2\u201d", DrawingPlan(("Ca", "CO2"), (("Ca", "CO2"),))),  # curly quotes
        ('"A -> B" and "C"', DrawingPlan(("A -> B", "C"))),  # an arrow inside a quoted label is text
        ('"Ion" and "Precipitation": Ion -> Precipitation', DrawingPlan(("Ion", "Precipitation"), (("Ion", "Precipitation"),))),
        ('"ion" and "Ion": Precipitation -> ion', DrawingPlan(("ion", "Ion"))),  # only whole words match a label
        ('"Sample prep" and "Sample": Sample prep -> Sample', DrawingPlan(("Sample prep", "Sample"), (("Sample prep", "Sample"),))),
        ('"Heat" flows to the sink', DrawingPlan(("Heat",))),  # an unquoted end is not a label
        ('"  " and "Cell"', DrawingPlan(("Cell",))),
    ],
)  # fmt: skip
def test_prompt_plan_reads_quoted_labels_and_stated_arrows(prompt: str, expected: DrawingPlan) -> None:
    assert prompt_plan(prompt) == expected


def test_the_drawing_depends_on_the_prompt_text_only() -> None:
    generator = ProgrammaticGenerator()
    first, same_text, other_text = generator.generate(
        [
            GenerationRequest(sample_id="a-p0", prompt=PROCESS_PROMPT, seed=0),
            GenerationRequest(sample_id="b-p0", prompt=PROCESS_PROMPT, seed=99),
            GenerationRequest(sample_id="c-p0", prompt=ABSTRACT_PROMPT, seed=0),
        ]
    )
    assert first.image == same_text.image and first.meta == same_text.meta
    assert other_text.image != first.image

    # A contestant request cannot carry a plan at all ...
    with pytest.raises(ValidationError, match="plan"):
        GenerationRequest(sample_id="a-p0", prompt=PROCESS_PROMPT, plan={"labels": ["Leak"]})
    # ... and a plan handed over anyway (a reference's request) is never read.
    leaked = PlanRequest(
        sample_id="a-p0",
        prompt=PROCESS_PROMPT,
        plan={"labels": ["Leak", "Answer"], "edges": [["Leak", "Answer"]]},
    )
    (with_plan,) = generator.generate([leaked])
    assert with_plan.image == first.image and with_plan.meta == first.meta


def test_faulty_variant_plants_visible_faults_in_what_it_parsed_deterministically() -> None:
    result = draw(ProgrammaticGenerator(faults=FAULTS), PROCESS_PROMPT)
    again = draw(ProgrammaticGenerator(faults=FAULTS), PROCESS_PROMPT)
    assert result.ok and again.image == result.image and again.meta == result.meta
    faults = {fault["kind"]: fault for fault in result.meta["planted_faults"]}
    assert sorted(faults) == ["drop_node", "misspell", "reverse_edge"]

    words = ocr_words(result.image)
    misspelled = faults["misspell"]
    assert misspelled["label"] in PROCESS_LABELS
    assert misspelled["label"] not in words and misspelled["label"] not in result.meta["drawn_labels"]
    assert misspelled["drawn"] in words and misspelled["drawn"] in result.meta["drawn_labels"]
    assert faults["drop_node"]["label"] not in words | set(result.meta["drawn_labels"])
    src, dst = faults["reverse_edge"]["edge"]
    assert [src, dst] in PROCESS_EDGES
    assert [dst, src] in result.meta["drawn_edges"] and [src, dst] not in result.meta["drawn_edges"]


def test_faulty_variant_on_an_abstract_prompt_has_no_edge_to_reverse() -> None:
    result = draw(ProgrammaticGenerator(faults=FAULTS), ABSTRACT_PROMPT)
    assert result.ok and result.meta["drawn_edges"] == []
    assert sorted(fault["kind"] for fault in result.meta["planted_faults"]) == ["drop_node", "misspell"]


def test_faulty_variant_is_registered_under_the_same_name_with_its_own_identity() -> None:
    faulty = build_backend("generator", "programmatic", faults=FAULTS)
    clean = build_backend("generator", "programmatic")
    assert isinstance(faulty, ProgrammaticGenerator) and clean.role == faulty.role == "contestant"
    assert not clean.reads_annotation
    assert faulty.identity_hash() != clean.identity_hash()  # the cache never mixes their images


def test_a_prompt_that_quotes_nothing_fails_alone_in_its_batch() -> None:
    results = ProgrammaticGenerator().generate(
        [request("Heat flows to the sink.", "bad-p0"), request('A diagram of "Cell".', "good-p0")]
    )
    assert [r.sample_id for r in results] == ["bad-p0", "good-p0"]
    assert [r.ok for r in results] == [False, True]
    assert results[0].image is None
    assert results[0].failure == (
        "prompt for sample bad-p0 quotes no label to draw; the programmatic baseline draws only the "
        "quoted strings of its prompt"
    )


def test_missing_graphviz_is_a_failure_with_its_reason(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` executable on this PATH
    result = draw(ProgrammaticGenerator(), PROCESS_PROMPT)
    assert not result.ok
    assert result.failure.startswith("graphviz could not draw the plan for sample fig-1-p0:")
    assert "dot" in result.failure
