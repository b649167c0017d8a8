"""Panel renderers: white background, titles, truth that matches what is drawn."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sciir.sample.circuit_topics import CIRCUIT_TOPICS
from sciir.sample.drawing import add_title, crop_to_ink, render_icon
from sciir.sample.law_topics import LAW_TOPICS
from sciir.sample.molecule_topics import MOLECULE_TOPICS
from sciir.sample.panel_kinds import render_panel
from sciir.sample.process_topics import PROCESS_TOPICS
from sciir.sample.renderers import render_molecule
from sciir.sample.topics import MoleculeTopic

ONE_OF_EACH = [
    ("process", PROCESS_TOPICS[3]),
    ("molecule", MOLECULE_TOPICS[0]),
    ("circuit", CIRCUIT_TOPICS[3]),
    ("plot", LAW_TOPICS[2]),
]


@pytest.mark.parametrize(("kind", "topic"), ONE_OF_EACH, ids=[kind for kind, _ in ONE_OF_EACH])
def test_panel_is_white_bordered_and_the_same_for_the_same_seed(kind: str, topic) -> None:
    panel = render_panel(kind, topic, random.Random(3))
    pixels = np.asarray(panel.image.convert("L"))
    border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    assert (border == 255).all()
    assert (pixels < 128).any()
    assert panel.truth.kind == kind and panel.truth.title == topic.title
    assert set(panel.truth.required_text) <= set(panel.truth.labels)
    again = render_panel(kind, topic, random.Random(3))
    assert np.array_equal(pixels, np.asarray(again.image.convert("L")))


def test_process_truth_lists_every_edge_by_label() -> None:
    topic = PROCESS_TOPICS[3]  # branching
    truth = render_panel("process", topic, random.Random(0)).truth
    assert truth.relations == [[topic.steps[a], topic.steps[b]] for a, b in topic.edges]
    assert truth.required_text == [topic.title, *topic.steps]


def test_molecule_truth_names_formula_and_atom_symbols() -> None:
    panel = render_panel("molecule", MOLECULE_TOPICS[0], random.Random(0))
    assert panel.truth.entities == ["Caffeine", "C8H10N4O2"]
    assert panel.truth.labels == ["Caffeine", "N", "O"]
    assert "(C8H10N4O2)" in panel.description


def test_unparseable_smiles_is_reported_with_the_molecule_name() -> None:
    with pytest.raises(ValueError, match="Unobtainium"):
        render_molecule(MoleculeTopic("Unobtainium", "C1CC(", {}), random.Random(0))


def test_plot_truth_records_the_tick_labels_it_drew() -> None:
    truth = render_panel("plot", LAW_TOPICS[0], random.Random(0)).truth
    ticks = truth.labels[4:]
    assert truth.labels[:4] == ["Ohmic resistor", "Current (A)", "Voltage (V)", "V = I R"]
    assert ticks and all(tick.replace(".", "").isdigit() for tick in ticks)


@pytest.mark.parametrize("topic", LAW_TOPICS, ids=[topic.title for topic in LAW_TOPICS])
def test_plot_writes_its_law_and_the_caption_says_so(topic) -> None:
    panel = render_panel("plot", topic, random.Random(0))
    assert topic.equation in panel.truth.required_text
    assert f"the equation {topic.equation}, written on the plot" in panel.description
    assert topic.law_name in panel.description


def test_add_title_puts_the_title_above_an_unchanged_body() -> None:
    body = crop_to_ink(render_panel("circuit", CIRCUIT_TOPICS[0], random.Random(0)).image)
    titled = add_title(body, "Title")
    top, left = titled.height - body.height, (titled.width - body.width) // 2
    pasted = titled.crop((left, top, left + body.width, titled.height))
    assert np.array_equal(np.asarray(pasted), np.asarray(body))
    assert (np.asarray(titled.convert("L"))[:top] < 128).any()


def test_icon_is_tiny_and_has_ink() -> None:
    icon = render_icon()
    assert icon.size == (90, 90)
    assert (np.asarray(icon.convert("L")) < 128).any()
