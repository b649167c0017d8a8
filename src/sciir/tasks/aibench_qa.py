"""AIBench's solver protocol (task ``aibench_qa``, section 3.5): a solver answers each question of a
sample from the generated image alone, one request per image; replies parsed into one answer row per
question (unanswered questions are recorded with their reason, never counted as wrong).

Offline, by rules, each question is answered from what the pixels show or abstained on:
- level 1 (component existence), by OCR (``answer_component``): a label read in the image is "yes", a label
  clearly absent from a reliably read image is "no", a near match is abstained on (a misspelt component
  still exists); the ``ocr`` reader answers this level only (``answer_by_text``).
- level 2 (local topology, "does A feed directly into B?"), with the ``offline`` reader: as the judge's
  relation check "an arrow from A to B" (``sciir.tasks.sight_checks``): abstained on when either label is
  not read inside exactly one box or an arrowhead is unclear.
- levels 3 and 4 (phases, the whole flow), and a level-2 question that does not name its two components
  (``flow``): abstained on, with the reason.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.readers.diagram import Diagram
from sciir.backends.readers.misreadings import doubt_about_absence, near_miss
from sciir.backends.readers.text import OcrReading, closest_span, normalise_whitespace
from sciir.backends.rule_based import Sight
from sciir.tasks.sight_checks import JudgeItem, answer_each_question, answer_relation, lazy_diagram
from sciir.tasks.task import ModelTask

ANSWER_COLUMNS = (
    "model",
    "sample_id",
    "question_id",
    "level",
    "gold_answer",
    "answer",
    "correct",
    "status",
    "evidence",
    "reason",
)

SOLVER_TASK = "aibench_qa"

SOLVER_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "answer": {"type": ["string", "null"], "enum": ["yes", "no", None]},
                    "evidence": {"type": ["string", "null"]},
                },
                "required": ["id", "answer", "evidence"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["answers"],
    "additionalProperties": False,
}


def solver_items(questions: pd.DataFrame) -> list[dict[str, Any]]:
    """What the solver sees of one sample's questions: id, level, text, for level 1 the label asked about
    and for level 2 the two components, from and to (also in the text; given apart so a rule-based
    reader need not parse prose). Never the gold answer."""
    items = []
    for row in questions.itertuples(index=False):
        level, nodes = int(row.level), json.loads(row.nodes)
        items.append(
            {
                "id": str(row.question_id),
                "level": level,
                "question": str(row.question),
                "label": nodes[0] if level == 1 else None,
                "flow": nodes[:2] if level == 2 else None,
            }
        )
    return items


def build_solver_request(items: Sequence[Mapping[str, Any]], image_png: bytes | None = None) -> VLMRequest:
    """One request per image: the questions and the image, and no generation prompt (without
    ``image_png``, made for an image added later)."""
    return TASK.request(
        images=[image_png] if image_png is not None else [],
        context={"questions": list(items)},
        questions=json.dumps(list(items), ensure_ascii=False, indent=1),
    )


@dataclass(frozen=True)
class AnswerOutcome:
    """The solver's answer to one question, or why there is none."""

    answer: str | None
    status: str  # answered / abstained / failed
    evidence: str | None = None
    reason: str | None = None


def _outcome(question_id: str, given: list[Mapping[str, Any]]) -> AnswerOutcome:
    if not given:
        return AnswerOutcome(None, "failed", reason=f"solver reply omitted question {question_id}")
    if len(given) > 1:
        return AnswerOutcome(
            None, "failed", reason=f"solver answered question {question_id} {len(given)} times"
        )
    reply = given[0]
    evidence = reply.get("evidence") if isinstance(reply.get("evidence"), str) else None
    if "answer" not in reply:
        return AnswerOutcome(
            None, "failed", reason=f"solver answer to question {question_id} has no answer field"
        )
    raw = reply["answer"]
    if raw is None:
        return AnswerOutcome(None, "abstained", evidence, f"solver abstained on question {question_id}")
    answer = raw.strip().lower() if isinstance(raw, str) else None
    if answer not in ("yes", "no"):
        return AnswerOutcome(
            None, "failed", evidence, f"solver gave an unreadable answer {raw!r} to {question_id}"
        )
    return AnswerOutcome(answer, "answered", evidence)


def parse_solver_reply(
    result: VLMResult, question_ids: Sequence[str], image_id: str
) -> tuple[dict[str, AnswerOutcome], list[str]]:
    """Each question's outcome from one reply, and the answers ignored (ids the sample does not hold)."""
    if not result.ok:
        failed = AnswerOutcome(
            None, "failed", reason=f"solver request for {image_id} failed: {result.failure}"
        )
        return dict.fromkeys(question_ids, failed), []
    answers = (result.output or {}).get("answers")
    if not isinstance(answers, list):
        failed = AnswerOutcome(None, "failed", reason=f"solver reply for {image_id} has no 'answers' list")
        return dict.fromkeys(question_ids, failed), []
    by_id: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    ignored = []
    for reply in answers:
        qid = reply.get("id") if isinstance(reply, Mapping) else None
        if qid in question_ids:
            by_id[qid].append(reply)
        else:
            ignored.append(f"solver reply for {image_id} answered unknown question id {qid!r}: ignored")
    return {qid: _outcome(qid, by_id.get(qid, [])) for qid in question_ids}, ignored


