"""Per-track visual evidence read from rendered sample panels: every track a panel draws, and no other."""

from __future__ import annotations

import io
import random

import pytest
from PIL import Image

from sciir.backends.readers.diagram import drawn_relations, grey_levels, read_diagram
from sciir.backends.readers.tesseract import read_text
from sciir.sample.circuit_topics import CIRCUIT_TOPICS
from sciir.sample.figures import encode_png
from sciir.sample.law_topics import LAW_TOPICS
from sciir.sample.molecule_topics import MOLECULE_TOPICS
from sciir.sample.panel_kinds import render_panel
from sciir.sample.process_topics import PROCESS_TOPICS
from sciir.sample.reaction_topics import REACTION_TOPICS
from sciir.sample.renderers import molecule_body
from sciir.tasks.reasoning import TrackSight, is_equation, plausible_labels, track_sights

PANELS = [
    ("process", PROCESS_TOPICS[2]),
    ("molecule", MOLECULE_TOPICS[4]),
    ("circuit", CIRCUIT_TOPICS[4]),
    ("plot", LAW_TOPICS[0]),
    ("circuit_law", CIRCUIT_TOPICS[3]),
    ("reaction", REACTION_TOPICS[0]),
    ("rate_reaction", REACTION_TOPICS[2]),
    ("staged_plot", LAW_TOPICS[4]),
]


def _sights(png: bytes) -> dict[str, TrackSight]:
    reading = read_text(png)
    labels = plausible_labels(reading, 60)
    diagram = read_diagram(png, reading)
    return track_sights(grey_levels(png), reading, diagram, labels, drawn_relations(diagram, labels))


def _shown(sights: dict[str, TrackSight]) -> set[str]:
    return {track for track, sight in sights.items() if sight.seen}


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "topic"), PANELS, ids=[kind for kind, _ in PANELS])
def test_the_tracks_seen_are_the_tracks_the_panel_draws(kind: str, topic) -> None:
    panel = render_panel(kind, topic, random.Random(2))
    sights = _sights(encode_png(panel.image))
    assert _shown(sights) == set(panel.truth.shows)
    for track, sight in sights.items():
        assert bool(sight.terms) == bool(sight.visualizations), track  # a track is all or nothing


@pytest.mark.slow
def test_what_each_track_is_seen_by() -> None:
    topic = REACTION_TOPICS[0]
    sights = _sights(encode_png(render_panel("rate_reaction", topic, random.Random(0)).image))
    assert sights["process"].visualizations == [f"arrow from {topic.reactant} to {topic.product}"]
    assert sights["process"].terms == [topic.reactant, topic.product]
    assert sights["law"].visualizations == [f"written equation {topic.rate_law}"]
    assert all(view.startswith("structural drawing labelled ") for view in sights["entity"].visualizations)
    plot = LAW_TOPICS[0]
    law = _sights(encode_png(render_panel("plot", plot, random.Random(0)).image))["law"]
    assert f"plotted curve of {plot.y_label} against {plot.x_label}" in law.visualizations
    assert {plot.x_label, plot.y_label} <= set(law.terms)


def test_an_unlabelled_drawing_is_not_named_so_no_track_is_seen() -> None:
    benzene = MOLECULE_TOPICS[3]
    assert benzene.title == "Benzene"
    drawing = molecule_body(benzene.title, benzene.smiles, random.Random(0)).image
    # A ring of carbons has no atom labels: without its title nothing names the drawing.
    assert _shown(_sights(encode_png(drawing))) == set()
    titled = render_panel("molecule", benzene, random.Random(0)).image
    assert _sights(encode_png(titled))["entity"].terms == ["Benzene"]


def test_a_blank_image_shows_nothing() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (300, 200), "white").save(buffer, format="PNG")
    assert all(sight == TrackSight() for sight in _sights(buffer.getvalue()).values())


def test_equations_are_labels_with_an_equals_or_proportionality_sign() -> None:
    assert is_equation("V = I R") and is_equation("F \u221d 1/r^2")
    assert not is_equation("Voltage (V)") and not is_equation("R1")
