"""The programmatic generator draws exactly its plan, readably; its faulty variant plants visible faults."""

from __future__ import annotations

import io
import re

import pytesseract
import pytest
from PIL import Image

from sciir.backends.base import GenerationRequest, GenerationResult
from sciir.backends.programmatic import ProgrammaticGenerator, parse_plan, plan_to_dot
from sciir.backends.registry import build_backend

PROCESS = {
    "labels": ["Sample", "Centrifuge", "Supernatant", "Pellet"],
    "edges": [["Sample", "Centrifuge"], ["Centrifuge", "Supernatant"], ["Centrifuge", "Pellet"]],
}
PARTS = {"labels": ["Mitochondria", "Nucleus", "Ribosome", "Membrane", "Cytoplasm"], "edges": []}
FAULTS = {"misspell_labels": 1, "reverse_edges": 1, "drop_nodes": 1, "seed": 0}


def request(plan: dict | None, sample_id: str = "fig-1-p0", **size: int) -> GenerationRequest:
    return GenerationRequest(sample_id=sample_id, prompt="A centrifugation workflow.", plan=plan, **size)


def draw(generator: ProgrammaticGenerator, plan: dict | None, **size: int) -> GenerationResult:
    (result,) = generator.generate([request(plan, **size)])
    return result


def ocr_words(result: GenerationResult) -> set[str]:
    """Words Tesseract reads in the image; sparse-text mode suits boxes scattered on a canvas."""
    text = pytesseract.image_to_string(Image.open(io.BytesIO(result.image)), config="--psm 11")
    return set(re.findall(r"[A-Za-z]+", text))


def visible_edges(dot_source: str) -> list[str]:
    return [line for line in dot_source.splitlines() if "->" in line and "invis" not in line]


@pytest.fixture(scope="module")
def process_drawing() -> GenerationResult:
    return draw(ProgrammaticGenerator(), PROCESS)


def test_every_label_is_drawn_readably_on_a_white_canvas(process_drawing: GenerationResult) -> None:
    assert process_drawing.ok
    assert process_drawing.meta["backend"] == "programmatic"
    assert process_drawing.meta["drawn_labels"] == PROCESS["labels"]
    assert process_drawing.meta["planted_faults"] == []
    assert set(PROCESS["labels"]) <= ocr_words(process_drawing)
    image = Image.open(io.BytesIO(process_drawing.image))
    assert image.size == (1024, 1024) and image.mode == "RGB"
    assert image.getpixel((0, 0)) == image.getpixel((1023, 1023)) == (255, 255, 255)


def test_one_arrow_per_edge(process_drawing: GenerationResult) -> None:
    assert process_drawing.meta["drawn_edges"] == PROCESS["edges"]
    dot = plan_to_dot(parse_plan(request(PROCESS)), font_size=28)
    assert len(visible_edges(dot.source)) == len(PROCESS["edges"])
    laid_out = [
        line for line in dot.pipe(format="plain", encoding="utf-8").splitlines() if line.startswith("edge")
    ]
    assert len(laid_out) == len(PROCESS["edges"])


def test_labels_without_edges_are_boxes_in_reading_order_with_no_arrows() -> None:
    result = draw(ProgrammaticGenerator(), PARTS, width=768, height=512)
    assert result.ok and result.meta["drawn_edges"] == []
    assert Image.open(io.BytesIO(result.image)).size == (768, 512)
    assert set(PARTS["labels"]) <= ocr_words(result)
    assert visible_edges(plan_to_dot(parse_plan(request(PARTS)), font_size=28).source) == []


def test_edge_endpoints_missing_from_labels_are_drawn_and_text_is_taken_literally() -> None:
    plan = {"labels": ["<b>bold</b>", "a\\nb"], "edges": [["a\\nb", "Extra node"]]}
    result = draw(ProgrammaticGenerator(), plan)
    assert result.ok
    assert result.meta["drawn_labels"] == ["<b>bold</b>", "a\\nb", "Extra node"]
    source = plan_to_dot(parse_plan(request(plan)), font_size=28).source
    assert 'label="<b>bold</b>"' in source and 'label="a\\\\nb"' in source


def test_faulty_variant_plants_visible_faults_deterministically() -> None:
    result = draw(ProgrammaticGenerator(faults=FAULTS), PROCESS)
    again = draw(ProgrammaticGenerator(faults=FAULTS), PROCESS)
    assert result.ok and again.image == result.image and again.meta == result.meta
    faults = {fault["kind"]: fault for fault in result.meta["planted_faults"]}
    assert sorted(faults) == ["drop_node", "misspell", "reverse_edge"]

    words = ocr_words(result)
    misspelled = faults["misspell"]
    assert misspelled["label"] not in words and misspelled["label"] not in result.meta["drawn_labels"]
    assert misspelled["drawn"] in words and misspelled["drawn"] in result.meta["drawn_labels"]
    assert faults["drop_node"]["label"] not in words | set(result.meta["drawn_labels"])
    src, dst = faults["reverse_edge"]["edge"]
    assert [dst, src] in result.meta["drawn_edges"] and [src, dst] not in result.meta["drawn_edges"]


def test_faulty_variant_is_registered_under_the_same_name_with_its_own_identity() -> None:
    faulty = build_backend("generator", "programmatic", faults=FAULTS)
    clean = build_backend("generator", "programmatic")
    assert isinstance(faulty, ProgrammaticGenerator)
    assert faulty.identity_hash() != clean.identity_hash()  # the cache never mixes their images


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        (None, "request for sample fig-1-p0 has no plan"),
        ({"labels": [], "edges": []}, "plan for sample fig-1-p0 has no labels to draw"),
        ({"labels": ["A", "  "]}, "plan for sample fig-1-p0 has a blank label"),
        ({"labels": ["A"], "edges": [["A", "B", "C"]]}, "plan for sample fig-1-p0 is malformed (edges.0"),
    ],
)
def test_undrawable_plans_fail_explicitly(plan: dict | None, reason: str) -> None:
    result = draw(ProgrammaticGenerator(), plan)
    assert not result.ok and result.image is None
    assert result.failure.startswith(reason)


def test_a_bad_request_fails_alone_in_its_batch() -> None:
    results = ProgrammaticGenerator().generate(
        [request(None, "bad-p0"), request({"labels": ["Cell"]}, "good-p0")]
    )
    assert [r.sample_id for r in results] == ["bad-p0", "good-p0"]
    assert [r.ok for r in results] == [False, True]


def test_missing_graphviz_is_a_failure_with_its_reason(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` executable on this PATH
    result = draw(ProgrammaticGenerator(), PROCESS)
    assert not result.ok
    assert result.failure.startswith("graphviz could not draw the plan for sample fig-1-p0:")
    assert "dot" in result.failure
