"""Question files of question-generation benchmarks into benchmark samples: TIFA and DSG.

- TIFA (github.com/Yushi-Hu/tifa, ``tifa_v1.0_question_answers.json``; ``sample_question_answers.json``):
  a JSON list with one object per question: ``id`` (the caption's id), ``caption``, ``question``,
  ``choices``, ``answer``, ``element``, ``element_type``. A yes/no question answered "yes" is kept as it
  is; any other (multiple choice, or a yes/no question answered "no") becomes 'Judging from the image,
  is the answer to "<question>" "<answer>"?'. The question id is the question's text, as TIFA's result
  files name questions (``sciir.user_files.rating_files.tifa_verdicts``), so TIFA's own answers join the
  imported checklist. The category is ``element_type``.
- DSG (github.com/j-min/DSG, ``dsg-1k-anns.csv``; DPG-Bench's CSV has the same columns): one row per
  proposition: ``item_id``, ``text`` (the prompt), ``proposition_id``, ``dependency`` (parent
  proposition ids, ``"1,4"``; ``0`` for none), ``category_broad``, ``question_natural_language``. The
  question id is the proposition id, its parents the dependency, so the ``dsg`` rule filters children
  of a parent answered "no"; the category is ``category_broad``.

Both name an item's source before the first ``_`` of its id (``coco_301091``, ``whoops_5``): that is
the sample's group, so scores are broken down by source as both papers report them. Their fields are
read through ``TIFA_FIELDS`` and ``DSG_FIELDS`` and the user's field map (``field_map``). Their questions
are kept as they are: no text question is added, so a rule reproduces the published scores.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sciir.user_files.benchmark_file import DEFAULT_SETTING, FileQuestion, Sample
from sciir.user_files.importers.common import (
    Imported,
    ImportFileError,
    Record,
    Skipped,
    checked_sample_id,
    grouped,
    layer2_question,
    read_records,
    source_group,
    yes_no_question,
)
from sciir.user_files.importers.field_map import (
    FieldMap,
    agreed_text,
    field_name,
    optional_field_text,
    require_fields,
    required_field_text,
    structured_field,
)

TIFA_WHAT = "TIFA question file"
DSG_WHAT = "DSG file"
TIFA_FIELDS = FieldMap(
    {
        "id": ("id",),
        "prompt": ("caption",),
        "question": ("question",),
        "options": ("choices",),
        "answer": ("answer",),
        "category": ("element_type",),
    }
)
DSG_FIELDS = FieldMap(
    {
        "id": ("item_id",),
        "prompt": ("text", "prompt"),
        "question_id": ("proposition_id",),
        "parents": ("dependency",),
        "category": ("category_broad", "category"),
        "question": ("question_natural_language", "question"),
    }
)
DSG_ROOT = "0"  # DSG's dependency of a proposition without parents
UNCATEGORISED = "other"
YES_NO = {"yes", "no"}


def _add_item(
    imported: Imported, rows: Sequence[Record], fields: FieldMap, questions: list[FileQuestion]
) -> None:
    """One item's sample: id and prompt as its rows repeat them, group its source; skipped without questions."""
    sample_id = required_field_text(rows[0], fields, "id")
    id_field = field_name(rows[0], fields, "id")
    where = f"{rows[0].where} ({id_field} {sample_id!r})"
    if not questions:
        imported.skipped.append(Skipped(where, "no usable question: the item is left out"))
        return
    imported.samples.append(
        Sample(
            where=where,
            sample_id=checked_sample_id(where, id_field, sample_id),
            group=source_group(sample_id),
            prompts={DEFAULT_SETTING: agreed_text(rows, fields, "prompt")},
            tracks=None,
            questions=tuple(questions),
        )
    )


def _rows_by_item(records: Sequence[Record], fields: FieldMap, required: Sequence[str]) -> list[list[Record]]:
    """The rows of each item (those sharing an id), once each row holds every ``required`` field."""
    for record in records:
        require_fields(record, fields, required)
    return list(grouped(records, lambda record: required_field_text(record, fields, "id")).values())


# ---- TIFA


