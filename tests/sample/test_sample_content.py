"""The sample's scientific content: every sentence speaks for its own track only."""

from __future__ import annotations

import pytest

from sciir.sample.captions import caption_text, panel_description
from sciir.sample.circuit_topics import CIRCUIT_TOPICS
from sciir.sample.law_topics import LAW_TOPICS
from sciir.sample.molecule_topics import MOLECULE_TOPICS
from sciir.sample.panel_kinds import NATIVE_TRACKS, TOPICS_BY_KIND
from sciir.sample.process_topics import PROCESS_TOPICS
from sciir.sample.reaction_topics import REACTION_TOPICS
from sciir.sample.tracks import mentions_track
from sciir.tasks.annotation import TRACKS

ALL_TOPICS = [(kind, topic) for kind, topics in TOPICS_BY_KIND.items() for topic in topics]


@pytest.mark.parametrize(("kind", "topic"), ALL_TOPICS, ids=lambda value: getattr(value, "title", value))
def test_each_fact_uses_its_own_track_vocabulary_and_no_other(kind: str, topic) -> None:
    missing = set(TRACKS) - set(NATIVE_TRACKS[kind]) - set(topic.facts)
    assert not missing, f"{topic.title} lacks facts for {missing}"
    for track, sentence in topic.facts.items():
        assert mentions_track(sentence, track), sentence
        leaks = [other for other in TRACKS if other != track and mentions_track(sentence, other)]
        assert not leaks, f"{sentence!r} also speaks for {leaks}"


@pytest.mark.parametrize(("kind", "topic"), ALL_TOPICS, ids=lambda value: getattr(value, "title", value))
def test_panel_description_speaks_only_for_the_kind_native_tracks(kind: str, topic) -> None:
    description = panel_description(kind, topic, formula="C8H10N4O2")
    assert {track for track in TRACKS if mentions_track(description, track)} == set(NATIVE_TRACKS[kind])


def test_drawn_labels_are_one_to_three_ordinary_words() -> None:
    labels = [topic.title for _, topic in ALL_TOPICS]
    labels += [step for topic in PROCESS_TOPICS for step in topic.steps]
    labels += [text for topic in LAW_TOPICS for text in (topic.x_label, topic.y_label)]
    labels += [label for topic in CIRCUIT_TOPICS for _, label in topic.components]
    labels += [name for topic in REACTION_TOPICS for name in (topic.reactant, topic.product)]
    labels += [stage for topic in LAW_TOPICS for stage in topic.stages]
    for label in labels:
        assert 1 <= len(label.split()) <= 3, label
        assert label.isascii() and "'" not in label, label


def test_every_process_step_is_joined_by_an_edge() -> None:
    for topic in PROCESS_TOPICS:
        joined = {index for edge in topic.edges for index in edge}
        assert joined == set(range(len(topic.steps))), topic.title


def test_drawn_equations_write_an_equals_sign() -> None:
    written = [topic.equation for topic in CIRCUIT_TOPICS] + [topic.rate_law for topic in REACTION_TOPICS]
    assert all(" = " in equation and equation.isascii() for equation in written)


def test_molecule_smiles_are_distinct() -> None:
    assert len({topic.smiles for topic in MOLECULE_TOPICS}) == len(MOLECULE_TOPICS)


def test_caption_letters_panels_and_appends_the_third_party_note() -> None:
    single = caption_text(["One panel."], ["A fact."], third_party=False)
    assert single == "One panel. A fact."
    several = caption_text(["First.", "Second."], [], third_party=True)
    assert several == "(a) First. (b) Second. Reproduced from [12] with permission."
