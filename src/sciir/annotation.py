"""The annotation tasks of SciIR section 3 and appendices B.4, D.1 and F, as versioned prompt templates.

Four tasks, in dependency order: ``track_scores`` and ``reasoning`` read the figure with its caption
and methods text; ``abstract_prompt`` distils the reasoning into a short prompt; ``checklist`` turns
the reasoning into atomic yes/no questions. Each task has a prompt template with a version string
(part of the response-cache key), the JSON schema of its output (sent to servers that support
structured output), and a strict parser: an answer that does not match is a failure with its
reason, never repaired into a default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, ValidationError, model_validator

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.strict_schema import omit_added_nulls, strict_model_schema

TRACKS = ("entity", "process", "law")
# Columns of the ``checklists`` table (docs/data_contract.md), whoever writes it: annotate or a benchmark file.
CHECKLIST_COLUMNS = (
    "sample_id",
    "question_id",
    "layer",
    "track",
    "kind",
    "polarity",
    "about",
    "question",
    "expected_text",
    "parent_ids",
)
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
Score = Annotated[int, Field(ge=1, le=10)]
Relation = Annotated[list[NonEmpty], Field(min_length=2, max_length=2)]


class AnnotationError(ValueError):
    """A task's answer was missing or did not match its output schema."""


# ---- outputs


class TrackScores(BaseModel):
    """Relevance of the figure to each reasoning track, 1 (absent) to 10 (the figure's purpose)."""

    entity: Score
    process: Score
    law: Score
    rationale: NonEmpty


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


class Reasoning(BaseModel):
    """Terms, text to render, directed relations between labels, laws, and the Sci-RCoT narration."""

    terms: list[NonEmpty]
    required_text: list[NonEmpty]
    relations: list[Relation]
    laws: list[NonEmpty]
    sci_rcot: NonEmpty

    @model_validator(mode="after")
    def _relations_join_labels(self) -> Reasoning:
        self.terms, self.required_text = _unique(self.terms), _unique(self.required_text)
        self.laws = _unique(self.laws)
        labels = set(self.terms) | set(self.required_text)
        unknown = sorted({end for pair in self.relations for end in pair} - labels)
        if unknown:
            raise ValueError(f"relations name {unknown}, which are neither terms nor required_text")
        return self


class AbstractPrompt(BaseModel):
    """A short generation prompt that names terms instead of describing the figure."""

    prompt: NonEmpty


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


# ---- prompt templates ($-placeholders: the templates quote JSON, which is full of braces)

_EVIDENCE_RULE = (
    "Evidence priority: what is visible in the image first, then the caption, then the methods text. "
    "Use the texts only to interpret what you see; never add anything the image does not show."
)

TRACK_SCORES_TEMPLATE = Template(
    """You are an expert reviewer of scientific figures. Rate how strongly the attached figure \
depends on each of three kinds of scientific reasoning. $evidence_rule Do not speculate beyond \
clear image evidence.

Tracks:
- entity (Entity Structure): the figure reconstructs the geometry, spatial layout or composition of \
physical entities: molecules and bonds, cells and organelles, devices, circuits, materials, their \
components and morphology.
- process (Scientific Process): the figure shows causal or temporal relations: workflows, pathways, \
state transitions, stages or steps connected by arrows.
- law (Scientific Law): the figure expresses an abstract rule or constraint: equations, conservation, \
proportionality, quantitative relationships between variables, valence rules.

Score each track with an integer from 1 to 10:
1-2 absent; 3-4 incidental; 5-6 present but secondary; 7-8 a main purpose of the figure; \
9-10 the figure exists to show it. Scores are independent: several tracks may be high.

Figure caption:
<<<
$caption
>>>

Methods text of the article (excerpt):
<<<
$methods_text
>>>

Reply with one JSON object and nothing else, matching this JSON schema:
$schema
"rationale" names, in one or two sentences, the visual evidence behind each score.
"""
)

