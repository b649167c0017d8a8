"""Panels drawing two or three tracks: deterministic, truthful about what each track's drawing shows."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sciir.sample.circuit_topics import CIRCUIT_TOPICS
from sciir.sample.combined import side_by_side, stack
from sciir.sample.law_topics import LAW_TOPICS
from sciir.sample.panel_kinds import NATIVE_TRACKS, render_panel
from sciir.sample.reaction_topics import REACTION_TOPICS

COMBINED = [
    ("circuit_law", CIRCUIT_TOPICS[0]),
    ("reaction", REACTION_TOPICS[0]),
    ("rate_reaction", REACTION_TOPICS[1]),
    ("staged_plot", LAW_TOPICS[4]),
]


@pytest.mark.parametrize(("kind", "topic"), COMBINED, ids=[kind for kind, _ in COMBINED])
def test_a_combined_panel_shows_each_of_its_tracks_and_says_how(kind: str, topic) -> None:
    panel = render_panel(kind, topic, random.Random(5))
    pixels = np.asarray(panel.image.convert("L"))
    border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    assert (border == 255).all() and (pixels < 128).any()
    assert panel.truth.kind == kind and panel.truth.title == topic.title
    assert set(panel.truth.shows) == set(NATIVE_TRACKS[kind]) and len(NATIVE_TRACKS[kind]) >= 2
    assert all(panel.truth.shows.values())
    assert set(panel.truth.required_text) <= set(panel.truth.labels)
    again = render_panel(kind, topic, random.Random(5))
    assert np.array_equal(pixels, np.asarray(again.image.convert("L")))


def test_a_reaction_draws_an_arrow_from_the_reactant_to_the_product() -> None:
    topic = REACTION_TOPICS[2]
    truth = render_panel("reaction", topic, random.Random(0)).truth
    assert truth.relations == [[topic.reactant, topic.product]]
    assert truth.shows["process"] == [f"arrow from {topic.reactant} to {topic.product}"]
    assert truth.shows["entity"] == [
        f"structural drawing of {name}" for name in (topic.reactant, topic.product)
    ]
    assert topic.rate_law not in truth.required_text  # only the rate_reaction writes it
    rated = render_panel("rate_reaction", topic, random.Random(0)).truth
    assert topic.rate_law in rated.required_text
    assert rated.shows["law"] == [f"written equation {topic.rate_law}"]


def test_a_staged_plot_joins_its_stages_in_order_and_keeps_the_plot_truth() -> None:
    topic = LAW_TOPICS[0]
    truth = render_panel("staged_plot", topic, random.Random(0)).truth
    assert truth.relations == [list(pair) for pair in zip(topic.stages, topic.stages[1:], strict=False)]
    assert truth.required_text == [topic.title, topic.x_label, topic.y_label, topic.equation, *topic.stages]
    assert truth.shows["law"][0] == f"written equation {topic.equation}"


def test_parts_are_stacked_or_set_side_by_side_a_narrow_gap_apart() -> None:
    from PIL import Image

    black = Image.new("RGB", (10, 20), (0, 0, 0))
    wide = Image.new("RGB", (30, 5), (0, 0, 0))
    column = np.asarray(stack([black, wide], gap=4).convert("L"))
    assert column.shape == (29, 30)
    assert (column[20:24] == 255).all() and (column[24:] == 0).all()
    row = np.asarray(side_by_side([black, wide], gap=4).convert("L"))
    assert row.shape == (20, 44)
    assert (row[:, 10:14] == 255).all() and (row[:, :10] == 0).all()


@pytest.mark.parametrize(("kind", "topic"), COMBINED, ids=[kind for kind, _ in COMBINED])
def test_curation_keeps_a_combined_panel_whole(kind: str, topic) -> None:
    """Its parts sit closer than curation's gutter (the stages beside a plot were once cut off)."""
    from sciir.figures.panel_split import SplitSettings, split_panels
    from sciir.sample.compose import layout_figure

    figure, _ = layout_figure([render_panel(kind, topic, random.Random(1)).image], random.Random(0))
    assert len(split_panels(figure, SplitSettings())) == 1
