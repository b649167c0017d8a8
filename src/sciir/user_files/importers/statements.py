"""A statement-checklist benchmark: items, each a prompt and the statements a correct image satisfies,
with optional multiple-choice quizzes, into benchmark samples (docs/bring_your_own_benchmark.md,
"Importers").

Every statement becomes a layer-2 yes/no question "Does the image satisfy: <statement>?" (a statement
already worded as a question is kept as it is), ids ``s1``, ``s2``...; every quiz becomes one yes/no
question 'Judging from the image, is the answer to "<question>" "<correct option>"?', ids ``quiz1``...
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sciir.user_files.benchmark_file import DEFAULT_GROUP, DEFAULT_SETTING, FileQuestion, Sample
from sciir.user_files.importers.common import (
    Imported,
    ImportFileError,
    Record,
    Skipped,
    checked_sample_id,
    first_field,
    layer2_question,
    optional_field_text,
    read_records,
    refuse_duplicate_samples,
    required_field_text,
    yes_no_question,
)

WHAT = "statements file"
ID_FIELDS = ("id", "sample_id", "item_id", "uid")
PROMPT_FIELDS = ("prompt", "caption", "text", "description", "instruction")
GROUP_FIELDS = ("group", "subject", "domain")
STATEMENT_LIST_FIELDS = ("checklist", "statements", "requirements", "scoring_points", "criteria")
STATEMENT_TEXT_FIELDS = ("statement", "text", "requirement", "question", "content")
QUIZ_LIST_FIELDS = ("quizzes", "quiz", "mcq", "multiple_choice")
OPTION_FIELDS = ("options", "choices")
ANSWER_FIELDS = ("answer", "correct_answer", "correct")
DEFAULT_CATEGORY = "statement"
DEFAULT_QUIZ_CATEGORY = "quiz"
# An option written with its own label: "A. 30°", "(B) 45°", "C) 60°", "D: none".
_OPTION_LABEL = re.compile(r"^\(?([A-Za-z])[).:]\s+")


def import_statements(
    path: str | Path, category: str = DEFAULT_CATEGORY, quiz_category: str = DEFAULT_QUIZ_CATEGORY
) -> Imported:
    """The samples of a statement-checklist file (JSON list or JSON Lines); statements get ``category``
    unless they name their own, quizzes ``quiz_category``."""
    imported = Imported()
    for record in read_records(Path(path), WHAT):
        sample_id = required_field_text(record, ID_FIELDS)
        item = Record(f"{record.where} (id {sample_id!r})", record.fields)
        questions = [
            *_statement_questions(item, category, imported.skipped),
            *_quiz_questions(item, quiz_category, imported.skipped),
        ]
        if not questions:
            imported.skipped.append(Skipped(item.where, "no statements and no quizzes: nothing to judge"))
            continue
        imported.samples.append(
            Sample(
                where=item.where,
                sample_id=checked_sample_id(item.where, _field_name(item, ID_FIELDS), sample_id),
                group=optional_field_text(item, GROUP_FIELDS) or DEFAULT_GROUP,
                prompts={DEFAULT_SETTING: required_field_text(item, PROMPT_FIELDS)},
                tracks=None,
                questions=tuple(questions),
            )
        )
    refuse_duplicate_samples(imported.samples)
    return imported


def _field_name(record: Record, names: Sequence[str]) -> str:
    found = first_field(record, names)
    return found[0] if found else names[0]


def _entries(record: Record, names: Sequence[str], what: str) -> list[Any]:
    """The list under the first filled field of ``names`` (one object stands for a list of one)."""
    found = first_field(record, names)
    if found is None:
        return []
    name, value = found
    if isinstance(value, dict):
        return [value]
    if not isinstance(value, list):
        raise ImportFileError(
            f"{record.where}, field {name!r}: expected a list of {what}, found {type(value).__name__}"
        )
    return value


# ---- statements


def statement_question(statement: str) -> str:
    """The yes/no question of a statement; a statement worded as a question is kept."""
    statement = statement.strip()
    if statement.endswith("?"):
        return statement
    return f"Does the image satisfy: {statement.rstrip('.;')}?"


def _statement_questions(item: Record, category: str, skipped: list[Skipped]) -> list[FileQuestion]:
    questions = []
    for number, entry in enumerate(_entries(item, STATEMENT_LIST_FIELDS, "statements"), start=1):
        where = f"{item.where}, statement {number}"
        if isinstance(entry, dict):
            entry_record = Record(where, entry)
            text = optional_field_text(entry_record, STATEMENT_TEXT_FIELDS)
            own_category = optional_field_text(entry_record, ("category",))
        elif isinstance(entry, str):
            text, own_category = entry.strip() or None, None
        else:
            raise ImportFileError(f"{where}: expected a text or an object, found {type(entry).__name__}")
        if text is None:
            skipped.append(Skipped(where, f"no statement text (fields {', '.join(STATEMENT_TEXT_FIELDS)})"))
            continue
        questions.append(layer2_question(f"s{number}", statement_question(text), own_category or category))
    return questions


# ---- quizzes


def _quiz_questions(item: Record, category: str, skipped: list[Skipped]) -> list[FileQuestion]:
    questions = []
    for number, entry in enumerate(_entries(item, QUIZ_LIST_FIELDS, "quizzes"), start=1):
        where = f"{item.where}, quiz {number}"
        if not isinstance(entry, dict):
            raise ImportFileError(f"{where}: expected an object, found {type(entry).__name__}")
        quiz = Record(where, entry)
        question = required_field_text(quiz, ("question",))
        options = _options(quiz)
        found = first_field(quiz, ANSWER_FIELDS)
        if found is None:
            raise ImportFileError(f"{quiz.where}: no field 'answer' (or 'correct_answer', 'correct')")
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


def _options(quiz: Record) -> dict[str, str]:
    """Label -> option text: a list's options labelled A, B, C... (an option's own "A." label dropped),
    an object's by its keys; empty when the quiz has none (its answer is then the answer text)."""
    found = first_field(quiz, OPTION_FIELDS)
    if found is None:
        return {}
    name, value = found
    if isinstance(value, dict):
        return {str(key).strip(): str(text).strip() for key, text in value.items()}
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