REASONING_TEMPLATE = Template(
    """You are annotating a scientific figure so that a text-to-image model can learn to redraw it \
with correct scientific reasoning. $evidence_rule

Extract from the attached figure:
1. "required_text": every text string rendered in the image that a faithful redrawing must \
reproduce (labels, axis titles, legend entries, equations), each copied character for character \
with the image's spelling and capitalisation. Leave out panel letters and tick numbers.
2. "terms": the scientific terms the figure depicts (entities, quantities, processes, laws) as \
short noun phrases; every label in required_text that names a scientific concept is also a term.
3. "relations": the directed connections drawn as arrows or flows, as [source, target] pairs, in \
the direction the arrow points. Both ends must be strings from required_text or terms, spelled \
identically. Leave the list empty when nothing is connected.
4. "laws": every law, equation or quantitative constraint the figure shows or obeys, each as one \
short statement: copied character for character where the image writes it, else as the caption \
states it. Leave the list empty when there is none.
5. "sci_rcot": the Scientific Reasoning Chain-of-Thought, one paragraph that narrates in this order:
   (a) Style: the kind of figure (flow diagram, structural drawing, circuit schematic, plot ...), \
layout, colours and background;
   (b) Required text: the strings to render, quoted exactly;
   (c) Entity structure: which entities appear and how they are composed or arranged;
   (d) Topology: what is connected to what and where things sit relative to each other;
   (e) Process and law: the causal or temporal order along the arrows, and any law or constraint \
the figure obeys.
   Describe only what the image shows.

Figure caption:
<<<
$caption
>>>

Methods text of the article (excerpt):
<<<
$methods_text
>>>

Reply with one JSON object and nothing else, matching this JSON schema:
$schema
"""
)

ABSTRACT_PROMPT_TEMPLATE = Template(
    """You write prompts for a text-to-image model that must reason out a scientific figure by itself.

Distil the detailed description below into an abstract prompt of at most 60 words by term \
substitution: keep the original visual style (kind of figure, layout, colours), keep every \
scientific term exactly as spelled, and replace descriptions of structure, connections and steps \
with the terms themselves, so that the model must infer the arrangement from scientific knowledge. \
Any text the figure must render stays quoted exactly. Add nothing that is not in the description.

Caption:
<<<
$caption
>>>

Scientific terms (JSON): $terms

Detailed description (Sci-RCoT):
<<<
$sci_rcot
>>>

Reply with one JSON object and nothing else, matching this JSON schema:
$schema
"""
)

CHECKLIST_TEMPLATE = Template(
    """You turn the ground truth of a scientific figure into an atomic checklist: binary yes/no \
questions that a reviewer answers by looking at a generated image. "yes" must always mean the \
image is correct.

Layer 1, text (track "text", layer 1): one question per string in required_text, of the form \
'Is the text "<string>" rendered with exactly this spelling?', with expected_text set to the \
string. Check position only where the ground truth states it explicitly; never infer positions \
from vague prepositions.

Layer 2, reasoning (layer 2, expected_text null), only for the active tracks listed below; each \
fact gets a positive question (it is drawn) and a negative one (no fault against it is drawn):
- entity (kind "entity", about [label]): for each term that names an entity (not a law), 'Is \
"<label>" drawn as a distinct, identifiable component?' (positive) and, against incoherent \
structures, 'Is "<label>" drawn as one component only, not duplicated?' (negative).
- process (kind "relation", about [source, target] in the direction asked): for each relation \
[A, B], 'Is there an arrow from "A" to "B"?' (positive, about [A, B]) and, against reversed or \
broken flows, 'Is there no arrow from "B" to "A" (the flow is not reversed)?' (negative, about [B, A]).
- law (kind "law", about [statement]): for each law, 'Does the figure state or obey the law \
"<statement>"?' (positive) and, against impossible laws, 'Is nothing in the figure contradicting \
"<statement>" (no conflicting equation or impossible depiction)?' (negative).
Every question carries "kind" (text, entity, relation or law), "polarity" (positive or negative) \
and "about" (the strings it is about, spelled exactly as given below); a text question is about \
its expected_text.

Ids: "L1-01", "L1-02", ... for layer 1 and "L2-<track>-01", ... for layer 2, numbered in order. \
parent_ids lists the ids of questions a question depends on: a process question depends on the \
positive entity questions of its two ends when they exist. Each question tests one fact only.

Active tracks (JSON): $tracks
Terms (JSON): $terms
Required text (JSON): $required_text
Relations [source, target] (JSON): $relations
Laws (JSON): $laws

Reply with one JSON object and nothing else, matching this JSON schema:
$schema
"""
)


