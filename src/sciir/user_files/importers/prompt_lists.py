"""Prompts without checklists into benchmark samples whose checklists a model writes from each prompt
(task ``prompt_checklist``, DSG-style: entities, attributes, counts, relations and quoted text, with parent
ids), so a plain prompt list is evaluated as any other benchmark (docs/bring_your_own_benchmark.md,
"Checklists from prompts").

The input is a text file (``.txt``: one prompt per line; blank lines and lines starting with ``#``
skipped) or items with a prompt field (JSON, JSON Lines, CSV, TSV, parquet; ``PROMPT_LIST_FIELDS`` and the
user's field map say which fields hold the prompt, the id and the group). An item without an id gets ``p-`` and the start of its
prompt's sha256, so an id names the same prompt whatever the order of the file. The writer is any
vision-language model (the offline one writes only the text questions of quoted strings); its requests
stream through ``Model.stream`` (through the response cache when the writer has one). A text question
becomes a layer-1 question with its expected text, every other a layer-2 question of its category. A
prompt whose reply fails, breaks a rule of the task or holds no question is left out and listed with the
reason; what the writer notes about its replies is kept (``Imported.notes``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sciir.backends.base import VisionLanguageModel, VLMResult
from sciir.tasks.prompt_checklist import PromptQuestion, build_prompt_checklist_request, checklist_of
from sciir.tasks.task import TaskReplyError
from sciir.user_files.benchmark_file import DEFAULT_GROUP, DEFAULT_SETTING, FileQuestion, Sample
from sciir.user_files.importers.common import (
    Imported,
    ImportFileError,
    Record,
    Skipped,
    checked_sample_id,
    layer2_question,
    read_records,
)
from sciir.user_files.importers.field_map import (
    FieldMap,
    field_name,
    optional_field_text,
    required_field_text,
)
from sciir.user_files.importers.statements import STATEMENT_FIELDS

WHAT = "prompts file"
PROMPT_LIST_SUFFIXES = (".txt",)
COMMENT = "#"
ID_PREFIX = "p-"
ID_HEX_DIGITS = 10


# The roles of a prompts file, spelt as a statements file's (``--field`` maps others).
PROMPT_LIST_FIELDS = FieldMap({role: STATEMENT_FIELDS.names(role) for role in ("prompt", "id", "group")})


@dataclass(frozen=True)
class PromptItem:
    where: str
    sample_id: str
    group: str
    prompt: str


def prompt_id(prompt: str) -> str:
    """The id of a prompt that comes without one: ``p-`` and the start of the prompt's sha256."""
    return ID_PREFIX + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:ID_HEX_DIGITS]


# ---- reading


def _prompt_lines(path: Path) -> list[PromptItem]:
    if not path.is_file():
        raise ImportFileError(f"{WHAT} {path} does not exist")
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), start=1):
        prompt = line.strip()
        if prompt and not prompt.startswith(COMMENT):
            items.append(
                PromptItem(f"{WHAT} {path}, line {number}", prompt_id(prompt), DEFAULT_GROUP, prompt)
            )
    return items


def _text(record: Record, fields: FieldMap, role: str) -> str | None:
    """The role's text; required when the user's map names its field (a misspelt field is an error, not
    a silent default)."""
    if role in fields.mapped:
        return required_field_text(record, fields, role)
    return optional_field_text(record, fields, role)


def _item(record: Record, fields: FieldMap) -> PromptItem:
    prompt = required_field_text(record, fields, "prompt")
    own_id, group = _text(record, fields, "id"), _text(record, fields, "group")
    if own_id is None:
        return PromptItem(record.where, prompt_id(prompt), group or DEFAULT_GROUP, prompt)
    id_field = field_name(record, fields, "id")
    where = f"{record.where} ({id_field} {own_id!r})"
    return PromptItem(where, checked_sample_id(where, id_field, own_id), group or DEFAULT_GROUP, prompt)


def read_prompts(path: str | Path, field_map: Mapping[str, str] | None = None) -> list[PromptItem]:
    """Every prompt of a file, in order (repeats included); ``field_map`` (role -> field) names fields the
    built-in spellings miss. Two different prompts under one id stop the import before anything is
    asked."""
    path = Path(path)
    if path.suffix.lower() in PROMPT_LIST_SUFFIXES:
        items = _prompt_lines(path)
    else:
        fields = PROMPT_LIST_FIELDS.with_user_map(field_map or {}, WHAT)
        items = [_item(record, fields) for record in read_records(path, WHAT)]
    first: dict[str, PromptItem] = {}
    for item in items:
        seen = first.setdefault(item.sample_id, item)
        if seen.prompt != item.prompt:
            raise ImportFileError(f"{item.where}: id {item.sample_id!r} is already used at {seen.where}")
    return items


# ---- asking the writer


def file_question(question: PromptQuestion) -> FileQuestion:
    """A written question as a benchmark question: text at layer 1 with its expected text, any other
    category at layer 2; "yes" means the image is right."""
    if question.category != "text":
        return layer2_question(question.id, question.question, question.category, question.parent_ids)
    return FileQuestion(
        id=question.id,
        text=question.question,
        layer=1,
        category="text",
        expected_text=question.expected_text,
        parent_ids=tuple(question.parent_ids),
        polarity="positive",
    )


def _add_sample(imported: Imported, item: PromptItem, reply: VLMResult) -> None:
    try:
        checklist = checklist_of(reply)
    except TaskReplyError as error:
        imported.skipped.append(Skipped(item.where, f"no checklist: {error}"))
        return
    if not checklist.questions:
        reason = checklist.note or "the writer gave no reason"
        imported.skipped.append(Skipped(item.where, f"no question was written: {reason}"))
        return
    if checklist.note:
        imported.notes.append(checklist.note)
    imported.samples.append(
        Sample(
            where=item.where,
            sample_id=item.sample_id,
            group=item.group,
            prompts={DEFAULT_SETTING: item.prompt},
            tracks=None,
            questions=tuple(file_question(question) for question in checklist.questions),
        )
    )


def import_prompts(items: Sequence[PromptItem], writer: VisionLanguageModel) -> Imported:
    """The samples of the prompts ``items`` (``read_prompts``), each with the checklist ``writer`` writes for
    its prompt, in their order; prompts without one, and repeats (asked once), are listed in ``skipped``
    with the reason."""
    first: dict[str, PromptItem] = {}
    for item in items:
        first.setdefault(item.sample_id, item)
    asked = list(first.values())
    replies: dict[str, VLMResult] = {}
    writer.stream(
        (build_prompt_checklist_request(item.prompt) for item in asked),
        lambda position, reply: replies.__setitem__(asked[position].sample_id, reply),
    )
    imported = Imported()
    for item in items:
        if first[item.sample_id] is item:
            _add_sample(imported, item, replies[item.sample_id])
        else:
            where = first[item.sample_id].where
            imported.skipped.append(Skipped(item.where, f"repeats the prompt of {where}; it is asked once"))
    return imported
