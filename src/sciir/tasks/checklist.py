"""The ``checklist`` task (SciIR appendix D.1): the atomic two-layer checklist of a sample, written from its
reasoning. Layer 1 checks each text string to render (exact spelling); layer 2 checks each active track's
reasoning: its entities, relations and laws, each fact with a positive question (it must be drawn) and a
negative one (a fault must be absent: a duplicated entity, a reversed flow, a contradicted law). Each
question carries its kind, polarity and what it is about, so a rule-based judge can read it; "yes" always
means the image is correct.

Offline (``answer_by_rule``): the questions written by rule from the request's terms, required text,
relations, laws and active tracks (``checklist_questions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.annotation import AnnotationTask, NonEmpty
from sciir.tasks.track_scores import names_a_law

QuestionKind = Literal["text", "entity", "relation", "law"]
Polarity = Literal["positive", "negative"]
# How many strings a question of each kind is about: the text, the entity's label, the relation's
# [source, target], the law's statement.
ABOUT_SIZE: dict[str, int] = {"text": 1, "entity": 1, "relation": 2, "law": 1}


class ChecklistQuestion(BaseModel):
    """One atomic yes/no question; layer 1 checks a text string, layer 2 a track's reasoning.

    ``kind`` says what is checked, ``about`` what it is checked on (the expected text; the entity's
    label; the relation's [source, target]; the law's statement) and ``polarity`` whether the question
    asserts something that must be drawn (positive) or a fault that must be absent (negative: a
    duplicated entity, a reversed flow, a contradicted law). "yes" always means the image is correct.
    """

    id: NonEmpty
    layer: Literal[1, 2]
    track: Literal["text", "entity", "process", "law"]
    kind: QuestionKind
    polarity: Polarity
    about: list[NonEmpty]
    question: NonEmpty
    expected_text: str | None = None
    parent_ids: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _layer_matches_track(self) -> ChecklistQuestion:
        if self.layer == 1 and (self.track != "text" or self.kind != "text" or not self.expected_text):
            raise ValueError(f"question {self.id}: layer 1 needs track and kind 'text' and an expected_text")
        if self.layer == 2 and (
            self.track == "text" or self.kind == "text" or self.expected_text is not None
        ):
            raise ValueError(
                f"question {self.id}: layer 2 needs a reasoning track and kind, no expected_text"
            )
        if len(self.about) != ABOUT_SIZE[self.kind]:
            raise ValueError(
                f"question {self.id}: a {self.kind} question is about {ABOUT_SIZE[self.kind]} string(s), "
                f"got {self.about}"
            )
        if self.kind == "text" and self.about != [self.expected_text]:
            raise ValueError(f"question {self.id}: a text question is about its expected_text")
        return self


class Checklist(BaseModel):
    """The atomic checklist of one sample; ids are unique and parents refer to questions in it."""

    questions: list[ChecklistQuestion] = Field(min_length=1)

    @model_validator(mode="after")
    def _ids_resolve(self) -> Checklist:
        ids = [q.id for q in self.questions]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"question ids repeat: {duplicates}")
        dangling = sorted({p for q in self.questions for p in q.parent_ids} - set(ids))
        if dangling:
            raise ValueError(f"parent_ids name no question: {dangling}")
        return self


# ---- offline: the questions written by rule


class _ChecklistContext(BaseModel):
    terms: list[str]
    required_text: list[str]
    relations: list[tuple[str, str]]
    laws: list[str]
    tracks: list[str]


class _ChecklistBuilder:
    """Collects questions and numbers them per layer and track: L1-01, L2-process-01, ..."""

    def __init__(self) -> None:
        self.questions: list[dict[str, Any]] = []
        self._counts: dict[str, int] = {}

    def add(
        self,
        track: str,
        kind: str,
        about: Sequence[str],
        question: str,
        *,
        negative: bool = False,
        parents: Sequence[str] = (),
    ) -> str:
        prefix = "L1" if track == "text" else f"L2-{track}"
        self._counts[prefix] = self._counts.get(prefix, 0) + 1
        qid = f"{prefix}-{self._counts[prefix]:02d}"
        self.questions.append(
            {
                "id": qid,
                "layer": 1 if track == "text" else 2,
                "track": track,
                "kind": kind,
                "polarity": "negative" if negative else "positive",
                "about": list(about),
                "question": question,
                "expected_text": about[0] if kind == "text" else None,
                "parent_ids": list(parents),
            }
        )
        return qid


def _entity_questions(checklist: _ChecklistBuilder, terms: Sequence[str]) -> dict[str, str]:
    """Per entity term: drawn as a component (positive), drawn once (negative, incoherent structure)."""
    ids: dict[str, str] = {}
    for term in terms:
        ids[term] = checklist.add(
            "entity", "entity", [term], f'Is "{term}" drawn as a distinct, identifiable component?'
        )
        checklist.add(
            "entity",
            "entity",
            [term],
            f'Is "{term}" drawn as one component only, not duplicated?',
            negative=True,
            parents=[ids[term]],
        )
    return ids


def _process_questions(
    checklist: _ChecklistBuilder, relations: Sequence[tuple[str, str]], entity_ids: dict[str, str]
) -> None:
    """Per relation [A, B]: an arrow from A to B (positive), none from B to A (negative, reversed flow)."""
    for a, b in relations:
        parents = [entity_ids[end] for end in (a, b) if end in entity_ids]
        checklist.add(
            "process", "relation", [a, b], f'Is there an arrow from "{a}" to "{b}"?', parents=parents
        )
        checklist.add(
            "process",
            "relation",
            [b, a],
            f'Is there no arrow from "{b}" to "{a}" (the flow is not reversed)?',
            negative=True,
            parents=parents,
        )


def _law_questions(checklist: _ChecklistBuilder, laws: Sequence[str]) -> None:
    """Per law: stated or obeyed (positive), nothing contradicting it (negative, impossible law)."""
    for law in laws:
        first = checklist.add("law", "law", [law], f'Does the figure state or obey the law "{law}"?')
        checklist.add(
            "law",
            "law",
            [law],
            f'Is nothing in the figure contradicting "{law}" (no conflicting equation or impossible depiction)?',
            negative=True,
            parents=[first],
        )


def checklist_questions(context: _ChecklistContext) -> list[dict[str, Any]]:
    """Layer 1 per required text; layer 2 per active track, each fact with a positive and a negative
    question: entity per term that names no law, process per relation, law per law statement."""
    checklist = _ChecklistBuilder()
    for text in context.required_text:
        checklist.add("text", "text", [text], f'Is the text "{text}" rendered with exactly this spelling?')
    tracks = set(context.tracks)
    entity_ids: dict[str, str] = {}
    if "entity" in tracks:
        entity_ids = _entity_questions(checklist, [term for term in context.terms if not names_a_law(term)])
    if "process" in tracks:
        _process_questions(checklist, context.relations, entity_ids)
    if "law" in tracks:
        _law_questions(checklist, context.laws)
    return checklist.questions


def answer_by_rule(request: VLMRequest, sight: Sight) -> VLMResult:
    """The checklist written by rule from the reasoning in the request (module docstring)."""
    context = _ChecklistContext.model_validate(request.context)
    questions = checklist_questions(context)
    if not questions:
        return VLMResult.failed(
            "nothing to check: no required text, and no terms or relations for the active tracks"
        )
    return VLMResult(output={"questions": questions})


TASK = AnnotationTask(
    name="checklist",
    summary="the atomic two-layer checklist (SciIR D.1)",
    reply_schema=Checklist,
    answerers={"offline": answer_by_rule},
    context_keys=("terms", "required_text", "relations", "laws", "tracks"),
    sees_image=False,
)
