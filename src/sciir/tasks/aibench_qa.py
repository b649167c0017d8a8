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

A multiple-choice question (AIBench's published checklists, ``sciir.aibench.choices``) is answered with
the letter of one of its options, the insufficient-information option included; each request's schema
lists the letters its questions offer, and a letter that is not one of its question's options is a
failure with its reason, never a score. Offline, a level-1 question asking which component is shown
(no negation in its wording), every option of which is a component label (quoted in the option, or a
short name), is answered when OCR settles it (``choice_reading``), and so is a level-1 question asking
whether the one component it quotes is present, with options Yes and No (Yes when the judge's text check
reads the name, abstained on otherwise); any other is abstained on.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel

from sciir.aibench.choices import question_options
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.readers.diagram import Diagram
from sciir.backends.readers.text import OcrReading
from sciir.backends.rule_based import Sight
from sciir.tasks.choice_reading import answer_choice, label_presence
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
    "insufficient",
    "status",
    "evidence",
    "reason",
)

SOLVER_TASK = "aibench_qa"
YES_NO = ("yes", "no")


def solver_reply_schema(answers: Sequence[str] = YES_NO) -> dict[str, Any]:
    """The solver's reply: one answer per question, one of ``answers`` or null (abstained)."""
    return {
        "type": "object",
        "properties": {
            "answers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "answer": {"type": ["string", "null"], "enum": [*answers, None]},
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


SOLVER_REPLY_SCHEMA = solver_reply_schema()


def solver_items(questions: pd.DataFrame) -> list[dict[str, Any]]:
    """What the solver sees of one sample's questions: id, level, text, for a multiple-choice question
    its options, for a yes/no question of level 1 the label asked about and of level 2 the two
    components, from and to (also in the text; given apart so a rule-based reader need not parse prose).
    Never the gold answer."""
    items = []
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in questions.itertuples(index=False):
        level, options = int(row.level), question_options(row)
        nodes = [] if options is not None else json.loads(row.nodes)
        item: dict[str, Any] = {
            "id": str(row.question_id),
            "level": level,
            "question": str(row.question),
            "label": nodes[0] if level == 1 and nodes else None,
            "flow": nodes[:2] if level == 2 and nodes else None,
        }
        if options is not None:
            item["options"] = options
        items.append(item)
    return items


def allowed_answers(item: Mapping[str, Any]) -> tuple[str, ...]:
    """What a question may be answered: its option letters, or yes and no."""
    options = item.get("options")
    return tuple(options) if options else YES_NO


def build_solver_request(items: Sequence[Mapping[str, Any]], image_png: bytes | None = None) -> VLMRequest:
    """One request per image: the questions and the image, and no generation prompt (without
    ``image_png``, made for an image added later). With multiple-choice questions its schema lists
    every answer its questions allow (yes and no, option letters); a letter given to a question that
    does not offer it is refused by the parser."""
    answers = tuple(dict.fromkeys(answer for item in items for answer in allowed_answers(item)))
    return TASK.request(
        images=[image_png] if image_png is not None else [],
        context={"questions": list(items)},
        json_schema=None if answers == YES_NO else solver_reply_schema(answers),
        questions=json.dumps(list(items), ensure_ascii=False, indent=1),
    )


@dataclass(frozen=True)
class AnswerOutcome:
    """The solver's answer to one question, or why there is none."""

    answer: str | None
    status: str  # answered / abstained / failed
    evidence: str | None = None
    reason: str | None = None


def _outcome(question_id: str, given: list[Mapping[str, Any]], allowed: Sequence[str]) -> AnswerOutcome:
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
    by_folded = {answer.casefold(): answer for answer in allowed}
    answer = by_folded.get(raw.strip().casefold()) if isinstance(raw, str) else None
    if answer is None:
        return AnswerOutcome(
            None,
            "failed",
            evidence,
            f"solver gave an unreadable answer {raw!r} to {question_id} (expected one of {', '.join(allowed)})",
        )
    return AnswerOutcome(answer, "answered", evidence)


def parse_solver_reply(
    result: VLMResult,
    question_ids: Sequence[str],
    image_id: str,
    options: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, AnswerOutcome], list[str]]:
    """Each question's outcome from one reply, and the answers ignored (ids the sample does not hold);
    ``options`` holds the letters of each multiple-choice question (the others are yes/no)."""
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
        if isinstance(qid, str) and qid in question_ids:
            by_id[qid].append(reply)
        else:
            ignored.append(f"solver reply for {image_id} answered unknown question id {qid!r}: ignored")
    letters = options or {}
    return {
        qid: _outcome(qid, by_id.get(qid, []), tuple(letters.get(qid, ())) or YES_NO) for qid in question_ids
    }, ignored


def answer_rows(
    model: str, sample_id: str, questions: pd.DataFrame, outcomes: Mapping[str, AnswerOutcome]
) -> list[dict[str, Any]]:
    """The ``aibench_answers`` rows of one image; ``correct`` only where the solver answered, and
    ``insufficient`` (it gave the insufficient-information option) only where it answered a question
    that offers one."""
    rows = []
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in questions.itertuples(index=False):
        outcome = outcomes[str(row.question_id)]
        insufficient = getattr(row, "insufficient_option", None)
        offered = isinstance(insufficient, str) and outcome.answer is not None
        rows.append(
            {
                "model": model,
                "sample_id": sample_id,
                "question_id": str(row.question_id),
                "level": int(row.level),
                "gold_answer": str(row.gold_answer),
                "answer": outcome.answer,
                "correct": None if outcome.answer is None else outcome.answer == row.gold_answer,
                "insufficient": outcome.answer == insufficient if offered else None,
                "status": outcome.status,
                "evidence": outcome.evidence,
                "reason": outcome.reason,
            }
        )
    return rows


def answers_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(ANSWER_COLUMNS))
    return frame.astype({"level": "int64", "correct": "boolean", "insufficient": "boolean"})


