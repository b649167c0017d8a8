"""A benchmark brought from outside: its prompts and checklists in one file, read into the ``benchmark``
and ``checklists`` tables that evaluate uses (docs/bring_your_own_benchmark.md).

JSON Lines (``.jsonl``), one sample per line::

    {"sample_id": "incline-01", "group": "mechanics",
     "prompts": {"instruction_following": "Draw a block on an incline ...", "reasoning": "..."},
     "questions": [
       {"id": "q1", "text": "Is the label \"F_N\" spelled exactly?", "layer": 1, "expected_text": "F_N"},
       {"id": "q2", "text": "Does the normal force point away from the surface?", "category": "forces",
        "parent_ids": ["q1"], "polarity": "positive"}]}

``prompt`` (one text, setting ``default``) may stand for ``prompts``; ``group`` is optional; ``tracks``
(optional) lists the categories a sample's overall result requires (default: the categories of its
layer-2 questions). A question has ``id`` and ``text``; ``layer`` 1 (exact text, the default when it
has ``expected_text``) or 2; ``category`` (or ``track``; any name, ``text`` for layer 1); optional
``expected_text``, ``parent_ids`` (questions of the same sample it depends on) and ``polarity``
(``positive``, or ``negative`` for a fault that must be absent).

A sample may also hold multiple-choice questions, asked of the AIBench solver rather than the checklist
judge and scored per AIBench level (``sciir.aibench.choices``); ``questions`` may then be left out::

    {"sample_id": "CVPR_2025__2506.07857v1", "group": "CVPR_2025", "prompt": "Draw ...",
     "choice_questions": [{"id": "q1", "text": "Which module ...?", "level": 1,
                           "options": {"A": "Encoder", "B": "..."}, "answer": "A"}]}

A table (``.csv``, ``.tsv``, ``.parquet``) holds the same with one row per question: columns sample_id,
question_id, question, and ``prompt`` or one ``prompt:<setting>`` column per setting; optional group,
tracks, layer, category, expected_text, parent_ids (JSON list) and polarity. Sample fields repeat on
each of its rows and must agree.

A sample with prompts in several settings becomes one benchmark item per setting, ``<sample_id>__<setting>``
(so its images are ``<model>/<sample_id>__<setting>.png``), each with the sample's checklist. Group,
setting and category names are free: SciIR's own are checked where SciIR-Bench is built (bench_select).
Every error names the file, the line or row and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, SupportsInt, cast

import pandas as pd

from sciir.aibench.choices import ChoiceQuestion, choice_problem, choice_rows, level_number
from sciir.aibench.questions import QA_COLUMNS
from sciir.runs.results_folder import benchmark_name
from sciir.selection.benchmark import BENCHMARK_COLUMNS
from sciir.tasks.annotation import CHECKLIST_COLUMNS
from sciir.user_files.table_files import (
    PARQUET_SUFFIXES,
    TEXT_SUFFIXES,
    TableFile,
    TableFileError,
    id_list,
    is_missing,
)

DEFAULT_SETTING = "default"
DEFAULT_GROUP = "all"
SETTING_SEPARATOR = "__"
PROMPT_COLUMN_PREFIX = "prompt:"
POLARITIES = ("positive", "negative")
# A sample id becomes a file name (<model>/<sample_id>.png): no separators, no leading dot.
SAFE_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")


class BenchmarkFileError(ValueError):
    """A benchmark file that cannot be used as it is; the message names the file, where and why."""


@dataclass(frozen=True)
class FileQuestion:
    id: str
    text: str
    layer: int
    category: str
    expected_text: str | None
    parent_ids: tuple[str, ...]
    polarity: str


@dataclass(frozen=True)
class Sample:
    """One sample of the file: ``where`` it is (for messages), its prompts by setting, its checklist."""

    where: str
    sample_id: str
    group: str
    prompts: Mapping[str, str]
    tracks: tuple[str, ...] | None
    questions: tuple[FileQuestion, ...]
    choices: tuple[ChoiceQuestion, ...] = ()


@dataclass(frozen=True)
class BenchmarkTables:
    """A benchmark read from a file: its ``name`` (the file's stem), the file's ``sha256`` and the tables
    evaluate reads (columns as in docs/data_contract.md): the benchmark, the checklists the judge answers
    and the multiple-choice questions the AIBench solver answers (``aibench_qa``'s columns)."""

    name: str
    sha256: str
    benchmark: pd.DataFrame
    checklists: pd.DataFrame
    choice_questions: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(QA_COLUMNS)))