def answer_rows(
    model: str, sample_id: str, questions: pd.DataFrame, outcomes: Mapping[str, AnswerOutcome]
) -> list[dict[str, Any]]:
    """The ``aibench_answers`` rows of one image; ``correct`` only where the solver answered."""
    rows = []
    for row in questions.itertuples(index=False):
        outcome = outcomes[str(row.question_id)]
        rows.append(
            {
                "model": model,
                "sample_id": sample_id,
                "question_id": str(row.question_id),
                "level": int(row.level),
                "gold_answer": str(row.gold_answer),
                "answer": outcome.answer,
                "correct": None if outcome.answer is None else outcome.answer == row.gold_answer,
                "status": outcome.status,
                "evidence": outcome.evidence,
                "reason": outcome.reason,
            }
        )
    return rows


def answers_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(ANSWER_COLUMNS))
    return frame.astype({"level": "int64", "correct": "boolean"})


# ---- offline: what OCR reads and what a clean diagram shows (module docstring)


class SolverItem(BaseModel):
    """One AIBench question as the ``aibench_qa`` task receives it (``label``: the component a level-1
    question asks about; ``flow``: the two components, from and to, a level-2 question asks about)."""

    id: str
    level: int
    question: str
    label: str | None = None
    flow: list[str] | None = None


def _solver_answer(item: SolverItem, answer: str | None, evidence: str) -> dict[str, Any]:
    return {"id": item.id, "answer": answer, "evidence": evidence}


def answer_component(item: SolverItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one AIBench question from what was read: only component existence, and only when clear
    (found ignoring case: "yes"; "no" only without ``doubt_about_absence`` and without anything read
    close to the label, since a misspelt component still exists)."""
    if item.level != 1 or not item.label:
        return _solver_answer(
            item, None, f"abstained: OCR reads text only and cannot answer a level-{item.level} question"
        )
    if reading.find(item.label, ignore_case=True):
        return _solver_answer(item, "yes", reading.excerpt(item.label, ignore_case=True))
    text = reading.normalised_text
    doubt = doubt_about_absence(reading, item.label) if text else "no text was read in the image"
    closest = near_miss(reading, item.label) if text and doubt is None else None
    if closest is not None:
        doubt = f'read "{closest}", close to "{item.label}" (misspelt or misread: OCR cannot tell)'
    if doubt is not None:
        # Where Tesseract's reading leaves doubt, the second recogniser reads the image again.
        if reading.find(item.label, ignore_case=True, reread=True):
            return _solver_answer(item, "yes", reading.excerpt(item.label, ignore_case=True))
        return _solver_answer(item, None, f"abstained: {doubt}")
    closest = closest_span(text, normalise_whitespace(item.label))
    return _solver_answer(item, "no", f'"{item.label}" was not read; closest text read: "{closest}"')


TOPOLOGY_LEVEL = 2


def answer_flow(item: SolverItem, reading: OcrReading, diagram: Diagram) -> dict[str, Any]:
    """A level-2 question as the judge's relation question "an arrow from A to B" (see the module
    docstring); an abstention keeps the judge's reason as evidence."""
    relation = JudgeItem(
        id=item.id, question=item.question, layer=2, track="aibench", kind="relation", about=item.flow or []
    )
    verdict = answer_relation(relation, reading, diagram)
    if verdict["verdict"] is None:
        return {"id": item.id, "answer": None, "evidence": verdict["reasoning"]}
    evidence = f"{verdict['reasoning']} {verdict['evidence']}"
    return {"id": item.id, "answer": verdict["verdict"], "evidence": evidence}


def answer_question(item: SolverItem, reading: OcrReading, diagram: Callable[[], Diagram]) -> dict[str, Any]:
    """A level-2 question naming its two components by the diagram (analysed only then); any other
    question as the OCR solver answers it (level 1 judged, the rest abstained on with the reason)."""
    if item.level == TOPOLOGY_LEVEL and item.flow is not None and len(item.flow) == 2:
        return answer_flow(item, reading, diagram())
    return answer_component(item, reading)


def answer_by_sight(request: VLMRequest, sight: Sight) -> VLMResult:
    """Level 1 (component existence) by OCR, level 2 (local topology) as arrows between labelled boxes;
    levels 3 and 4 abstained on."""

    def answer(items: list[SolverItem], reading: OcrReading, image: bytes) -> list[dict[str, Any]]:
        diagram = lazy_diagram(image, reading)
        return [answer_question(item, reading, diagram) for item in items]

    return answer_each_question(request, sight, SolverItem, "questions", answer)


def answer_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """Level 1 (component existence) by OCR; the other levels abstained on."""
    return answer_each_question(
        request,
        sight,
        SolverItem,
        "questions",
        lambda items, reading, _image: [answer_component(i, reading) for i in items],
    )


TASK = ModelTask(
    name=SOLVER_TASK,
    summary="the solver: yes/no answers to AIBench's four levels of questions (AIBench 3.5)",
    reply_schema=SOLVER_REPLY_SCHEMA,
    answerers={"offline": answer_by_sight, "ocr": answer_by_text},
)