# ---- offline: what OCR reads and what a clean diagram shows (module docstring)


class SolverItem(BaseModel):
    """One AIBench question as the ``aibench_qa`` task receives it (``label``: the component a level-1
    question asks about; ``flow``: the two components, from and to, a level-2 question asks about;
    ``options``: a multiple-choice question's options by letter)."""

    id: str
    level: int
    question: str
    label: str | None = None
    flow: list[str] | None = None
    options: dict[str, str] | None = None


def _solver_answer(item: SolverItem, answer: str | None, evidence: str) -> dict[str, Any]:
    return {"id": item.id, "answer": answer, "evidence": evidence}


def answer_component(item: SolverItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one AIBench question from what was read: only component existence, and only when clear
    (found ignoring case: "yes"; "no" only without ``doubt_about_absence`` and without anything read
    close to the label, since a misspelt component still exists: ``label_presence``)."""
    if item.level != 1 or not item.label:
        return _solver_answer(
            item, None, f"abstained: OCR reads text only and cannot answer a level-{item.level} question"
        )
    answer, evidence = label_presence(item.label, reading)
    return _solver_answer(item, answer, evidence if answer is not None else f"abstained: {evidence}")


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
    if item.options is not None:
        return answer_choice(item.id, item.level, item.question, item.options, reading)
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


def _answer_by_reading(item: SolverItem, reading: OcrReading) -> dict[str, Any]:
    if item.options is not None:
        return answer_choice(item.id, item.level, item.question, item.options, reading)
    return answer_component(item, reading)


def answer_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """Level 1 (component existence) by OCR; the other levels abstained on."""
    return answer_each_question(
        request,
        sight,
        SolverItem,
        "questions",
        lambda items, reading, _image: [_answer_by_reading(i, reading) for i in items],
    )


TASK = ModelTask(
    name=SOLVER_TASK,
    summary="the solver: yes/no and multiple-choice answers to AIBench's four levels of questions (AIBench 3.5)",
    reply_schema=SOLVER_REPLY_SCHEMA,
    answerers={"offline": answer_by_sight, "ocr": answer_by_text},
)
