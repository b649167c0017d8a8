"""Which quoted strings a free-text requirement asks to be written (``sciir.tasks.required_text``), tested on
requirements written by others: TIFA's prompts (../shared/external/human_ratings/tifa), DrawBench's and
PartiPrompts' text-rendering prompts, DSG-style questions, and statements in the layout of a public
diagram benchmark (issue 24's examples), with their apostrophes and scare quotes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sciir.tasks.required_text import MAX_CHARS, required_text

TIFA = Path(__file__).resolve().parents[2] / ".." / "shared" / "external" / "human_ratings" / "tifa"

# (requirement, the strings it asks to be written, where it comes from)
CASES = [
    # TIFA v1.0 prompts (human_annotations.json): quoted words, and apostrophes that must open nothing.
    ("the word 'START' on a blue t-shirt", ["START"], "TIFA"),
    ("the word 'START' written in chalk on a sidewalk", ["START"], "TIFA"),
    ("a pumpkin on a man's head", [], "TIFA"),
    ("Photo of a mega Lego space station inside a kid's bedroom.", [], "TIFA"),
    ("A teddy bear under some furniture that appears to be turned on it's side.", [], "TIFA"),
    (
        "Portrait of a gecko wearing a train conductor’s hat and holding a flag that has a yin-yang symbol "
        "on it. Comic.",
        [],
        "TIFA",
    ),
    # DrawBench (Imagen): its text prompts in single quotes, its other prompts' apostrophes.
    ("A storefront with 'Hello World' written on it.", ["Hello World"], "DrawBench"),
    ("A sign that says 'Google Research Pizza Cafe'.", ["Google Research Pizza Cafe"], "DrawBench"),
    ("New York Skyline with 'NeurIPS' written with fireworks on the sky.", ["NeurIPS"], "DrawBench"),
    ("A bridge connecting Europe and North America on the Atlantic Ocean, bird's eye view.", [], "DrawBench"),
    ("Photo of an athlete cat explaining it's latest scandal at a press conference.", [], "DrawBench"),
    ("lhe strsingsj' vibration ie stopped by damperds when the keys re released", [], "DrawBench"),
    # PartiPrompts and DeepFloyd IF's example: double quotes.
    (
        'A green sign that says "Very Deep Learning" and is at the edge of the Grand Canyon.',
        ["Very Deep Learning"],
        "PartiPrompts",
    ),
    (
        'The saying "BE EXCELLENT TO EACH OTHER" written on a red brick wall with a graffiti image of a '
        "green alien wearing a tuxedo.",
        ["BE EXCELLENT TO EACH OTHER"],
        "PartiPrompts",
    ),
    (
        "a photo of a kangaroo wearing an orange hoodie and blue sunglasses standing in front of the eiffel "
        'tower holding a sign that says "very deep learning"',
        ["very deep learning"],
        "DeepFloyd IF",
    ),
    # DSG-style questions (one atomic yes/no question each).
    ('Is the word "START" written on the sidewalk?', ["START"], "DSG-style"),
    ("Does the sign say 'Hello World'?", ["Hello World"], "DSG-style"),
    ("Is there a sign?", [], "DSG-style"),
    ("Is the t-shirt's colour blue?", [], "DSG-style"),
    # A diagram benchmark's statements (issue 24's layout: prompt `question`, statements `elements`).
    ("The point is labelled 'A'", ["A"], "diagram statements"),
    ('The title reads "Energy diagram"', ["Energy diagram"], "diagram statements"),
    ("The axis is labelled “Time (s)”", ["Time (s)"], "diagram statements"),
    ("The vertices are labelled 'A', 'B' and 'C'.", ["A", "B", "C"], "diagram statements"),
    (
        'The boxes are titled "Input", "Hidden" and "Output".',
        ["Input", "Hidden", "Output"],
        "diagram statements",
    ),
    ("Newton's second law is written as 'F = ma' beside the block.", ["F = ma"], "diagram statements"),
    ("The graph's title is 'Velocity vs time'.", ["Velocity vs time"], "diagram statements"),
    ("Its label reads ‘ATP synthase’.", ["ATP synthase"], "diagram statements"),
    ('The title reads "Energy diagram."', ["Energy diagram"], "diagram statements"),
    ("The sign says 'Don't Walk'.", ["Don't Walk"], "diagram statements"),
    ('A node named "Encoder" feeds a node named "Decoder".', ["Encoder", "Decoder"], "diagram statements"),
    ('The bar labelled "n = 12" is the tallest.', ["n = 12"], "diagram statements"),
    ("The students' answers are labelled 'Yes' and 'No'.", ["Yes", "No"], "diagram statements"),
    ("The point labelled 'P' and the point 'Q' lie on the circle.", ["P"], "diagram statements"),
    ("The cell's nucleus is drawn at the centre.", [], "diagram statements"),
    ("The hypotenuse joins 'A' and 'B'.", [], "diagram statements"),
    ("Arrows point from 'Input' to 'Output'.", [], "diagram statements"),
    # Scare quotes and names of ideas: quoted, but not text to draw.
    ('The so-called "black box" approach is shown as a grey box.', [], "scare quotes"),
    ('The "wild-type" cells are labelled in green.', [], "scare quotes"),
    ('The enzyme, often called the cell\'s "gatekeeper", sits in the membrane.', [], "scare quotes"),
    ('Mitochondria are shown as the "powerhouse" of the cell.', [], "scare quotes"),
    ('In other words, the "engine" of the cell is drawn.', [], "scare quotes"),
    # Negated or optional text, empty quotes, a quoted sentence, no letter, an inch mark.
    ("The point is not labelled 'A'.", [], "negation"),
    ('No box is labelled "Error".', [], "negation"),
    ("The resistor is labelled 'R1' or 'R'.", [], "alternatives"),
    ("The axis isn't labelled 'x'.", [], "negation"),
    ('The box says "".', [], "empty quotes"),
    (
        'The caption reads "This figure shows the full pathway from glucose uptake through glycolysis".',
        [],
        "a quoted sentence",
    ),
    ("The arrow is labelled '→'.", [], "no letter or digit"),
    ('A 5" screen is labelled "TV".', ["TV"], "inch mark"),
]


@pytest.mark.parametrize(("requirement", "expected", "source"), CASES, ids=[c[0][:40] for c in CASES])
def test_the_strings_a_requirement_asks_to_be_written(requirement, expected, source):
    assert required_text(requirement) == expected, source


def test_the_table_holds_real_world_cases_of_each_kind():
    assert len(CASES) >= 30
    assert sum(1 for _, expected, _ in CASES if expected) >= 15
    assert sum(1 for requirement, expected, _ in CASES if not expected and "'s" in requirement) >= 5


def test_a_string_asked_twice_comes_once_and_a_long_one_not_at_all():
    assert required_text("The label reads 'A', and the second label reads 'A' too.") == ["A"]
    assert required_text(f"The title reads '{'x' * (MAX_CHARS + 1)}'.") == []


@pytest.mark.skipif(not TIFA.is_dir(), reason="../shared/external/human_ratings/tifa not present")
def test_of_tifa_s_160_prompts_only_the_two_that_quote_a_word_ask_for_text():
    prompts = {entry["text"] for entry in json.loads((TIFA / "human_annotations.json").read_text()).values()}
    asking = {prompt: required_text(prompt) for prompt in prompts if required_text(prompt)}
    assert len(prompts) == 160
    assert asking == {
        "the word 'START' on a blue t-shirt": ["START"],
        "the word 'START' written in chalk on a sidewalk": ["START"],
    }
    with_apostrophes = [prompt for prompt in prompts if "'" in prompt or "’" in prompt]
    assert len(with_apostrophes) >= 6  # man's, kid's, it's, conductor’s ... open no quote
