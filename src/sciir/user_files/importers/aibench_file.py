"""AIBench's published benchmark (Liao et al.): one JSON Lines file, per paper its ``id``
(``CVPR_2025/2506.07857v1``), the ``method_text`` (LaTeX of the method section) and a ``checklist`` of
multiple-choice questions, each with ``id``, ``level`` (``Level 1: Component Existence`` ...), ``question``,
``options`` (``{"A": ..., "B": ...}``) and ``correct_option`` (docs/bring_your_own_benchmark.md).

Each paper becomes one sample: its id with ``/`` written ``__`` (``CVPR_2025__2506.07857v1``: it names
image files), its group the venue before the ``/``, its prompt the method text as plain text
(``latex_text``) in the instruction of task ``aibench_illustration``, as generate's AIBench half draws a
paper; every checklist question becomes a multiple-choice question of its level, its options kept as
they are, the insufficient-information option included (``sciir.aibench.choices``). The solver sees the
image, the questions and their options; never the method text or the correct option.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sciir.aibench.choices import ChoiceQuestion, choice_problem, level_number
from sciir.tasks.aibench_illustration import ILLUSTRATION_TASK, illustration_prompt
from sciir.tasks.prompts import prompt_template
from sciir.user_files.benchmark_file import DEFAULT_GROUP, DEFAULT_SETTING, SETTING_SEPARATOR, Sample
from sciir.user_files.importers.common import (
    Imported,
    ImportFileError,
    Record,
    Skipped,
    checked_sample_id,
    read_records,
    refuse_duplicate_samples,
)
from sciir.user_files.importers.field_map import (
    FieldMap,
    field_name,
    first_field,
    require_fields,
    required_field_text,
    structured_field,
)
from sciir.user_files.importers.latex_text import latex_text

WHAT = "AIBench file"
# AIBench's own field names; ``--field`` maps a file that names one otherwise.
AIBENCH_FIELDS = FieldMap(
    {
        "id": ("id",),
        "method_text": ("method_text",),
        "checklist": ("checklist",),
        "question_id": ("id",),
        "level": ("level",),
        "question": ("question",),
        "options": ("options",),
        "correct_option": ("correct_option",),
    }
)
ID_SEPARATOR = "/"
# What a diffusers pipeline's CLIP text encoder reads (77 tokens): about this many English words.
CLIP_WORDS = 50


def sample_id_of(paper_id: str) -> str:
    """The sample id of an AIBench paper id: ``CVPR_2025/2506.07857v1`` -> ``CVPR_2025__2506.07857v1``."""
    return paper_id.replace(ID_SEPARATOR, SETTING_SEPARATOR)


def import_aibench(path: str | Path, field_map: Mapping[str, str] | None = None) -> Imported:
    """The samples of an AIBench file (JSON Lines, or a JSON list of papers), each paper's questions as
    multiple-choice questions; a question whose level or correct option cannot be used is left out and
    listed, and so is a paper left without questions. ``field_map`` (role -> field) names fields
    AIBench's own names miss."""
    fields = AIBENCH_FIELDS.with_user_map(field_map or {}, WHAT)
    imported = Imported()
    for record in read_records(Path(path), WHAT):
        require_fields(record, fields, ["id", "method_text", "checklist"])
        paper_id = required_field_text(record, fields, "id")
        paper = Record(f"{record.where} (paper {paper_id!r})", record.fields, record.name)
        choices = _choices(paper, fields, imported.skipped)
        if not choices:
            imported.skipped.append(Skipped(paper.where, "no usable checklist question: nothing to ask"))
            continue
        sample_id = checked_sample_id(paper.where, field_name(paper, fields, "id"), sample_id_of(paper_id))
        method_text = latex_text(required_field_text(paper, fields, "method_text"))
        venue, separator, _ = paper_id.partition(ID_SEPARATOR)
        imported.samples.append(
            Sample(
                where=paper.where,
                sample_id=sample_id,
                group=venue if separator and venue else DEFAULT_GROUP,
                prompts={DEFAULT_SETTING: illustration_prompt(sample_id, method_text)},
                tracks=None,
                questions=(),
                choices=tuple(choices),
            )
        )
    refuse_duplicate_samples(imported.samples)
    if imported.samples:
        imported.notes += [choices_note(imported.samples), prompt_note(imported.samples)]
    return imported


def _value(record: Record, fields: FieldMap, role: str) -> Any:
    found = first_field(record, fields, role)
    return None if found is None else found[1]


def _choices(paper: Record, fields: FieldMap, skipped: list[Skipped]) -> list[ChoiceQuestion]:
    name, checklist = structured_field(paper, fields, "checklist") or (fields.names("checklist")[0], None)
    if not isinstance(checklist, list):
        raise ImportFileError(
            f"{paper.where}, field {name!r}: expected a list of questions, found {type(checklist).__name__}"
        )
    choices: list[ChoiceQuestion] = []
    for number, entry in enumerate(checklist, start=1):
        where = f"{paper.where}, checklist question {number}"
        if not isinstance(entry, dict):
            raise ImportFileError(f"{where}: expected a JSON object, found {type(entry).__name__}")
        question = Record(where, entry, f"checklist question {number}")
        question_id = required_field_text(question, fields, "question_id")
        level, options = _value(question, fields, "level"), _value(question, fields, "options")
        correct = _value(question, fields, "correct_option")
        problem, level_no = choice_problem(level, options, correct), level_number(level)
        if problem is not None or level_no is None:
            skipped.append(Skipped(f"{where} (id {question_id!r})", str(problem)))
            continue
        if question_id in {choice.id for choice in choices}:
            raise ImportFileError(f"{where}: question id {question_id!r} appears twice in the paper")
        choices.append(
            ChoiceQuestion(
                id=question_id,
                text=required_field_text(question, fields, "question"),
                level=level_no,
                options={str(letter): str(text).strip() for letter, text in options.items()},
                answer=str(correct).strip(),
            )
        )
    return choices


def choices_note(samples: Sequence[Sample]) -> str:
    """The multiple-choice questions written, by level, and how many offer the insufficient option."""
    choices = [choice for sample in samples for choice in sample.choices]
    levels = Counter(choice.level for choice in choices)
    insufficient = sum(choice.insufficient is not None for choice in choices)
    return (
        f"multiple-choice questions: {len(choices)} "
        f"({', '.join(f'level {level} {count}' for level, count in sorted(levels.items()))}; "
        f"{insufficient} offer the insufficient-information option)"
    )


def prompt_note(samples: Sequence[Sample]) -> str:
    """What the prompts are and how much of them a generator reads, said once for the whole file."""
    words = sorted(len(sample.prompts[DEFAULT_SETTING].split()) for sample in samples)
    longer = sum(count > CLIP_WORDS for count in words)
    template = prompt_template(ILLUSTRATION_TASK)
    instruction = len(template.render(methods_text="").split())
    return (
        f"prompts: each paper's method text as plain text in the instruction of task {ILLUSTRATION_TASK} "
        f"({template.version}; {instruction} words), {words[0]} to {words[-1]} words (median "
        f"{statistics.median(words):g}); {longer} of {len(words)} are longer than a CLIP text encoder reads "
        f"(77 tokens, about {CLIP_WORDS} words): generate cuts such a prompt at the last whole word that "
        "fits each encoder (a T5 encoder reads 256 or 512 tokens), says so once per generator and records "
        "prompt_words_kept in the manifest"
    )