@dataclass(frozen=True)
class TaskSpec:
    """A task's prompt template, its version, its output model, and whether it is sent the image."""

    name: str
    version: str
    template: Template
    output: type[BaseModel]
    context_keys: tuple[str, ...]
    sees_image: bool

    @property
    def schema(self) -> dict[str, Any]:
        """The output's JSON schema in OpenAI strict form (closed objects, optional fields nullable)."""
        return strict_model_schema(self.output)


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec(
            name="track_scores",
            version="sciir-f-scores-v2",
            template=TRACK_SCORES_TEMPLATE,
            output=TrackScores,
            context_keys=("caption", "methods_text"),
            sees_image=True,
        ),
        TaskSpec(
            name="reasoning",
            version="sciir-f-rcot-v3",
            template=REASONING_TEMPLATE,
            output=Reasoning,
            context_keys=("caption", "methods_text"),
            sees_image=True,
        ),
        TaskSpec(
            name="abstract_prompt",
            version="sciir-f-abstract-v2",
            template=ABSTRACT_PROMPT_TEMPLATE,
            output=AbstractPrompt,
            context_keys=("caption", "terms", "sci_rcot"),
            sees_image=False,
        ),
        TaskSpec(
            name="checklist",
            version="sciir-d1-checklist-v3",
            template=CHECKLIST_TEMPLATE,
            output=Checklist,
            context_keys=("terms", "required_text", "relations", "laws", "tracks"),
            sees_image=False,
        ),
    )
}


def _as_prompt_text(value: Any) -> str:
    """Strings go in verbatim, lists as JSON (so quoting and order stay exact)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def build_request(task: str, context: Mapping[str, Any], image: bytes | None = None) -> VLMRequest:
    """The request for one task: rendered prompt, output schema, context, and the image if the task reads it."""
    spec = TASKS[task]
    missing = [key for key in spec.context_keys if key not in context]
    if missing:
        raise KeyError(f"task {task} needs context keys {missing}")
    if spec.sees_image and image is None:
        raise ValueError(f"task {task} reads the figure but no image was given")
    fields = {key: _as_prompt_text(context[key]) for key in spec.context_keys}
    prompt = spec.template.substitute(
        fields, evidence_rule=_EVIDENCE_RULE, schema=json.dumps(spec.schema, ensure_ascii=False)
    )
    return VLMRequest(
        task=task,
        prompt=prompt,
        images=[image] if spec.sees_image and image is not None else [],
        json_schema=spec.schema,
        context={key: context[key] for key in spec.context_keys},
        template_version=spec.version,
    )


def parse_output(task: str, result: VLMResult) -> BaseModel:
    """The validated output of a task, or AnnotationError saying why the answer is unusable."""
    if not result.ok:
        raise AnnotationError(f"{task} failed: {result.failure}")
    output = TASKS[task].output
    try:
        # A null in a field the strict schema made nullable means "left out": the model's default applies.
        return output.model_validate(omit_added_nulls(result.output, output.model_json_schema()))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in error.errors()
        )
        raise AnnotationError(f"{task} answer does not match its schema: {problems}") from error


def labels_from_scores(scores: TrackScores, tau: int) -> dict[str, bool]:
    """Multi-hot labels of appendix B.4: a track is active when its relevance score is at least tau."""
    return {track: getattr(scores, track) >= tau for track in TRACKS}
