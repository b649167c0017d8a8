"""The sentences built from topics: what a panel draws, figure captions, article titles and introductions,
and the word helpers the methods prose (``sciir.sample.prose``) shares."""

from __future__ import annotations

from collections.abc import Sequence

from sciir.sample.topics import CircuitTopic, LawTopic, MoleculeTopic, ProcessTopic, ReactionTopic, Topic

THIRD_PARTY_NOTE = "Reproduced from [12] with permission."


def join_words(words: Sequence[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} and {words[-1]}"


def panel_description(kind: str, topic: Topic, formula: str = "") -> str:
    """The sentence describing what a panel draws; it uses only its kind's native tracks' vocabulary."""
    if isinstance(topic, ReactionTopic):
        scheme = (
            f"Reaction scheme in one step: the {topic.reactant} molecule leads to the {topic.product} "
            "molecule."
        )
        return f"{scheme} The rate equation is written below it." if kind == "rate_reaction" else scheme
    if kind == "circuit_law" and isinstance(topic, CircuitTopic):
        labels = [topic.source_label, *(label for _, label in topic.components)]
        return (
            f"Schematic of the {topic.title} built from the components {join_words(labels)}, "
            f"with the equation {topic.equation} written below it."
        )
    if kind == "staged_plot" and isinstance(topic, LawTopic):
        return (
            f"{topic.law_name} for {topic.subject}: the equation {topic.equation}, written on the plot, "
            f"gives the relationship between {topic.y_label} and {topic.x_label}; the stages beside it "
            f"run from {in_sentence(topic.stages[0])} to {in_sentence(topic.stages[-1])}."
        )
    if isinstance(topic, ProcessTopic):
        return (
            f"Workflow for {topic.title} in {len(topic.steps)} steps starting at "
            f"{topic.steps[0]}; each stage leads to the next."
        )
    if isinstance(topic, MoleculeTopic):
        return f"Two-dimensional structure of the {topic.title} molecule ({formula})."
    if isinstance(topic, CircuitTopic):
        labels = [topic.source_label, *(label for _, label in topic.components)]
        return f"Schematic of the {topic.title} built from the components {join_words(labels)}."
    return (
        f"{topic.law_name} for {topic.subject}: the equation {topic.equation}, written on the plot, "
        f"gives the relationship between {topic.y_label} and {topic.x_label}."
    )


def in_sentence(name: str) -> str:
    """A name inside a sentence: a capitalised word is lowered ("Set current" -> "set current"), an
    acronym or a single capital letter is kept ("RNA extraction", "T cell activation")."""
    if len(name) > 1 and name[0].isupper() and name[1].islower():
        return name[0].lower() + name[1:]
    return name


def law_text(topic: LawTopic) -> str:
    """The law as a plot writes it: its equation ("V = I R"), which the caption names."""
    return topic.equation


def caption_text(descriptions: Sequence[str], facts: Sequence[str], third_party: bool) -> str:
    """A figure caption: panel descriptions (lettered when several), then track facts."""
    if len(descriptions) == 1:
        parts = list(descriptions)
    else:
        parts = [f"({chr(ord('a') + i)}) {text}" for i, text in enumerate(descriptions)]
    parts.extend(facts)
    if third_party:
        parts.append(THIRD_PARTY_NOTE)
    return " ".join(parts)


def caption_title(titles: Sequence[str]) -> str:
    """The caption's title line, naming every panel's subject."""
    return join_words(list(titles)) + "."


def introduction_text(titles: Sequence[str], licence_name: str) -> str:
    """The introduction of a sample article."""
    return (
        f"This article of the SciIR embedded sample presents {join_words(list(titles))}. "
        f"Its figures are drawn programmatically and it is released under {licence_name}."
    )


def article_title(titles: Sequence[str]) -> str:
    """An article title from the subjects of its figures."""
    return f"Figures on {join_words(list(titles))}"
