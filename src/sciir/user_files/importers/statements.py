"""A statement-checklist benchmark: items, each a prompt and the statements a correct image satisfies,
with optional multiple-choice quizzes, into benchmark samples (docs/bring_your_own_benchmark.md,
"Importers").

Every statement becomes a layer-2 yes/no question "Does the image satisfy: <statement>?" (a statement
already worded as a question is kept as it is), ids ``s1``, ``s2``...; a statement that asks for quoted
text to be written (``sciir.tasks.required_text``) also yields a layer-1 text question per string, ids
``s2-text1``..., a string that several statements ask for checked once. Every quiz becomes one yes/no
question 'Judging from the image, is the answer to "<question>" "<correct option>"?', ids ``quiz1``...

The input is a JSON list, JSON Lines or a table (CSV, TSV, parquet), its fields read through
``STATEMENT_FIELDS`` and the user's field map (``field_map``). In a table the rows sharing an id are one
item, its statements one per row or a JSON list in a cell, its quizzes a JSON list in a cell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sciir.tasks.required_text import required_text
from sciir.user_files.benchmark_file import DEFAULT_GROUP, DEFAULT_SETTING, FileQuestion, Sample
from sciir.user_files.importers.common import (
    Imported,
    ImportFileError,
    Record,
    Skipped,
    checked_sample_id,
    grouped,
    is_table,
    layer2_question,
    read_records,
    refuse_duplicate_samples,
    text_question,
    yes_no_question,
)
from sciir.user_files.importers.field_map import (
    FieldMap,
    agreed_text,
    field_name,
    missing_field,
    optional_field_text,
    require_fields,
    required_field_text,
    structured_field,
)

WHAT = "statements file"
STATEMENT_FIELDS = FieldMap(
    {
        "id": ("id", "sample_id", "item_id", "uid"),
        "prompt": ("prompt", "caption", "text", "description", "instruction"),
        "group": ("group", "subject", "domain"),
        "statements": ("checklist", "statements", "requirements", "scoring_points", "criteria"),
        "statement": ("statement", "text", "requirement", "question", "content"),
        "category": ("category",),
        "quizzes": ("quizzes", "quiz", "mcq", "multiple_choice"),
        "question": ("question",),
        "options": ("options", "choices"),
        "answer": ("answer", "correct_answer", "correct"),
    }
)
DEFAULT_CATEGORY = "statement"
DEFAULT_QUIZ_CATEGORY = "quiz"
# An option written with its own label: "A. 30°", "(B) 45°", "C) 60°", "D: none".
_OPTION_LABEL = re.compile(r"^\(?([A-Za-z])[).:]\s+")


def import_statements(
    path: str | Path,
    category: str = DEFAULT_CATEGORY,
    quiz_category: str = DEFAULT_QUIZ_CATEGORY,
    field_map: Mapping[str, str] | None = None,
) -> Imported:
    """The samples of a statement-checklist file; statements get ``category`` unless they name their own,
    quizzes ``quiz_category``; ``field_map`` (role -> field) names fields the built-in spellings miss."""
    path = Path(path)
    fields = STATEMENT_FIELDS.with_user_map(field_map or {}, WHAT)
    imported = Imported()
    table = is_table(path)
    for rows in _items(read_records(path, WHAT, text_columns=fields.names("id")), fields, table):
        sample = _sample(rows, fields, table, (category, quiz_category), imported.skipped)
        if sample is not None:
            imported.samples.append(sample)
    refuse_duplicate_samples(imported.samples)
    return imported


def _items(records: Sequence[Record], fields: FieldMap, table: bool) -> list[list[Record]]:
    """The records of each item, each named with its id: a table's rows sharing an id, else one record."""
    named = [
        Record(
            f"{record.where} (id {required_field_text(record, fields, 'id')!r})", record.fields, record.name
        )
        for record in records
    ]
    if not table:
        return [[record] for record in named]
    return list(grouped(named, lambda record: required_field_text(record, fields, "id")).values())


def _sample(
    rows: Sequence[Record],
    fields: FieldMap,
    table: bool,
    categories: tuple[str, str],
    skipped: list[Skipped],
) -> Sample | None:
    """One item's sample (``categories``: of statements, of quizzes); None (and the reason in
    ``skipped``) when it has nothing to judge."""
    item = rows[0]
    require_fields(item, fields, ("prompt", "statements"))
    statements = [entry for row in rows for entry in _entries(row, fields, "statements", text_ok=table)]
    quizzes = [entry for row in rows for entry in _entries(row, fields, "quizzes", text_ok=False)]
    questions = [
        *_statement_questions(statements, fields, categories[0], skipped),
        *_quiz_questions(quizzes, fields, categories[1], skipped),
    ]
    if not questions:
        skipped.append(Skipped(item.where, "no statements and no quizzes: nothing to judge"))
        return None
    sample_id = required_field_text(item, fields, "id")
    return Sample(
        where=item.where,
        sample_id=checked_sample_id(item.where, field_name(item, fields, "id"), sample_id),
        group=optional_field_text(item, fields, "group") or DEFAULT_GROUP,
        prompts={DEFAULT_SETTING: agreed_text(rows, fields, "prompt")},
        tracks=None,
        questions=tuple(questions),
    )


