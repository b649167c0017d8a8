"""The judge protocol of SciIR appendix D.2: one request per image, one verdict row per checklist question.

The reviewer receives the generated image, the original prompt and the whole checklist as JSON,
and for every question locates the visual evidence, gives one sentence of reasoning and a binary
verdict. A reply is parsed strictly: a question the reply leaves out, answers twice or answers with
an unreadable verdict becomes a ``failed`` row with its reason; a ``null`` verdict is an abstention;
an id the checklist does not hold is ignored and reported. Nothing is ever filled in as "yes" or "no".

Offline, by rules (``answer_by_sight``): spelling by OCR, entities as labels in drawn shapes, relations as
arrows, laws where they are written (``sciir.tasks.sight_checks``); everything else abstained on. With the
``ocr`` reader (``answer_by_text``): spelling checks only.
"""

from __future__ import annotations

import copy
import json
import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.readers.text import OcrReading
from sciir.backends.rule_based import Sight
from sciir.tasks.sight_checks import (
    Answer,
    JudgeItem,
    answer_each_question,
    answer_item,
    answer_text,
    lazy_diagram,
)
from sciir.tasks.task import ModelTask

JUDGE_TASK = "judge"

VERDICT_COLUMNS = (
    "model",
    "sample_id",
    "question_id",
    "layer",
    "track",
    "verdict",
    "status",
    "evidence",
    "reasoning",
    "reason",
)

JUDGE_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "evidence": {"type": "string"},
                    "reasoning": {"type": "string"},
                    "verdict": {"type": ["string", "null"], "enum": ["yes", "no", None]},
                },
                "required": ["id", "evidence", "reasoning", "verdict"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["answers"],
    "additionalProperties": False,
}

ChecklistItem = dict[str, Any]


def judge_reply_schema(question_ids: Sequence[str]) -> dict[str, Any]:
    """The reply schema of one request: ``JUDGE_REPLY_SCHEMA`` with each answer's ``id`` one of the
    request's question ids and at most one answer per question, so a constrained decoder (a local judge)
    can neither invent ids nor answer forever. Valid in OpenAI's strict mode (``enum`` and ``maxItems``
    are; see ``sciir.backends.strict_schema``). No ``minItems``: a reply that leaves a question out is
    still read, the question being unjudged."""
    schema = copy.deepcopy(JUDGE_REPLY_SCHEMA)
    answers = schema["properties"]["answers"]
    answers["items"]["properties"]["id"]["enum"] = list(question_ids)
    answers["maxItems"] = len(question_ids)
    return schema


@dataclass
class ParsedReply:
    """Verdict rows for every checklist question of one image, and what the reply held that was ignored."""

    rows: list[dict[str, Any]]
    ignored: list[str] = field(default_factory=list)


