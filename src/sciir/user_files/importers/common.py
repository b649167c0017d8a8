"""What every importer shares: the input read as records, yes/no questions from answered questions, and
the benchmark file (JSON Lines) written from the samples. Which field holds what is ``field_map``'s.

Samples and questions are ``sciir.user_files.benchmark_file``'s own types, written in the form its reader reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from sciir.aibench.choices import ChoiceQuestion
from sciir.user_files.benchmark_file import DEFAULT_GROUP, DEFAULT_SETTING, SAFE_ID, FileQuestion, Sample
from sciir.user_files.table_files import (
    PARQUET_SUFFIXES,
    TEXT_SUFFIXES,
    TableFile,
    TableFileError,
)

# Keys under which a JSON file may wrap its list of items ({"data": [...]}, as exported datasets do).
WRAPPING_KEYS = ("items", "data")


class ImportFileError(ValueError):
    """An input that cannot be imported as it is; the message names the file, the item and the field."""


@dataclass(frozen=True)
class Record:
    """One item of an input file, where it is (``<what> <path>, line 3``) and what it is called (``line
    3``, ``item 2``, ``quiz 1``), for messages."""

    where: str
    fields: Mapping[str, Any]
    name: str = "the item"


@dataclass(frozen=True)
class Skipped:
    """Something of the input left out of the benchmark (an item, a question, a dependency) and why."""

    where: str
    reason: str


@dataclass
class Imported:
    """The samples converted from an input, what was left out, and what the user should know of the
    conversion (``notes``, printed once: what the source said about its items, such as a checklist
    writer's notes on what it did not write, or how long the prompts are)."""

    samples: list[Sample] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---- reading


def read_records(path: Path, what: str, text_columns: Sequence[str] = ()) -> list[Record]:
    """The items of a JSON (a list, or an object wrapping one under ``items`` / ``data``), JSON Lines, CSV,
    TSV or parquet file; ``text_columns`` of a table are read as text (ids stay ``007``, not 7)."""
    label = f"{what} {path}"
    if not path.is_file():
        raise ImportFileError(f"{label} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".json":
        return _json_records(path, label)
    if suffix == ".jsonl":
        return _jsonl_records(path, label)
    if is_table(path):
        table_file = TableFile(path, what)
        try:
            table = table_file.read([], text_columns=text_columns)
        except TableFileError as error:
            raise ImportFileError(str(error)) from None
        rows = cast("list[dict[str, Any]]", table.to_dict("records"))  # a file's columns are named by text
        return [
            Record(f"{label}, {table_file.row(int(index))}", row, table_file.row(int(index)))
            for index, row in zip(table.index, rows, strict=True)
        ]
    raise ImportFileError(
        f"{label}: unknown format {path.suffix!r} (expected .json, .jsonl, .csv, .tsv or .parquet)"
    )


def _parsed_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ImportFileError(
            f"{where}: not JSON ({error.msg} at line {error.lineno}, column {error.colno})"
        ) from None


def _json_records(path: Path, label: str) -> list[Record]:
    items = _parsed_json(path.read_text(encoding="utf-8"), label)
    if isinstance(items, dict):
        wrapped = [key for key in WRAPPING_KEYS if isinstance(items.get(key), list)]
        if not wrapped:
            raise ImportFileError(
                f"{label}: expected a JSON list of items, or an object holding one under "
                f"{' or '.join(map(repr, WRAPPING_KEYS))} (keys found: {sorted(items)[:10]})"
            )
        items = items[wrapped[0]]
    if not isinstance(items, list):
        raise ImportFileError(f"{label}: expected a JSON list of items, found {type(items).__name__}")
    return [_object_record(label, f"item {number}", item) for number, item in enumerate(items, start=1)]


def _jsonl_records(path: Path, label: str) -> list[Record]:
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            records.append(
                _object_record(label, f"line {number}", _parsed_json(line, f"{label}, line {number}"))
            )
    return records


def _object_record(label: str, name: str, item: Any) -> Record:
    if not isinstance(item, dict):
        raise ImportFileError(f"{label}, {name}: expected a JSON object, found {type(item).__name__}")
    return Record(f"{label}, {name}", item, name)


def is_table(path: Path) -> bool:
    """Whether ``read_records`` reads ``path`` as a table (CSV, TSV, parquet): one row per record."""
    return path.suffix.lower() in TEXT_SUFFIXES or path.suffix.lower() in PARQUET_SUFFIXES


def grouped(records: Iterable[Record], key: Callable[[Record], str]) -> dict[str, list[Record]]:
    """Records by ``key`` (e.g. the caption id of TIFA's question rows), in the order first seen."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return groups


# ---- values


def id_text(value: Any) -> str:
    """A value as text; a whole number read as a float (``3.0`` from a table) as ``3``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def checked_sample_id(where: str, field_name: str, sample_id: str) -> str:
    """The sample id, or an error: it names image files (``<model>/<sample_id>.png``)."""
    if not SAFE_ID.match(sample_id):
        raise ImportFileError(
            f"{where}, field {field_name!r}: {sample_id!r} cannot name an image file (letters, digits, '_', "
            "'-' and '.' only, not starting with '.' or '-')"
        )
    return sample_id


# ---- questions


def yes_no_question(question: str, answer: str) -> str:
    """A yes/no question from a question and its correct answer: "yes" when the image gives that answer."""
    return f'Judging from the image, is the answer to "{question.strip()}" "{answer.strip()}"?'


def source_group(sample_id: str) -> str:
    """The source dataset an id names before its first ``_`` (TIFA's ``coco_301091``, DSG's ``whoops_5``)."""
    prefix, separator, _ = sample_id.partition("_")
    return prefix if separator and prefix else DEFAULT_GROUP


def layer2_question(
    question_id: str, text: str, category: str, parent_ids: Sequence[str] = ()
) -> FileQuestion:
    """A yes/no question judged by looking (layer 2), positive: "yes" means the image is right."""
    return FileQuestion(
        id=question_id,
        text=text,
        layer=2,
        category=category,
        expected_text=None,
        parent_ids=tuple(parent_ids),
        polarity="positive",
    )


def text_question(question_id: str, expected_text: str) -> FileQuestion:
    """A layer-1 question checking that ``expected_text`` is written with exactly this spelling (the
    wording of SciIR's own checklists, ``sciir.tasks.checklist``)."""
    return FileQuestion(
        id=question_id,
        text=f'Is the text "{expected_text}" rendered with exactly this spelling?',
        layer=1,
        category="text",
        expected_text=expected_text,
        parent_ids=(),
        polarity="positive",
    )


# ---- writing


def sample_record(sample: Sample) -> dict[str, Any]:
    """One line of the benchmark file: ``prompt`` for a sample of the default setting, else ``prompts``."""
    record: dict[str, Any] = {"sample_id": sample.sample_id, "group": sample.group}
    if list(sample.prompts) == [DEFAULT_SETTING]:
        record["prompt"] = sample.prompts[DEFAULT_SETTING]
    else:
        record["prompts"] = dict(sample.prompts)
    if sample.tracks is not None:
        record["tracks"] = list(sample.tracks)
    record["questions"] = [_question_record(question) for question in sample.questions]
    if sample.choices:
        record["choice_questions"] = [_choice_record(choice) for choice in sample.choices]
    return record


def _choice_record(choice: ChoiceQuestion) -> dict[str, Any]:
    return {
        "id": choice.id,
        "text": choice.text,
        "level": choice.level,
        "options": dict(choice.options),
        "answer": choice.answer,
    }


def _question_record(question: FileQuestion) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": question.id,
        "text": question.text,
        "layer": question.layer,
        "category": question.category,
    }
    if question.expected_text is not None:
        record["expected_text"] = question.expected_text
    record["parent_ids"] = list(question.parent_ids)
    record["polarity"] = question.polarity
    return record


def write_benchmark(samples: Sequence[Sample], path: Path) -> None:
    """The samples as a benchmark file (JSON Lines, one sample a line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (json.dumps(sample_record(sample), ensure_ascii=False) + "\n" for sample in samples)
    path.write_text("".join(lines), encoding="utf-8")


def refuse_duplicate_samples(samples: Sequence[Sample]) -> None:
    """An error naming both places when two items of the input carry the same id."""
    seen: dict[str, str] = {}
    for sample in samples:
        if sample.sample_id in seen:
            raise ImportFileError(
                f"{sample.where}: id {sample.sample_id!r} is already used at {seen[sample.sample_id]}"
            )
        seen[sample.sample_id] = sample.where
