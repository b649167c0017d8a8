"""AIBench's solver protocol (task ``aibench_qa``, section 3.5): a solver answers each question of a
sample from the generated image alone, one request per image; replies parsed into one answer row per
question (unanswered questions are recorded with their reason, never counted as wrong)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.prompts import prompt_template

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
    return VLMRequest(
        task=SOLVER_TASK,
        prompt=prompt_template(SOLVER_TASK).render(
            questions=json.dumps(list(items), ensure_ascii=False, indent=1)
        ),
        images=[image_png] if image_png is not None else [],
        json_schema=SOLVER_REPLY_SCHEMA,
        context={"questions": list(items)},
        template_version=prompt_template(SOLVER_TASK).version,
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