def read_benchmark_file(path: str | Path, setting: str = "evaluate.benchmark") -> BenchmarkTables:
    """The benchmark and checklists of a JSONL / CSV / TSV / parquet benchmark file; BenchmarkFileError
    naming the file, the line or row and the field when something is wrong (a missing file, also the
    ``setting`` that names it)."""
    path = Path(path)
    samples = read_samples(path, setting)
    return BenchmarkTables(
        name=benchmark_name(path),
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        benchmark=pd.DataFrame(_benchmark_rows(samples), columns=list(BENCHMARK_COLUMNS)),
        checklists=pd.DataFrame(_checklist_rows(samples), columns=list(CHECKLIST_COLUMNS)),
        choice_questions=pd.DataFrame(_choice_rows(samples), columns=list(QA_COLUMNS)).astype(
            {"level": "int64"}
        ),
    )


def read_samples(path: str | Path, setting: str = "evaluate.benchmark") -> list[Sample]:
    """The samples of a benchmark file, checked as ``read_benchmark_file`` checks them (BenchmarkFileError)."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkFileError(f"benchmark file {path} does not exist ({setting})")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        samples = list(_jsonl_samples(path))
    elif suffix in TEXT_SUFFIXES or suffix in PARQUET_SUFFIXES:
        samples = list(_table_samples(path))
    else:
        raise BenchmarkFileError(
            f"benchmark file {path}: unknown format {path.suffix!r} (expected .jsonl, .csv, .tsv or .parquet)"
        )
    if not samples:
        raise BenchmarkFileError(f"benchmark file {path} holds no sample")
    _refuse_duplicate_ids(path, samples)
    return samples


def sample_questions(where: str, records: list[Any]) -> tuple[FileQuestion, ...]:
    """A sample's questions from their JSON records, checked as the reader checks a file's (fields, unique ids,
    parents among them); BenchmarkFileError naming ``where`` and the question."""
    return _checked_parents(
        where, [_question(f"{where}, question {i + 1}", q) for i, q in enumerate(records)]
    )


# ---- JSON Lines


def _jsonl_samples(path: Path) -> Iterator[Sample]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"benchmark file {path}, line {number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise BenchmarkFileError(f"{where}: not JSON ({error.msg} at column {error.colno})") from None
        if not isinstance(record, dict):
            raise BenchmarkFileError(f"{where}: expected a JSON object, found {type(record).__name__}")
        questions = record.get("questions", [])
        choices = record.get("choice_questions", [])
        if not isinstance(questions, list) or not isinstance(choices, list) or not questions + choices:
            raise BenchmarkFileError(
                f"{where}, field 'questions': expected a non-empty list of questions (or of "
                "'choice_questions')"
            )
        sample = _sample(where, record, list(sample_questions(where, questions)))
        choice_questions = [_choice(f"{where}, choice question {i + 1}", q) for i, q in enumerate(choices)]
        yield replace(sample, choices=_checked_choices(where, sample.questions, choice_questions))


def _sample(where: str, record: Mapping[str, Any], questions: list[FileQuestion]) -> Sample:
    """A sample from its fields (a JSON object, or one table row's sample columns)."""
    sample_id = _text(where, record, "sample_id")
    if not SAFE_ID.match(sample_id):
        raise BenchmarkFileError(
            f"{where}, field 'sample_id': {sample_id!r} cannot name an image file (letters, digits, '_', "
            "'-' and '.' only, not starting with '.' or '-')"
        )
    cell = record.get("tracks")
    tracks: list[str] | None = None
    if not is_missing(cell):
        tracks = id_list(cell)
        if tracks is None:
            raise BenchmarkFileError(f"{where}, field 'tracks': expected a list of category names")
    group = record.get("group")
    return Sample(
        where=where,
        sample_id=sample_id,
        group=DEFAULT_GROUP if is_missing(group) else str(group),
        prompts=_prompts(where, record),
        tracks=None if tracks is None else tuple(tracks),
        questions=_checked_parents(where, questions),
    )


def _prompts(where: str, record: Mapping[str, Any]) -> dict[str, str]:
    prompts = record.get("prompts")
    if prompts is None or prompts == {}:
        return {DEFAULT_SETTING: _text(where, record, "prompt")}
    if not isinstance(prompts, dict):
        raise BenchmarkFileError(f"{where}, field 'prompts': expected an object of setting -> prompt")
    for setting, prompt in prompts.items():
        if not isinstance(prompt, str) or not prompt.strip() or not SAFE_ID.match(str(setting)):
            raise BenchmarkFileError(
                f"{where}, field 'prompts': setting {setting!r} needs a non-empty prompt and a name of "
                "letters, digits, '_', '-' or '.'"
            )
    return {str(setting): prompt for setting, prompt in prompts.items()}


def _question(where: str, record: Any) -> FileQuestion:
    if not isinstance(record, dict):
        raise BenchmarkFileError(f"{where}: expected a JSON object, found {type(record).__name__}")
    expected = record.get("expected_text")
    expected = None if is_missing(expected) else str(expected)
    layer = record.get("layer")
    layer = (1 if expected is not None else 2) if is_missing(layer) else layer
    if layer not in (1, 2, "1", "2", 1.0, 2.0):
        raise BenchmarkFileError(f"{where}, field 'layer': expected 1 (exact text) or 2, found {layer!r}")
    layer = int(layer)
    category = record.get("category", record.get("track"))
    category = ("text" if layer == 1 else "other") if is_missing(category) else str(category)
    parents = record.get("parent_ids")
    parent_ids = [] if is_missing(parents) else id_list(parents)
    if parent_ids is None:
        raise BenchmarkFileError(f"{where}, field 'parent_ids': expected a list of question ids")
    polarity = record.get("polarity")
    polarity = "positive" if is_missing(polarity) else str(polarity)
    if polarity not in POLARITIES:
        raise BenchmarkFileError(
            f"{where}, field 'polarity': expected positive or negative, found {polarity!r}"
        )
    return FileQuestion(
        id=_text(where, record, "id"),
        text=_text(where, record, "text"),
        layer=layer,
        category=category,
        expected_text=expected,
        parent_ids=tuple(parent_ids),
        polarity=polarity,
    )


def _choice(where: str, record: Any) -> ChoiceQuestion:
    if not isinstance(record, dict):
        raise BenchmarkFileError(f"{where}: expected a JSON object, found {type(record).__name__}")
    problem = choice_problem(record.get("level"), record.get("options"), record.get("answer"))
    level = level_number(record.get("level"))
    if problem is not None or level is None:
        raise BenchmarkFileError(f"{where}: {problem}")
    return ChoiceQuestion(
        id=_text(where, record, "id"),
        text=_text(where, record, "text"),
        level=level,
        options={str(letter): str(text).strip() for letter, text in record["options"].items()},
        answer=str(record["answer"]).strip(),
    )


def _checked_choices(
    where: str, questions: tuple[FileQuestion, ...], choices: list[ChoiceQuestion]
) -> tuple[ChoiceQuestion, ...]:
    """The choice questions, refusing an id used twice in the sample (by either kind of question)."""
    ids = [question.id for question in questions] + [choice.id for choice in choices]
    duplicated = sorted({qid for qid in ids if ids.count(qid) > 1})
    if duplicated:
        raise BenchmarkFileError(f"{where}: question ids {duplicated} appear more than once")
    return tuple(choices)


def _text(where: str, record: Mapping[str, Any], field: str) -> str:
    value = record.get(field)
    if is_missing(value) or isinstance(value, dict | list):
        raise BenchmarkFileError(f"{where}, field {field!r}: expected a non-empty text")
    return str(value).strip()


def _checked_parents(where: str, questions: list[FileQuestion]) -> tuple[FileQuestion, ...]:
    ids = [question.id for question in questions]
    duplicated = sorted({qid for qid in ids if ids.count(qid) > 1})
    if duplicated:
        raise BenchmarkFileError(f"{where}: question ids {duplicated} appear more than once")
    for question in questions:
        unknown = [parent for parent in question.parent_ids if parent not in ids]
        if unknown:
            raise BenchmarkFileError(
                f"{where}, question {question.id!r}, field 'parent_ids': {unknown} are not questions of "
                "this sample"
            )
    return tuple(questions)


# ---- tables: one row per question


_QUESTION_FIELDS = {"question_id": "id", "question": "text"}


def _table_samples(path: Path) -> Iterator[Sample]:
    file = TableFile(path, "benchmark file")
    try:
        table = file.read(["sample_id", "question_id", "question"], text_columns=["sample_id", "question_id"])
    except TableFileError as error:
        raise BenchmarkFileError(str(error)) from None
    prompt_columns = [c for c in table.columns if c == "prompt" or str(c).startswith(PROMPT_COLUMN_PREFIX)]
    if not prompt_columns:
        raise BenchmarkFileError(
            f"{file.label}: no prompt column ('prompt', or one 'prompt:<setting>' column per setting; "
            f"columns found: {list(table.columns)})"
        )
    for sample_id, rows in table.groupby("sample_id", sort=False):
        first = int(rows.index[0])
        where = f"{file.label}, {file.row(first)} (sample {sample_id!r})"
        sample_fields = _agreed_sample_fields(file, rows, prompt_columns)
        questions = [  # a table read from a file keeps its RangeIndex: a row's label is an int
            _question(f"{file.label}, {file.row(int(cast(SupportsInt, index)))}", _question_record(row))
            for index, row in rows.iterrows()
        ]
        yield _sample(where, sample_fields, questions)


def _question_record(row: pd.Series) -> dict[str, Any]:
    """A question's fields from its table row (``question_id`` -> ``id``, ``question`` -> ``text``)."""
    return {_QUESTION_FIELDS.get(str(column), str(column)): value for column, value in row.items()}


def _agreed_sample_fields(file: TableFile, rows: pd.DataFrame, prompt_columns: list[str]) -> dict[str, Any]:
    """The sample's fields from its rows, refusing rows of one sample that disagree."""
    fields: dict[str, Any] = {"sample_id": str(rows["sample_id"].iloc[0])}
    prompts: dict[str, str] = {}
    for column in [*prompt_columns, "group", "tracks"]:
        if column not in rows.columns:
            continue
        values = {str(value) for value in rows[column] if not is_missing(value)}
        if len(values) > 1:
            raise BenchmarkFileError(
                f"{file.label}, sample {fields['sample_id']!r}, column {column!r}: its rows disagree "
                f"({sorted(values)[:3]})"
            )
        value = values.pop() if values else None
        if column == "prompt":
            fields["prompt"] = value
        elif column.startswith(PROMPT_COLUMN_PREFIX):
            if value is not None:
                prompts[column[len(PROMPT_COLUMN_PREFIX) :]] = value
        else:
            fields[column] = value
    if prompts:
        fields["prompts"] = prompts
    return fields


# ---- into evaluate's tables


def _refuse_duplicate_ids(path: Path, samples: list[Sample]) -> None:
    seen: dict[str, str] = {}
    for sample in samples:
        for item_id in _item_ids(sample):
            if item_id in seen:
                raise BenchmarkFileError(
                    f"{sample.where}: sample id {item_id!r} already used at {seen[item_id]}"
                )
            seen[item_id] = sample.where


def _item_ids(sample: Sample) -> dict[str, str]:
    """Benchmark item id -> setting: the sample id itself when it has one prompt, else one per setting."""
    if len(sample.prompts) == 1:
        return {sample.sample_id: next(iter(sample.prompts))}
    return {f"{sample.sample_id}{SETTING_SEPARATOR}{setting}": setting for setting in sample.prompts}


def _required_tracks(sample: Sample) -> list[str]:
    if sample.tracks is not None:
        return list(sample.tracks)
    return sorted({q.category for q in sample.questions if q.layer == 2})


def _benchmark_rows(samples: list[Sample]) -> Iterator[dict[str, Any]]:
    for sample in samples:
        for item_id, setting in _item_ids(sample).items():
            yield {
                "sample_id": item_id,
                "group": sample.group,
                "setting": setting,
                "tracks": json.dumps(_required_tracks(sample)),
                "term_count": None,
                "prompt": sample.prompts[setting],
                "plan": None,
            }


def _choice_rows(samples: list[Sample]) -> Iterator[dict[str, Any]]:
    for sample in samples:
        for item_id in _item_ids(sample):
            yield from choice_rows(item_id, sample.choices)


def _checklist_rows(samples: list[Sample]) -> Iterator[dict[str, Any]]:
    for sample in samples:
        for item_id in _item_ids(sample):
            for question in sample.questions:
                yield {
                    "sample_id": item_id,
                    "question_id": question.id,
                    "layer": question.layer,
                    "track": question.category,
                    "kind": "text" if question.layer == 1 and question.expected_text else None,
                    "polarity": question.polarity,
                    "about": json.dumps([question.expected_text]) if question.expected_text else None,
                    "question": question.text,
                    "expected_text": question.expected_text,
                    "parent_ids": json.dumps(list(question.parent_ids)),
                }
