"""The judge protocol of SciIR appendix D.2: one request per image, one verdict row per checklist question.

The reviewer receives the generated image, the original prompt and the whole checklist as JSON,
and for every question locates the visual evidence, gives one sentence of reasoning and a binary
verdict. A reply is parsed strictly: a question the reply leaves out, answers twice or answers with
an unreadable verdict becomes a ``failed`` row with its reason; a ``null`` verdict is an abstention;
an id the checklist does not hold is ignored and reported. Nothing is ever filled in as "yes" or "no".
"""

from __future__ import annotations

import copy
import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.prompts import prompt_template
from sciir.user_files.table_files import TableFile, id_list, is_missing

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


def _optional_text(value: Any) -> str | None:
    """A string, or None for the missing values pandas uses (None, NaN, NA)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return str(value)


# Structured question fields (docs/data_contract.md): sent to the judge when the checklists have them.
STRUCTURED_FIELDS = ("kind", "polarity", "about")


def _structured(row: Mapping[str, Any]) -> dict[str, Any]:
    """kind, polarity and about (a JSON list in the table) of one checklist row, those it has."""
    fields: dict[str, Any] = {}
    for name in STRUCTURED_FIELDS:
        value = _optional_text(row.get(name))
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
            "expected_text": _optional_text(row["expected_text"]),
        }
        | _structured(row)
        for row in questions.to_dict("records")
    ]


def render_judge_prompt(prompt: str, checklist: Sequence[ChecklistItem]) -> str:
    """The reviewer prompt for one image: the original prompt and the checklist as JSON."""
    return prompt_template(JUDGE_TASK).render(
        prompt=prompt, checklist=json.dumps(list(checklist), ensure_ascii=False, indent=1)
    )


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
    return VLMRequest(
        task=JUDGE_TASK,
        prompt=render_judge_prompt(prompt, checklist),
        images=[image_png] if image_png is not None else [],
        json_schema=judge_reply_schema([str(item["id"]) for item in checklist]),
        context={"prompt": prompt, "checklist": list(checklist)},
        template_version=prompt_template(JUDGE_TASK).version,
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


def failed_rows(checklist: Sequence[ChecklistItem], model: str, sample_id: str, reason: str) -> list[dict]:
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
    evidence, reasoning = _optional_text(answer.get("evidence")), _optional_text(answer.get("reasoning"))
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


# ---- verdict tables from elsewhere: parent ids, and other systems' verdicts read from a file

PARENT_IDS = "parent_ids"
# Layer of a file's question that no checklist holds: not a SciIR question, scored in ``final`` only.
UNKNOWN_LAYER = 0
UNKNOWN_TRACK = "other"
_YES_WORDS = frozenset({"yes", "true", "1", "1.0"})
_NO_WORDS = frozenset({"no", "false", "0", "0.0"})
REQUIRED_FILE_COLUMNS = ("sample_id", "question_id", "verdict")
# Read as text from a CSV, so an id "01" stays "01".
TEXT_FILE_COLUMNS = ("model", "sample_id", "question_id", "parent_ids", "track")
PARENT_IDS_FORM = 'a JSON list of question ids of the same sample, e.g. ["q1", "q2"] ([] or empty when none)'


def with_parent_ids(verdicts: pd.DataFrame, checklists: pd.DataFrame) -> pd.DataFrame:
    """``verdicts`` plus the ``parent_ids`` (JSON list) of each question from the checklists ("[]" if none)."""
    parents = checklists[["sample_id", "question_id", PARENT_IDS]].drop_duplicates(
        ["sample_id", "question_id"]
    )
    merged = verdicts.drop(columns=[PARENT_IDS], errors="ignore").merge(
        parents, on=["sample_id", "question_id"], how="left"
    )
    merged[PARENT_IDS] = merged[PARENT_IDS].map(
        lambda value: "[]" if _optional_text(value) is None else value
    )
    return merged


def read_verdict_value(value: Any) -> str | None:
    """ "yes" / "no" from a file's verdict cell (yes/no, true/false, 1/0 in any case); None when empty.

    Raises ValueError for any other value, so the caller records the row as failed.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = _optional_text(value)
    if text is None or not text.strip():
        return None
    word = text.strip().lower()
    if word in _YES_WORDS:
        return "yes"
    if word in _NO_WORDS:
        return "no"
    raise ValueError(f"unreadable verdict {value!r} (expected yes/no, true/false, 1/0, or empty to abstain)")