def import_tifa(path: str | Path, field_map: Mapping[str, str] | None = None) -> Imported:
    """The samples of a TIFA question file, one per caption id; ``field_map`` (role -> field) names
    fields of another spelling."""
    fields = TIFA_FIELDS.with_user_map(field_map or {}, TIFA_WHAT)
    imported = Imported()
    records = read_records(Path(path), TIFA_WHAT, text_columns=fields.names("id"))
    for rows in _rows_by_item(records, fields, ("id", "prompt", "question", "answer")):
        questions: dict[str, FileQuestion] = {}
        for row in rows:
            question = _tifa_question(row, fields)
            if isinstance(question, Skipped):
                imported.skipped.append(question)
            elif question.id in questions:
                imported.skipped.append(
                    Skipped(row.where, f"question {question.id!r} repeats one of its caption")
                )
            else:
                questions[question.id] = question
        _add_item(imported, rows, fields, list(questions.values()))
    return imported


def _tifa_question(row: Record, fields: FieldMap) -> FileQuestion | Skipped:
    question = required_field_text(row, fields, "question")
    answer = required_field_text(row, fields, "answer")
    found = structured_field(row, fields, "options")
    name, choices = found if found else ("", [])
    if not isinstance(choices, list):
        raise ImportFileError(
            f"{row.where}, field {name!r}: expected a list of answers, found {type(choices).__name__}"
        )
    choices = [str(choice).strip() for choice in choices]
    if choices and answer not in choices:
        return Skipped(row.where, f"answer {answer!r} is not one of its choices {choices}")
    yes_no = answer.lower() == "yes" and (not choices or {c.lower() for c in choices} == YES_NO)
    return layer2_question(
        question,
        question if yes_no else yes_no_question(question, answer),
        optional_field_text(row, fields, "category") or UNCATEGORISED,
    )


# ---- DSG


@dataclass(frozen=True)
class _Proposition:
    row: Record
    id: str
    question: str
    category: str
    dependencies: tuple[str, ...]


def import_dsg(path: str | Path, field_map: Mapping[str, str] | None = None) -> Imported:
    """The samples of a DSG file, one per item, each question's parents its proposition's dependencies;
    ``field_map`` (role -> field) names fields of another spelling."""
    fields = DSG_FIELDS.with_user_map(field_map or {}, DSG_WHAT)
    imported = Imported()
    text_columns = [*fields.names("id"), *fields.names("question_id"), *fields.names("parents")]
    records = read_records(Path(path), DSG_WHAT, text_columns=text_columns)
    for rows in _rows_by_item(records, fields, ("id", "prompt", "question_id", "question")):
        propositions = _propositions(rows, fields, imported.skipped)
        _add_item(imported, rows, fields, _dsg_questions(propositions, imported.skipped))
    return imported


def _propositions(rows: Sequence[Record], fields: FieldMap, skipped: list[Skipped]) -> list[_Proposition]:
    propositions: dict[str, _Proposition] = {}
    for row in rows:
        proposition_id = required_field_text(row, fields, "question_id")
        question = optional_field_text(row, fields, "question")
        if question is None:
            skipped.append(
                Skipped(
                    row.where, f"proposition {proposition_id} has no {field_name(row, fields, 'question')}"
                )
            )
        elif proposition_id in propositions:
            skipped.append(Skipped(row.where, f"proposition {proposition_id} repeats one of its item"))
        else:
            propositions[proposition_id] = _Proposition(
                row=row,
                id=proposition_id,
                question=question,
                category=optional_field_text(row, fields, "category") or UNCATEGORISED,
                dependencies=tuple(_dependencies(row, fields)),
            )
    return list(propositions.values())


def _dependencies(row: Record, fields: FieldMap) -> list[str]:
    """Parent proposition ids of a row's ``dependency``: ``"1,4"``, ``2``, ``[1, 4]``; ``0`` is none."""
    found = structured_field(row, fields, "parents")
    if found is None:
        return []
    value = found[1]
    if isinstance(value, list):
        tokens = [str(item) for item in value]
    elif isinstance(value, float) and value.is_integer():
        tokens = [str(int(value))]
    else:
        tokens = re.split(r"[,\s]+", str(value))
    return [token.strip() for token in tokens if token.strip() and token.strip() != DSG_ROOT]


def _dsg_questions(propositions: Sequence[_Proposition], skipped: list[Skipped]) -> list[FileQuestion]:
    """The questions; a dependency on a proposition the item lacks (or on itself) is dropped and reported."""
    known = {proposition.id for proposition in propositions}
    questions = []
    for proposition in propositions:
        parents = []
        for parent in proposition.dependencies:
            if parent in known and parent != proposition.id:
                parents.append(parent)
            else:
                skipped.append(
                    Skipped(
                        proposition.row.where,
                        f"dependency of proposition {proposition.id} on {parent}: not another question of "
                        "its item; the dependency is dropped",
                    )
                )
        questions.append(layer2_question(proposition.id, proposition.question, proposition.category, parents))
    return questions
