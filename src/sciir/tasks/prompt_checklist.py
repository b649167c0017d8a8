"""The ``prompt_checklist`` task: atomic yes/no questions written from a text-to-image prompt alone, as the
Davidsonian Scene Graph (DSG, Cho et al. 2024) writes them: one question per entity, attribute, count,
relation and string to write that the prompt states, each with its ``category``, its ``id`` and the ids of
the questions it depends on (``parent_ids``: an attribute, count or relation depends on its entities),
which the ``dsg`` scoring rule reads (a child of a parent answered "no" fails). A text question carries the
``expected_text`` the OCR check spells. The importer that asks it is
``sciir.user_files.importers.prompt_lists``.

The parser refuses, with the reason, a reply whose ids repeat, whose parents name no question of the reply
or form a cycle, whose question is empty, or whose text question has no expected text (or another
question one).

Offline (``questions_from_quotes``): only the text questions the prompt's quoted strings give
(``labelled "Fulcrum"``, ``the word 'START'``), and a ``note`` saying that nothing else was written: no
rule can tell the prompt's entities, attributes or relations honestly, so none is invented.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, model_validator

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.annotation import NonEmpty
from sciir.tasks.required_text import quoted_strings
from sciir.tasks.task import ModelTask

PROMPT_CHECKLIST_TASK = "prompt_checklist"
Category = Literal["entity", "attribute", "count", "relation", "text"]
# Categories whose question is about entities, so it depends on at least one of them.
NEEDS_PARENTS = ("attribute", "count", "relation")


class PromptQuestion(BaseModel):
    """One atomic yes/no question; "yes" means the image shows what the prompt states."""

    id: NonEmpty
    category: Category
    question: NonEmpty
    parent_ids: list[NonEmpty]
    expected_text: NonEmpty | None = None

    @model_validator(mode="after")
    def _text_has_its_string(self) -> PromptQuestion:
        if self.category == "text" and self.expected_text is None:
            raise ValueError(f"question {self.id}: a text question needs the expected_text it checks")
        if self.category != "text" and self.expected_text is not None:
            raise ValueError(f"question {self.id}: only a text question has an expected_text")
        if self.category in NEEDS_PARENTS and not self.parent_ids:
            raise ValueError(
                f"question {self.id}: a {self.category} question depends on its entities (parent_ids)"
            )
        return self


class PromptChecklist(BaseModel):
    """The questions of one prompt (ids unique, parents among them, no cycle), and the writer's note on
    what it did not write (null when it has none)."""

    questions: list[PromptQuestion]
    note: str | None = None

    @model_validator(mode="after")
    def _dependencies_resolve(self) -> PromptChecklist:
        ids = [question.id for question in self.questions]
        repeated = sorted({qid for qid in ids if ids.count(qid) > 1})
        if repeated:
            raise ValueError(f"question ids repeat: {repeated}")
        parents = {question.id: question.parent_ids for question in self.questions}
        unknown = {qid: sorted(set(named) - parents.keys()) for qid, named in parents.items()}
        unknown = {qid: named for qid, named in unknown.items() if named}
        if unknown:
            raise ValueError(f"parent_ids name no question of the reply: {unknown}")
        cycle = _cycle(parents)
        if cycle:
            raise ValueError(f"parent_ids form a cycle: {' -> '.join(cycle)}")
        return self


def _cycle(parents: dict[str, list[str]]) -> list[str]:
    """One cycle of the dependency graph as the ids along it (first id repeated last); empty when none."""
    done: set[str] = set()

    def walk(qid: str, path: list[str]) -> list[str]:
        if qid in path:
            return [*path[path.index(qid) :], qid]
        if qid in done:
            return []
        for parent in parents[qid]:
            if found := walk(parent, [*path, qid]):
                return found
        done.add(qid)
        return []

    for qid in parents:
        if found := walk(qid, []):
            return found
    return []


def build_prompt_checklist_request(prompt: str) -> VLMRequest:
    """The request for one prompt's checklist (text only: the writer sees no image)."""
    return TASK.request(
        context={"prompt": prompt},
        prompt=prompt,
        schema=json.dumps(TASK.schema(), ensure_ascii=False),
    )


def checklist_of(reply: VLMResult) -> PromptChecklist:
    """The checklist of a reply; TaskReplyError (``sciir.tasks.task``) saying why there is none."""
    checklist: PromptChecklist = TASK.parse(reply)
    return checklist


# ---- offline: the quoted strings only


def questions_from_quotes(request: VLMRequest, sight: Sight) -> VLMResult:
    """The text questions of the prompt's quoted strings and a note that nothing else was written."""
    strings = quoted_strings(str(request.context.get("prompt", "")))
    questions = [
        {
            "id": str(number),
            "category": "text",
            "question": f'Is the text "{text}" written, with exactly this spelling?',
            "parent_ids": [],
            "expected_text": text,
        }
        for number, text in enumerate(strings, start=1)
    ]
    rest = "it wrote no entity, attribute, count or relation question: only a language model writes those"
    if questions:
        note = f"offline writer: text questions only, one per string the prompt quotes; {rest}"
    else:
        note = f"offline writer: the prompt quotes no text, and quoted strings are all it writes questions for; {rest}"
    return VLMResult(output={"questions": questions, "note": note})


TASK = ModelTask(
    name=PROMPT_CHECKLIST_TASK,
    summary="DSG-style atomic yes/no questions written from a text-to-image prompt alone",
    reply_schema=PromptChecklist,
    answerers={"offline": questions_from_quotes},
)
