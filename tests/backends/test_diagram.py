"""The diagram reader and the offline judge's layer-2 answers on diagrams drawn here by graphviz."""

from __future__ import annotations

import graphviz
import pytest

from sciir.backends.readers.diagram import read_diagram
from sciir.backends.readers.tesseract import read_text
from sciir.backends.readers.text import OcrReading
from sciir.tasks.judge import answer_items
from sciir.tasks.sight_checks import JudgeItem
from sciir.testing.drawings import draw_boxes

_draw = draw_boxes


def _answers(png: bytes, questions: dict[str, tuple[str, str, list[str]]]) -> dict[str, str | None]:
    """Verdicts by question name; each question is (kind, polarity, about)."""
    items = [
        JudgeItem(id=name, question="q", layer=2, track="process", kind=kind, polarity=polarity, about=about)
        for name, (kind, polarity, about) in questions.items()
    ]
    return {answer["id"]: answer["verdict"] for answer in answer_items(items, read_text(png), png)}


STEPS = ["Coagulation", "Sedimentation", "Filtration"]


@pytest.fixture(scope="module")
def chain() -> bytes:
    """Coagulation -> Sedimentation -> Filtration, and a caption-like label outside any box."""
    return _draw(STEPS, [(0, 1), (1, 2)], free=["Disinfection"])


def test_reader_finds_labelled_boxes_and_directed_arrows(chain: bytes) -> None:
    diagram = read_diagram(chain, read_text(chain))
    by_label = {shape.text: shape.index for shape in diagram.shapes if shape.holds_a_label}
    assert set(by_label) == set(STEPS)  # the free label is in no shape
    coag, sedi, filt = (by_label[step] for step in STEPS)
    assert sorted((sorted(s.tails), sorted(s.heads)) for s in diagram.strokes) == sorted(
        [([coag], [sedi]), ([sedi], [filt])]
    )


def test_correct_diagram_answers_yes_and_outside_labels_are_abstained_on(chain: bytes) -> None:
    verdicts = _answers(
        chain,
        {
            "entity": ("entity", "positive", ["Sedimentation"]),
            "entity lower case": ("entity", "positive", ["sedimentation"]),
            "once": ("entity", "negative", ["Sedimentation"]),
            "outside": ("entity", "positive", ["Disinfection"]),
            "outside once": ("entity", "negative", ["Disinfection"]),
            "arrow": ("relation", "positive", ["Coagulation", "Sedimentation"]),
            "not reversed": ("relation", "negative", ["Sedimentation", "Coagulation"]),
            "to the outside label": ("relation", "positive", ["Filtration", "Disinfection"]),
        },
    )
    assert verdicts == {
        "entity": "yes",
        "entity lower case": "yes",
        "once": "yes",
        "outside": None,  # read, but in no drawn shape: not a component, not proof of absence either
        "outside once": None,
        "arrow": "yes",
        "not reversed": "yes",
        "to the outside label": None,
    }


def test_reversed_arrow_is_caught_by_both_polarities() -> None:
    png = _draw(STEPS, [(1, 0), (1, 2)])
    verdicts = _answers(
        png,
        {
            "arrow": ("relation", "positive", ["Coagulation", "Sedimentation"]),
            "not reversed": ("relation", "negative", ["Sedimentation", "Coagulation"]),
            "other arrow": ("relation", "positive", ["Sedimentation", "Filtration"]),
        },
    )
    assert verdicts == {"arrow": "no", "not reversed": "no", "other arrow": "yes"}


def test_missing_arrow_and_missing_box() -> None:
    png = _draw(STEPS, [(0, 1)])
    verdicts = _answers(
        png,
        {
            "missing arrow": ("relation", "positive", ["Sedimentation", "Filtration"]),
            "no reverse of a missing arrow": ("relation", "negative", ["Filtration", "Sedimentation"]),
            "present arrow": ("relation", "positive", ["Coagulation", "Sedimentation"]),
            "missing box": ("entity", "positive", ["Chlorination"]),
            "misspelt box": ("entity", "positive", ["Filtrasion"]),  # a misspelling of a drawn label
            "arrow to a missing box": ("relation", "positive", ["Filtration", "Chlorination"]),
        },
    )
    assert verdicts == {
        "missing arrow": "no",
        "no reverse of a missing arrow": "yes",
        "present arrow": "yes",
        "missing box": "no",
        "misspelt box": None,
        "arrow to a missing box": None,
    }


def test_an_entity_drawn_twice_fails_the_negative_and_its_relations_are_abstained_on() -> None:
    png = _draw(["Pump", "Tank", "Pump"], [(0, 1), (1, 2)])
    verdicts = _answers(
        png,
        {
            "drawn": ("entity", "positive", ["Pump"]),
            "once": ("entity", "negative", ["Pump"]),
            "tank once": ("entity", "negative", ["Tank"]),
            "arrow": ("relation", "positive", ["Pump", "Tank"]),
        },
    )
    assert verdicts == {"drawn": "yes", "once": "no", "tank once": "yes", "arrow": None}


def test_a_short_label_one_glyph_off_is_abstained_on_not_denied() -> None:
    png = _draw(["R1", "Vin"], [(1, 0)])
    verdicts = _answers(
        png,
        {
            "misread": ("entity", "positive", ["Rl"]),  # an annotator's OCR read "R1" as "Rl"
            "absent": ("entity", "positive", ["Capacitor"]),
            "arrow": ("relation", "positive", ["Vin", "R1"]),
        },
    )
    assert verdicts == {"misread": None, "absent": "no", "arrow": "yes"}


def test_outlined_boxes_are_shapes_too() -> None:
    png = _draw(STEPS, [(0, 1), (2, 1)], outlined=True)
    verdicts = _answers(
        png,
        {
            "entity": ("entity", "positive", ["Filtration"]),
            "arrow": ("relation", "positive", ["Coagulation", "Sedimentation"]),
            "reversed": ("relation", "positive", ["Sedimentation", "Filtration"]),
        },
    )
    assert verdicts == {"entity": "yes", "arrow": "yes", "reversed": "no"}


def test_laws_are_judged_only_where_written() -> None:
    png = _draw(["V = I R", "Resistor"], [], free=["P = V / I"], pad=1.5)
    verdicts = _answers(
        png,
        {
            "written": ("law", "positive", ["V = I R"]),
            "spacing aside": ("law", "positive", ["V=IR"]),
            "nothing contradicts": ("law", "negative", ["V = I R"]),
            "not written": ("law", "positive", ["Energy is conserved."]),
            "contradicted": ("law", "negative", ["P = V I"]),
        },
    )
    assert verdicts == {
        "written": "yes",
        "spacing aside": "yes",
        "nothing contradicts": "yes",
        "not written": None,
        "contradicted": "no",  # the image writes P = V / I
    }


def test_nothing_is_judged_on_an_image_without_text_or_shapes() -> None:
    blank = graphviz.Digraph(graph_attr={"bgcolor": "white"}, node_attr={"shape": "point"})
    blank.node("a")
    png = blank.pipe(format="png")
    verdicts = _answers(
        png,
        {
            "entity": ("entity", "positive", ["Pump"]),
            "arrow": ("relation", "positive", ["Pump", "Tank"]),
            "law": ("law", "negative", ["V = I R"]),
        },
    )
    assert verdicts == {"entity": None, "arrow": None, "law": None}
    assert read_diagram(png, OcrReading(())).shapes == ()