def _file_row(record: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Verdict, status and reason of one file row (evidence and reasoning kept when the file has them)."""
    row = {
        "evidence": _optional_text(record.get("evidence")),
        "reasoning": _optional_text(record.get("reasoning")),
    }
    try:
        verdict = read_verdict_value(record["verdict"])
    except ValueError as exc:
        return row | {"verdict": None, "status": "failed", "reason": f"{where}: {exc}"}
    if verdict is not None:
        return row | {"verdict": verdict, "status": "judged", "reason": None}
    status = "failed" if record.get("status") == "failed" else "abstained"
    return row | {
        "verdict": None,
        "status": status,
        "reason": _optional_text(record.get("reason")) or f"{where}: no verdict",
    }


def _question_fields(frame: pd.DataFrame, checklists: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with layer, track and parent_ids: the file's own, else the checklists', else unknown."""
    known = checklists[["sample_id", "question_id", "layer", "track", PARENT_IDS]].drop_duplicates(
        ["sample_id", "question_id"]
    )
    merged = frame.merge(known, on=["sample_id", "question_id"], how="left", suffixes=("", "_checklist"))
    for column, unknown in (("layer", UNKNOWN_LAYER), ("track", UNKNOWN_TRACK), (PARENT_IDS, "[]")):
        merged[column] = merged[column].where(merged[column].notna(), merged.pop(f"{column}_checklist"))
        merged[column] = merged[column].where(merged[column].notna(), unknown)
    merged[PARENT_IDS] = merged[PARENT_IDS].map(
        lambda value: value if isinstance(value, str) else json.dumps(list(value))
    )
    return merged.astype({"layer": "int64"})


def _refuse_malformed(frame: pd.DataFrame, file: TableFile) -> None:
    """TableFileError for an empty id, a malformed ``parent_ids`` or a non-integer ``layer`` cell."""
    for column in ("sample_id", "question_id"):
        file.refuse(frame, column, lambda value: not is_missing(value), f"a non-empty {column}")
    if PARENT_IDS in frame.columns:
        file.refuse(
            frame, PARENT_IDS, lambda value: is_missing(value) or id_list(value) is not None, PARENT_IDS_FORM
        )
    if "layer" in frame.columns:
        file.refuse(
            frame,
            "layer",
            lambda value: is_missing(value) or float(pd.to_numeric(value, errors="coerce")).is_integer(),
            "an integer layer (1 text, 2 track), or empty to take it from the checklists",
        )


def external_verdicts(
    frame: pd.DataFrame, checklists: pd.DataFrame, source: str, file: TableFile | None = None
) -> pd.DataFrame:
    """A verdicts table (``VERDICT_COLUMNS`` + ``parent_ids``) from another system's verdict table.

    Required columns: sample_id, question_id, verdict; optional: model (default ``source``), parent_ids,
    layer, track (taken from the checklists when absent), status, evidence, reasoning, reason. An empty
    verdict is an abstention; an unreadable one, or a question answered twice, a failed row with its reason.
    ``file`` (default: the table named ``source``) names rows in reasons and errors; a missing column, an
    empty id, a malformed parent_ids or layer cell raises TableFileError naming row, column and value.
    """
    file = file or TableFile(Path(source), "verdicts table")
    file.require(frame, REQUIRED_FILE_COLUMNS)
    _refuse_malformed(frame, file)
    where = [file.cell(int(index), "verdict") for index in frame.index]
    frame = frame.reset_index(drop=True)
    if "model" not in frame.columns:
        frame = frame.assign(model=source)
    frame = frame.astype({"model": str, "sample_id": str, "question_id": str})
    rows = [
        {"model": record["model"], "sample_id": record["sample_id"], "question_id": record["question_id"]}
        | _file_row(record, where[index])
        for index, record in enumerate(frame.to_dict("records"))
    ]
    table = pd.DataFrame(rows, index=frame.index, columns=[*VERDICT_COLUMNS])
    for column in ("layer", "track", PARENT_IDS):
        table[column] = frame[column] if column in frame.columns else None
    repeated = table.duplicated(["model", "sample_id", "question_id"], keep=False)
    table.loc[repeated, ["verdict", "status"]] = [None, "failed"]
    table.loc[repeated, "reason"] = (
        f"{source}: the question is answered more than once for this model and sample"
    )
    table = _question_fields(table, checklists)
    return table[[*VERDICT_COLUMNS, PARENT_IDS]]


def read_verdicts_file(path: Path, checklists: pd.DataFrame, benchmark: pd.DataFrame | None) -> pd.DataFrame:
    """``external_verdicts`` of a CSV / TSV / parquet file (model defaults to the file name's stem).

    With a non-empty ``benchmark``, a row whose sample_id is no benchmark sample raises TableFileError
    naming the file, its line and the value.
    """
    file = TableFile(path, "verdicts file")
    frame = file.read(REQUIRED_FILE_COLUMNS, text_columns=TEXT_FILE_COLUMNS)
    if benchmark is not None and not benchmark.empty:
        samples = set(benchmark["sample_id"].astype(str))
        file.refuse_unknown(frame, "sample_id", samples, "the sample_id of a benchmark sample")
    return external_verdicts(frame, checklists, source=path.stem, file=file)
