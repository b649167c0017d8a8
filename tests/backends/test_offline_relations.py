"""The offline annotator's relations: arrows read in the image first, explicit text only where it cannot tell."""

from __future__ import annotations

import pytest

from sciir.backends.readers.diagram import Shape, drawn_relations, read_diagram, shape_label
from sciir.backends.readers.tesseract import read_text
from sciir.tasks.relations import figure_relations, stated_relations
from sciir.testing.drawings import draw_boxes

LABELS = ["Glucose", "Pyruvate", "Lactate"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Glucose leads to Pyruvate.", [("Glucose", "Pyruvate")]),
        (
            "From glucose to pyruvate; Pyruvate -> Lactate.",
            [("Glucose", "Pyruvate"), ("Pyruvate", "Lactate")],
        ),
        ("Glucose is followed by pyruvate.", [("Glucose", "Pyruvate")]),
        ("Glucose precedes pyruvate, which feeds into lactate.", [("Glucose", "Pyruvate")]),
        ("Pyruvate feeds into lactate.", [("Pyruvate", "Lactate")]),
        ("Pyruvate follows glucose.", [("Glucose", "Pyruvate")]),  # the first named is the target
        ("Lactate is preceded by pyruvate.", [("Pyruvate", "Lactate")]),
        # Implied across sentences, or with words between the labels and the cue: nothing is guessed.
        ("The protocol begins with glucose. Pyruvate is then carried out.", []),
        ("After glucose, the material goes on to pyruvate.", []),
        ("ATP leads to Glucose. Glucose leads to Glucose.", []),  # an end not visible; a loop on itself
    ],
)
def test_text_gives_only_explicit_directed_pairs_of_visible_labels(text: str, expected: list) -> None:
    assert stated_relations(text, LABELS) == expected


_draw = draw_boxes


def _relations(png: bytes, labels: list[str], text: str = "") -> list[tuple[str, str]]:
    return figure_relations(read_diagram(png, read_text(png)), labels, text)


@pytest.fixture(scope="module")
def chain() -> bytes:
    """Glucose -> Pyruvate -> Lactate, and "Ethanol" written outside any box."""
    return _draw(LABELS, [(0, 1), (1, 2)], free=["Ethanol"])


def test_arrows_give_directed_pairs_in_drawing_order(chain: bytes) -> None:
    assert drawn_relations(read_diagram(chain, read_text(chain)), [*LABELS, "Ethanol"]) == [
        ("Glucose", "Pyruvate"),
        ("Pyruvate", "Lactate"),
    ]


def test_text_the_image_contradicts_adds_nothing(chain: bytes) -> None:
    # Reversed against an arrow, and a pair of located boxes that no stroke joins.
    text = "Pyruvate precedes glucose. Glucose feeds into lactate."
    assert _relations(chain, LABELS, text) == [("Glucose", "Pyruvate"), ("Pyruvate", "Lactate")]


def test_text_is_used_where_an_end_is_outside_any_shape(chain: bytes) -> None:
    relations = _relations(chain, [*LABELS, "Ethanol"], "Lactate is followed by ethanol.")
    assert relations[-1] == ("Lactate", "Ethanol")


def test_lines_without_arrowheads_give_no_direction_unless_the_text_states_one() -> None:
    png = _draw(["Glucose", "Pyruvate"], [(0, 1)], arrowheads=False)
    assert _relations(png, ["Glucose", "Pyruvate"]) == []
    assert _relations(png, ["Glucose", "Pyruvate"], "Pyruvate follows glucose.") == [("Glucose", "Pyruvate")]


def _shape(text: str) -> Shape:
    return Shape(index=0, box=(0, 0, 20, 10), area=200, text=text, word_area=100.0)


def test_a_shape_holds_the_label_it_spells_or_the_one_label_among_stray_marks() -> None:
    labels = ["Crystal growth", "Harvesting", "Crystal"]
    assert shape_label(_shape("crystal  growth"), labels) == "Crystal growth"
    assert shape_label(_shape("MO Harvesting"), labels) == "Harvesting"  # an arrowhead read as "MO"
    assert shape_label(_shape("<t+ Crystal growth"), labels) == "Crystal growth"  # the longer label wins
    assert shape_label(_shape("Harvesting Crystal"), labels) is None  # two labels alike: ambiguous
    assert shape_label(_shape("Elution"), labels) is None
