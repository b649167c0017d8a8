"""The annotation tasks of SciIR section 3 and appendices B.4, D.1 and F, as versioned prompt templates.

Four tasks, in dependency order: ``track_scores`` and ``reasoning`` read the figure with its caption
and methods text; ``abstract_prompt`` distils the reasoning into a short prompt; ``checklist`` turns
the reasoning into atomic yes/no questions. Each task has a prompt template with a version string
(``conf/base/tasks/<task>.yml``; the version is part of the response-cache key), the JSON schema of
its output (sent to servers that support structured output), and a strict parser: an answer that does
not match is a failure with its reason, never repaired into a default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, model_validator

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.strict_schema import strict_model_schema
from sciir.tasks.parsing import TaskReplyError, parse_reply
from sciir.tasks.prompts import PromptTemplate, prompt_template

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


class AnnotationError(TaskReplyError):
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


class TrackEvidence(BaseModel):
    """What the image (then the caption) shows of one track: its terms, and how the image draws them
    ("arrow from Filtration to Disinfection", "written equation V = I R"); both empty when not shown."""

    terms: list[NonEmpty]
    visualizations: list[NonEmpty]

    @model_validator(mode="after")
    def _unique_items(self) -> TrackEvidence:
        self.terms, self.visualizations = _unique(self.terms), _unique(self.visualizations)
        return self

    @property
    def shown(self) -> bool:
        """Terms and visualisations both: the track is shown (SciIR C.2)."""
        return bool(self.terms) and bool(self.visualizations)


class TracksEvidence(BaseModel):
    """Terms and visualisations per reasoning track (SciIR appendix F)."""

    entity: TrackEvidence
    process: TrackEvidence
    law: TrackEvidence

    def of(self, track: str) -> TrackEvidence:
        return getattr(self, track)


class Reasoning(BaseModel):
    """Terms, text to render, directed relations between labels, laws, the Sci-RCoT narration, and the
    terms and visualisations per track (``tracks``; null from an annotator that does not give them)."""

    terms: list[NonEmpty]
    required_text: list[NonEmpty]
    relations: list[Relation]
    laws: list[NonEmpty]
    sci_rcot: NonEmpty
    tracks: TracksEvidence | None = None

    @model_validator(mode="after")
    def _relations_join_labels(self) -> Reasoning:
        self.terms, self.required_text = _unique(self.terms), _unique(self.required_text)
        self.laws = _unique(self.laws)
        labels = set(self.terms) | set(self.required_text)
        unknown = sorted({end for pair in self.relations for end in pair} - labels)
        if unknown:
            raise ValueError(f"relations name {unknown}, which are neither terms nor required_text")
        if self.tracks is not None:
            stray = sorted({term for track in TRACKS for term in self.tracks.of(track).terms} - labels)
            if stray:
                raise ValueError(f"tracks name terms {stray}, which are neither terms nor required_text")
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


@dataclass(frozen=True)
class TaskSpec:
    """A task's output model, the context its template reads, and whether it is sent the image; its
    prompt template and version are in ``conf/base/tasks/<name>.yml`` (``sciir.tasks.prompts``)."""

    name: str
    output: type[BaseModel]
    context_keys: tuple[str, ...]
    sees_image: bool

    @property
    def prompt(self) -> PromptTemplate:
        return prompt_template(self.name)

    @property
    def version(self) -> str:
        return self.prompt.version

    @property
    def schema(self) -> dict[str, Any]:
        """The output's JSON schema in OpenAI strict form (closed objects, optional fields nullable)."""
        return strict_model_schema(self.output)


TASKS: dict[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("track_scores", TrackScores, ("caption", "methods_text"), sees_image=True),
        TaskSpec("reasoning", Reasoning, ("caption", "methods_text"), sees_image=True),
        TaskSpec("abstract_prompt", AbstractPrompt, ("caption", "terms", "sci_rcot"), sees_image=False),
        TaskSpec(
            "checklist",
            Checklist,
            ("terms", "required_text", "relations", "laws", "tracks"),
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
    prompt = spec.prompt.render(**fields, schema=json.dumps(spec.schema, ensure_ascii=False))
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
    return parse_reply(TASKS[task].output, task, result, AnnotationError)


def labels_from_scores(scores: TrackScores, tau: int) -> dict[str, bool]:
    """Multi-hot labels of appendix B.4: a track is active when its relevance score is at least tau."""
    return {track: getattr(scores, track) >= tau for track in TRACKS}