def _entries(record: Record, fields: FieldMap, role: str, text_ok: bool) -> list[tuple[Record, Any]]:
    """The entries under ``role`` with the record holding them: a list, one object (a list of one), or
    for a table row one text."""
    found = structured_field(record, fields, role)
    if found is None:
        return []
    name, value = found
    if isinstance(value, dict) or (text_ok and isinstance(value, str)):
        return [(record, value)]
    if not isinstance(value, list):
        raise ImportFileError(
            f"{record.where}, field {name!r}: expected a list of {role}, found {type(value).__name__}"
        )
    return [(record, entry) for entry in value]


# ---- statements


def statement_question(statement: str) -> str:
    """The yes/no question of a statement; a statement worded as a question is kept."""
    statement = statement.strip()
    if statement.endswith("?"):
        return statement
    return f"Does the image satisfy: {statement.rstrip('.;')}?"


def _statement_text(where: str, entry: Any, fields: FieldMap, number: int) -> tuple[str | None, str | None]:
    """A statement's text (None when empty) and its own category."""
    if isinstance(entry, str):
        return entry.strip() or None, None
    if not isinstance(entry, dict):
        raise ImportFileError(f"{where}: expected a text or an object, found {type(entry).__name__}")
    statement = Record(where, entry, f"statement {number}")
    require_fields(statement, fields, ("statement",))
    text = optional_field_text(statement, fields, "statement")
    return text, optional_field_text(statement, fields, "category")


def _statement_questions(
    entries: Sequence[tuple[Record, Any]], fields: FieldMap, category: str, skipped: list[Skipped]
) -> list[FileQuestion]:
    questions: list[FileQuestion] = []
    checked: set[str] = set()
    for number, (record, entry) in enumerate(entries, start=1):
        where = f"{record.where}, statement {number}"
        text, own_category = _statement_text(where, entry, fields, number)
        if text is None:
            skipped.append(Skipped(where, "no statement text"))
            continue
        questions.append(layer2_question(f"s{number}", statement_question(text), own_category or category))
        new_texts = [expected for expected in required_text(text) if expected not in checked]
        for index, expected in enumerate(new_texts, start=1):
            questions.append(text_question(f"s{number}-text{index}", expected))
        checked.update(new_texts)
    return questions


# ---- quizzes


def _quiz_questions(
    entries: Sequence[tuple[Record, Any]], fields: FieldMap, category: str, skipped: list[Skipped]
) -> list[FileQuestion]:
    questions = []
    for number, (record, entry) in enumerate(entries, start=1):
        where = f"{record.where}, quiz {number}"
        if not isinstance(entry, dict):
            raise ImportFileError(f"{where}: expected an object, found {type(entry).__name__}")
        quiz = Record(where, entry, f"quiz {number}")
        require_fields(quiz, fields, ("question", "answer"))
        question = required_field_text(quiz, fields, "question")
        options = _options(quiz, fields)
        found = structured_field(quiz, fields, "answer")
        if found is None:
            raise missing_field(quiz, fields, "answer")
        correct = correct_option(options, found[1])
        if correct is None:
            skipped.append(
                Skipped(quiz.where, f"answer {found[1]!r} is not one of its options {list(options.values())}")
            )
            continue
        questions.append(layer2_question(f"quiz{number}", yes_no_question(question, correct), category))
    return questions


def _label(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else str(index + 1)


def _options(quiz: Record, fields: FieldMap) -> dict[str, str]:
    """Label -> option text: a list's options labelled A, B, C... (an option's own "A." label dropped),
    an object's by its keys (keys without an option left out); empty when the quiz has none (its answer
    is then the answer text)."""
    found = structured_field(quiz, fields, "options")
    if found is None:
        return {}
    name, value = found
    if isinstance(value, dict):
        return {str(key).strip(): str(text).strip() for key, text in value.items() if text is not None}
    if not isinstance(value, list):
        raise ImportFileError(
            f"{quiz.where}, field {name!r}: expected a list of options or an object of label -> option"
        )
    options = {}
    for index, option in enumerate(value):
        text = str(option).strip()
        own_label = _OPTION_LABEL.match(text)
        if own_label and own_label.group(1).upper() == _label(index):
            text = text[own_label.end() :]
        options[_label(index)] = text
    return options


def correct_option(options: dict[str, str], answer: Any) -> str | None:
    """The text of the correct option: the answer is an option's text, its label (``B``, ``(B)``, ``b.``)
    or its 0-based position; the answer itself when the quiz has no options; None when it names none."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, float) and answer.is_integer():  # a position in a table column with gaps
        answer = int(answer)
    texts = list(options.values())
    if isinstance(answer, int):
        return texts[answer] if 0 <= answer < len(texts) else None
    answer = str(answer).strip()
    if not options:
        return answer or None
    for text in texts:
        if text.casefold() == answer.casefold():
            return text
    label = answer.strip("()").rstrip(".):").strip().upper()
    by_label = {key.upper(): text for key, text in options.items()}
    return by_label.get(label)
