"""Methods prose of the embedded sample, written the way authors describe a protocol.

A process figure's steps are narrated edge by edge, each in a phrasing the seeded rng picks: stated in
one sentence in several active and passive forms ("X is followed by Y", "Y is preceded by X"), implied
across two sentences (a sentence naming X, then "Y is then carried out."), or not written at all.
Sentences about reagents, replicates or instruments state no relation. The text is written for readers,
not for a parser: the figure's truth file, never this prose, says which edges the figure draws.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from sciir.sample.captions import in_sentence, join_words

# One sentence naming both ends: {a} is the source, {b} the target ({A}/{B}: at a sentence start).
STATED_EDGE = (
    "{A} is followed by {b}.",
    "{A} precedes {b}.",
    "{A} feeds into {b}.",
    "{B} follows {a}.",
    "{B} is preceded by {a}.",
    "After {a}, the material goes on to {b}.",
    "{B} is carried out once {a} is complete.",
    "From {a}, the samples pass to {b}.",
)
# A sentence naming only the target, after one that named the source last.
IMPLIED_EDGE = (
    "{B} comes next.",
    "This is followed by {b}.",
    "{B} is then carried out.",
    "The next step is {b}.",
)
OPENING = (
    "The protocol begins with {a}.",
    "{A} is carried out first.",
    "Work starts with {a}.",
)
# Sentences that state no relation; none uses a step name.
CONTEXT = (
    "All reagents were of analytical grade and used as received.",
    "Each run was repeated three times on separate days.",
    "Instruments were calibrated before every session.",
    "Timings and temperatures were recorded for every run.",
    "Consumables came from a single manufacturing lot.",
    "Operators followed the written standard operating procedure.",
)
FIGURE_MENTION = (
    "Figure {n} shows {labels}.",
    "Figure {n} depicts {labels}.",
    "The labels of Figure {n} read {labels}.",
)
PROCESS_INTRODUCTION = (
    "Figure {n} outlines {title}.",
    "The {title} protocol is summarised in Figure {n}.",
    "Figure {n} gives an overview of {title}.",
)
METHODS_OPENING = "Figures were drawn programmatically with graphviz, RDKit, schemdraw and matplotlib."

# How often an edge goes unwritten, is implied when it can be, and a context sentence follows a sentence.
UNSTATED_SHARE = 0.15
IMPLIED_SHARE = 0.4
CONTEXT_SHARE = 0.25
OPENING_SHARE = 0.5


@dataclass(frozen=True)
class PanelProse:
    """What the methods text may say about one panel: its kind, title, drawn labels and drawn edges."""

    kind: str
    title: str
    required_text: Sequence[str]
    relations: Sequence[Sequence[str]]


def at_start(text: str) -> str:
    """``text`` with its first letter capitalised (for a sentence that opens with it)."""
    return text[:1].upper() + text[1:]


def fill(template: str, a: str = "", b: str = "") -> str:
    """``template`` with source ``a`` and target ``b`` written in place, lowered or capitalised as placed."""
    return template.format(A=at_start(a), a=in_sentence(a), B=at_start(b), b=in_sentence(b))


def edge_narrative(relations: Sequence[Sequence[str]], rng: random.Random) -> list[str]:
    """Sentences narrating a workflow's edges in order, each stated, implied or left out by ``rng``."""
    sentences: list[str] = []
    last_named: str | None = None
    if relations and rng.random() < OPENING_SHARE:
        last_named = relations[0][0]
        sentences.append(fill(rng.choice(OPENING), a=last_named))
    for source, target in relations:
        if rng.random() < UNSTATED_SHARE:
            continue
        if source == last_named and rng.random() < IMPLIED_SHARE:
            sentences.append(fill(rng.choice(IMPLIED_EDGE), b=target))
        else:
            sentences.append(fill(rng.choice(STATED_EDGE), a=source, b=target))
        last_named = target
        if rng.random() < CONTEXT_SHARE:
            sentences.append(rng.choice(CONTEXT))
            last_named = None  # a context sentence breaks the thread an implied step would follow
    return sentences


def panel_sentences(number: str, panel: PanelProse, rng: random.Random) -> list[str]:
    """What the methods say about one panel ("Figure ``number``"): a workflow narrated, any other drawing
    by its labels."""
    if panel.relations:  # a workflow, a reaction scheme or the stages of a measurement
        introduction = rng.choice(PROCESS_INTRODUCTION).format(n=number, title=in_sentence(panel.title))
        return [at_start(introduction), *edge_narrative(panel.relations, rng)]
    if not panel.required_text:
        return []
    labels = join_words(list(panel.required_text))
    return [rng.choice(FIGURE_MENTION).format(n=number, labels=labels)]


def methods_text(figures: Sequence[Sequence[PanelProse]], rng: random.Random) -> str:
    """The methods section of an article whose figures (numbered from 1) hold these panels."""
    sentences = [METHODS_OPENING]
    for number, panels in enumerate(figures, start=1):
        for index, panel in enumerate(panels):
            reference = f"{number}{chr(ord('a') + index)}" if len(panels) > 1 else str(number)
            sentences.extend(panel_sentences(reference, panel, rng))
    return " ".join(sentences)
