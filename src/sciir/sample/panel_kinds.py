"""The panel kinds of the embedded sample: the tracks each shows by its drawing alone, the topics it is
drawn about, and its renderer (single-track kinds: ``sciir.sample.renderers``; kinds drawing two or three
tracks: ``sciir.sample.combined``)."""

from __future__ import annotations

import random
from collections.abc import Mapping

from sciir.sample.circuit_topics import CIRCUIT_TOPICS
from sciir.sample.combined import COMBINED_RENDERERS
from sciir.sample.drawing import RenderedPanel
from sciir.sample.law_topics import LAW_TOPICS
from sciir.sample.molecule_topics import MOLECULE_TOPICS
from sciir.sample.process_topics import PROCESS_TOPICS
from sciir.sample.reaction_topics import REACTION_TOPICS
from sciir.sample.renderers import RENDERERS
from sciir.sample.topics import Topic

# Which tracks each panel kind shows by its drawing alone. The first four draw one track each; the
# others draw two or three in one panel (a circuit with its law written beside it, a reaction scheme
# of named molecules joined by an arrow, the same with its rate law written, a law plot above the
# stages of its measurement joined by arrows).
NATIVE_TRACKS: Mapping[str, tuple[str, ...]] = {
    "process": ("process",),
    "molecule": ("entity",),
    "circuit": ("entity",),
    "plot": ("law",),
    "circuit_law": ("entity", "law"),
    "reaction": ("entity", "process"),
    "rate_reaction": ("entity", "process", "law"),
    "staged_plot": ("process", "law"),
}

TOPICS_BY_KIND: Mapping[str, tuple[Topic, ...]] = {
    "process": PROCESS_TOPICS,
    "molecule": MOLECULE_TOPICS,
    "circuit": CIRCUIT_TOPICS,
    "plot": LAW_TOPICS,
    "circuit_law": CIRCUIT_TOPICS,
    "reaction": REACTION_TOPICS,
    "rate_reaction": REACTION_TOPICS,
    "staged_plot": LAW_TOPICS,
}


def render_panel(kind: str, topic: Topic, rng: random.Random) -> RenderedPanel:
    """Draw one panel of ``kind`` about ``topic``."""
    renderer = RENDERERS.get(kind) or COMBINED_RENDERERS[kind]
    return renderer(topic, rng)
