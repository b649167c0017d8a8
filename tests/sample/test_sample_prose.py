"""The embedded sample's methods prose: varied phrasings, true directions, implied steps, unstated edges."""

from __future__ import annotations

import random
import re

import pytest

from sciir.sample.prose import (
    CONTEXT,
    IMPLIED_EDGE,
    STATED_EDGE,
    PanelProse,
    at_start,
    edge_narrative,
    fill,
    in_sentence,
    methods_text,
)

STEPS = ["Sample collection", "RNA extraction", "Library preparation", "Sequencing", "Read alignment"]
CHAIN = [[STEPS[i], STEPS[i + 1]] for i in range(len(STEPS) - 1)]
BRANCHING = [["Light absorption", "Water splitting"], ["Water splitting", "Oxygen release"],
             ["Water splitting", "Electron transport"], ["Electron transport", "Sugar synthesis"]]  # fmt: skip
SEEDS = range(60)


def _stated(source: str, target: str) -> set[str]:
    """Every one-sentence statement of source -> target."""
    return {fill(template, source, target) for template in STATED_EDGE}


def _implied(target: str) -> set[str]:
    return {fill(template, b=target) for template in IMPLIED_EDGE}


def _names(sentence: str, step: str) -> bool:
    return in_sentence(step) in sentence or at_start(step) in sentence


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Sample collection", "sample collection"), ("RNA extraction", "RNA extraction"),
     ("T cell activation", "T cell activation"), ("Glycolysis", "glycolysis")],
)  # fmt: skip
def test_step_names_are_lowered_inside_a_sentence_but_acronyms_kept(name: str, expected: str) -> None:
    assert in_sentence(name) == expected


def test_same_rng_state_gives_the_same_narrative() -> None:
    assert edge_narrative(CHAIN, random.Random(3)) == edge_narrative(CHAIN, random.Random(3))


@pytest.mark.parametrize("relations", [CHAIN, BRANCHING])
def test_no_sentence_states_a_reversed_edge(relations: list[list[str]]) -> None:
    drawn = {tuple(edge) for edge in relations}
    for seed in SEEDS:
        sentences = set(edge_narrative(relations, random.Random(seed)))
        for source, target in relations:
            if (target, source) not in drawn:
                assert not sentences & _stated(target, source), (seed, source, target)


@pytest.mark.parametrize("relations", [CHAIN, BRANCHING])
def test_an_implied_step_follows_a_sentence_that_named_its_source_last(relations: list[list[str]]) -> None:
    sources = {target: [s for s, t in relations if t == target] for _, target in relations}
    for seed in SEEDS:
        sentences = edge_narrative(relations, random.Random(seed))
        for before, sentence in zip(sentences, sentences[1:], strict=False):
            for target, its_sources in sources.items():
                if sentence in _implied(target):
                    assert before not in CONTEXT
                    assert any(_names(before, source) for source in its_sources), (seed, before, sentence)


def test_narratives_vary_state_imply_and_leave_edges_out() -> None:
    stated_forms, implied, unstated = set(), 0, 0
    for seed in SEEDS:
        sentences = edge_narrative(CHAIN, random.Random(seed))
        for source, target in CHAIN:
            one_sentence = [t for t in STATED_EDGE if fill(t, source, target) in sentences]
            stated_forms.update(one_sentence)
            is_implied = bool(_implied(target) & set(sentences))
            implied += is_implied
            unstated += not one_sentence and not is_implied
    assert len(stated_forms) == len(STATED_EDGE)
    assert implied > 0 and unstated > 0


def test_methods_name_figures_letter_panels_and_carry_sentences_with_no_relation() -> None:
    workflow = PanelProse("process", "RNA sequencing", ["RNA sequencing", *STEPS], CHAIN)
    molecule = PanelProse("molecule", "Caffeine", ["Caffeine"], [])
    texts = [methods_text([[molecule], [workflow, molecule]], random.Random(seed)) for seed in SEEDS]
    for text in texts:
        assert {"1", "2a", "2b"} == set(re.findall(r"\bFigure (\w+)\b", text)), text
    assert all("Caffeine" in text and "leads to" not in text for text in texts)
    assert any(sentence in text for text in texts for sentence in CONTEXT)
