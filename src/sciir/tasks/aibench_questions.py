"""The ``aibench_questions`` task (AIBench section 3.2): four levels of yes/no questions with gold answers,
written from a method's logic graph: component existence, local topology, phase architecture and global
semantics. The reply is checked against the graph it was asked about: a question may only be about the
graph's components or the distractors given, and about phases the graph has. Offline, the four levels are
written by rule from the graph in the request (``sciir.aibench.questions``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from sciir.aibench.graph import LogicGraph
from sciir.aibench.questions import LEVEL_NAMES, Question, QuestionSettings, aibench_questions
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.aibench_graph import GraphTaskError, Name, graph_from_json, graph_json
from sciir.tasks.task import ModelTask

QUESTIONS_TASK = "aibench_questions"


class GeneratedQuestion(BaseModel):
    """One yes/no question, its gold answer, the components it is about and the phases (from 1) it names."""

    id: Name
    level: Literal[1, 2, 3, 4]
    kind: Name
    question: Name
    answer: Literal["yes", "no"]
    about: list[Name] = Field(min_length=1)
    phases: list[Annotated[int, Field(ge=1)]] = Field(default_factory=list)


class QuestionsReply(BaseModel):
    """The questions of one graph; ids unique, everything named known to the request."""

    questions: list[GeneratedQuestion]

    @model_validator(mode="after")
    def _names_are_known(self, info: ValidationInfo) -> QuestionsReply:
        ids = [question.id for question in self.questions]
        repeated = sorted({qid for qid in ids if ids.count(qid) > 1})
        if repeated:
            raise ValueError(f"question ids repeat: {repeated}")
        known = (info.context or {}).get("known")
        if known is not None:
            names, n_phases = known
            unknown = sorted({name for q in self.questions for name in q.about} - names)
            if unknown:
                raise ValueError(f"questions are about {unknown}, neither components nor distractors")
            beyond = sorted({p for q in self.questions for p in q.phases if p > n_phases})
            if beyond:
                raise ValueError(f"questions name phases {beyond}; the graph has {n_phases}")
        return self


class QuestionsContext(BaseModel):
    """What a questions request carries besides its prompt."""

    sample_id: str
    graph: dict[str, Any]
    distractors: list[str]
    settings: QuestionSettings


def build_questions_request(
    sample_id: str, graph: LogicGraph, distractors: Sequence[str], settings: QuestionSettings
) -> VLMRequest:
    """The request for one graph's questions: the graph, the distractors to ask about (gold "no") and
    how many negatives of each kind (``settings``)."""
    graph_value = graph_json(graph)
    context = QuestionsContext(
        sample_id=sample_id, graph=graph_value, distractors=list(distractors), settings=settings
    ).model_dump()
    return TASK.request(
        context=context,
        graph=json.dumps(graph_value, ensure_ascii=False, indent=1),
        distractors=json.dumps(list(distractors), ensure_ascii=False),
        non_adjacent=settings.non_adjacent,
        max_pairs=settings.max_pairs,
        levels=json.dumps(LEVEL_NAMES),
        schema=json.dumps(TASK.schema(), ensure_ascii=False),
    )


def parse_questions_reply(
    result: VLMResult, graph: LogicGraph, distractors: Sequence[str]
) -> list[tuple[str, Question]]:
    """The numbered questions of a reply, or GraphTaskError saying why it is unusable."""
    known = ({*graph.nodes, *distractors}, len(graph.phases))
    reply = TASK.parse(result, GraphTaskError, {"known": known})
    return [
        (q.id, Question(q.level, q.kind, q.question, q.answer, tuple(q.about), tuple(q.phases)))
        for q in reply.questions
    ]


def questions_output(numbered: Sequence[tuple[str, Question]]) -> dict[str, Any]:
    """Numbered questions as the task's reply (what the rule-based writer answers)."""
    return {
        "questions": [
            {
                "id": qid,
                "level": q.level,
                "kind": q.kind,
                "question": q.question,
                "answer": q.gold_answer,
                "about": list(q.nodes),
                "phases": list(q.phases),
            }
            for qid, q in numbered
        ]
    }


def answer_by_rules(request: VLMRequest, sight: Sight) -> VLMResult:
    """The four levels written by rule from the graph in the request (``sciir.aibench.questions``)."""
    context = QuestionsContext.model_validate(request.context)
    graph = graph_from_json(context.graph)
    return VLMResult(
        output=questions_output(
            aibench_questions(context.sample_id, graph, context.distractors, context.settings)
        )
    )


TASK = ModelTask(
    name=QUESTIONS_TASK,
    summary="four levels of yes/no questions with gold answers from a logic graph (AIBench 3.2)",
    reply_schema=QuestionsReply,
    answerers={"offline": answer_by_rules},
)