def optional_text(value: Any) -> str | None:
    """A string, or None for the missing values pandas uses (None, NaN, NA)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return str(value)


# Structured question fields (docs/data_contract.md): sent to the judge when the checklists have them.
STRUCTURED_FIELDS = ("kind", "polarity", "about")


def _structured(row: Mapping[Hashable, Any]) -> dict[str, Any]:
    """kind, polarity and about (a JSON list in the table) of one checklist row, those it has."""
    fields: dict[str, Any] = {}
    for name in STRUCTURED_FIELDS:
        value = optional_text(row.get(name))
        if value is not None:
            fields[name] = json.loads(value) if name == "about" else value
    return fields


def checklist_items(questions: pd.DataFrame) -> list[ChecklistItem]:
    """The judge's view of one sample's checklist rows: id, question, layer, track, expected_text and,
    when the checklist has them, kind, polarity and about."""
    return [
        {
            "id": str(row["question_id"]),
            "question": str(row["question"]),
            "layer": int(row["layer"]),
            "track": str(row["track"]),
            "expected_text": optional_text(row["expected_text"]),
        }
        | _structured(row)
        for row in questions.to_dict("records")
    ]


def render_judge_prompt(prompt: str, checklist: Sequence[ChecklistItem]) -> str:
    """The reviewer prompt for one image: the original prompt and the checklist as JSON."""
    return TASK.prompt.render(**_prompt_fields(prompt, checklist))


def _prompt_fields(prompt: str, checklist: Sequence[ChecklistItem]) -> dict[str, Any]:
    return {"prompt": prompt, "checklist": json.dumps(list(checklist), ensure_ascii=False, indent=1)}


def checklist_chunks(checklist: Sequence[ChecklistItem], size: int | None) -> list[list[ChecklistItem]]:
    """The questions sent per request: the whole checklist at once (SciIR D.2) unless ``size`` is set."""
    if size is None or size >= len(checklist):
        return [list(checklist)]
    return [list(checklist[start : start + size]) for start in range(0, len(checklist), size)]


def build_judge_request(
    prompt: str, checklist: Sequence[ChecklistItem], image_png: bytes | None = None
) -> VLMRequest:
    """One judge request: the image, the original prompt and the whole checklist (without ``image_png``,
    the same request for any image of the sample, to which an image is added)."""
    return TASK.request(
        images=[image_png] if image_png is not None else [],
        context={"prompt": prompt, "checklist": list(checklist)},
        json_schema=judge_reply_schema([str(item["id"]) for item in checklist]),
        **_prompt_fields(prompt, checklist),
    )


def verdict_row(
    item: ChecklistItem,
    model: str,
    sample_id: str,
    *,
    status: str,
    verdict: str | None = None,
    evidence: str | None = None,
    reasoning: str | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """One row of the ``verdicts`` table."""
    return {
        "model": model,
        "sample_id": sample_id,
        "question_id": item["id"],
        "layer": item["layer"],
        "track": item["track"],
        "verdict": verdict,
        "status": status,
        "evidence": evidence,
        "reasoning": reasoning,
        "reason": reason,
    }


def failed_rows(
    checklist: Sequence[ChecklistItem], model: str, sample_id: str, reason: str
) -> list[dict[str, Any]]:
    """Every question of one image marked failed with the same reason (no image, failed request ...)."""
    return [verdict_row(item, model, sample_id, status="failed", reason=reason) for item in checklist]


def _answer_row(item: ChecklistItem, answers: list[Any], model: str, sample_id: str) -> dict[str, Any]:
    """The verdict row of one question from the answers the reply gave for its id."""
    qid = item["id"]
    if not answers:
        return verdict_row(
            item, model, sample_id, status="failed", reason=f"judge reply omitted question {qid}"
        )
    if len(answers) > 1:
        reason = f"judge reply answered question {qid} {len(answers)} times"
        return verdict_row(item, model, sample_id, status="failed", reason=reason)
    answer = answers[0]
    evidence, reasoning = optional_text(answer.get("evidence")), optional_text(answer.get("reasoning"))
    if "verdict" not in answer:
        reason = f"judge answer to question {qid} has no verdict field"
        return verdict_row(item, model, sample_id, status="failed", reason=reason)
    raw = answer["verdict"]
    if raw is None:
        return verdict_row(
            item,
            model,
            sample_id,
            status="abstained",
            evidence=evidence,
            reasoning=reasoning,
            reason=f"judge abstained on question {qid}",
        )
    verdict = raw.strip().lower() if isinstance(raw, str) else None
    if verdict not in ("yes", "no"):
        reason = f"judge gave an unreadable verdict {raw!r} for question {qid}"
        return verdict_row(item, model, sample_id, status="failed", evidence=evidence, reason=reason)
    return verdict_row(
        item, model, sample_id, status="judged", verdict=verdict, evidence=evidence, reasoning=reasoning
    )


def parse_judge_reply(
    result: VLMResult, checklist: Sequence[ChecklistItem], model: str, sample_id: str
) -> ParsedReply:
    """Turn one judge result into one verdict row per checklist question (see the module docstring)."""
    image_id = f"{model}/{sample_id}"
    if not result.ok:
        reason = f"judge request for {image_id} failed: {result.failure}"
        return ParsedReply(failed_rows(checklist, model, sample_id, reason))
    answers = (result.output or {}).get("answers")
    if not isinstance(answers, list):
        reason = f"judge reply for {image_id} has no 'answers' list"
        return ParsedReply(failed_rows(checklist, model, sample_id, reason))
    known = {item["id"] for item in checklist}
    by_id: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    ignored: list[str] = []
    for answer in answers:
        qid = answer.get("id") if isinstance(answer, Mapping) else None
        if not isinstance(qid, str) or qid not in known:
            ignored.append(f"judge reply for {image_id} answered unknown question id {qid!r}: ignored")
            continue
        by_id[qid].append(answer)
    rows = [_answer_row(item, by_id.get(item["id"], []), model, sample_id) for item in checklist]
    return ParsedReply(rows, ignored)


def verdicts_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The ``verdicts`` table from verdict rows, with the contract's columns in order."""
    frame = pd.DataFrame(list(rows), columns=list(VERDICT_COLUMNS))
    return frame.astype({"layer": "int64"})


# ---- offline: the checks rules can make of the image (sciir.tasks.sight_checks)


def answer_items(items: Sequence[JudgeItem], reading: OcrReading, image: bytes) -> list[Answer]:
    """Every question of one image; the diagram is analysed once, and only if a question needs it."""
    diagram = lazy_diagram(image, reading)
    return [answer_item(item, reading, diagram) for item in items]


def answer_by_sight(request: VLMRequest, sight: Sight) -> VLMResult:
    """Spelling by OCR, entities as labels in drawn shapes, relations as arrows; the rest abstained on."""
    return _answer_checklist(request, sight, answer_items)


def _answer_checklist(
    request: VLMRequest, sight: Sight, answer: Callable[..., Sequence[Answer]]
) -> VLMResult:
    return answer_each_question(
        request, sight, JudgeItem, "checklist", answer, "a malformed checklist", "checklist questions"
    )


def answer_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """Spelling checks by OCR only; every other question abstained on."""
    return _answer_checklist(
        request, sight, lambda items, reading, image: [answer_text(item, reading) for item in items]
    )


TASK = ModelTask(
    name=JUDGE_TASK,
    summary="yes/no verdicts with evidence on a generated image's checklist (SciIR D.2)",
    reply_schema=JUDGE_REPLY_SCHEMA,
    answerers={"offline": answer_by_sight, "ocr": answer_by_text},
)
