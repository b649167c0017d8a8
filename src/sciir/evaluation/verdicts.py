"""Verdict tables from elsewhere: the parent ids of each question (from the checklists), and another system's
verdicts read from a file (CSV, TSV or parquet), each row checked and every problem named by file, row and
column; an unreadable verdict or a question answered twice is a failed row with its reason.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from sciir.tasks.judge import VERDICT_COLUMNS, optional_text
from sciir.user_files.table_files import TableFile, id_list, is_missing

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
    merged[PARENT_IDS] = merged[PARENT_IDS].map(lambda value: "[]" if optional_text(value) is None else value)
    return merged


def read_verdict_value(value: Any) -> str | None:
    """ "yes" / "no" from a file's verdict cell (yes/no, true/false, 1/0 in any case); None when empty.

    Raises ValueError for any other value, so the caller records the row as failed.
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = optional_text(value)
    if text is None or not text.strip():
        return None
    word = text.strip().lower()
    if word in _YES_WORDS:
        return "yes"
    if word in _NO_WORDS:
        return "no"
    raise ValueError(f"unreadable verdict {value!r} (expected yes/no, true/false, 1/0, or empty to abstain)")


def _file_row(record: Mapping[Hashable, Any], where: str) -> dict[str, Any]:
    """Verdict, status and reason of one file row (evidence and reasoning kept when the file has them)."""
    row = {
        "evidence": optional_text(record.get("evidence")),
        "reasoning": optional_text(record.get("reasoning")),
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
        "reason": optional_text(record.get("reason")) or f"{where}: no verdict",
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
