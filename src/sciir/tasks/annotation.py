"""What the four annotation tasks of SciIR (section 3, appendices B.4, D.1 and F) share.

The tasks, in dependency order, each in its own module: ``track_scores`` and ``reasoning`` read the figure
with its caption and methods text; ``abstract_prompt`` distils the reasoning into a short prompt;
``checklist`` turns the reasoning into atomic yes/no questions. Each asks the same way (an
``AnnotationTask``): its template reads named context fields (and the JSON schema of its output, sent to
servers that support structured output), and the figure when it sees it; its parser is strict: an answer
that does not match is a failure with its reason, never repaired into a default. Here too: the reasoning
tracks, the columns of the ``checklists`` table, and the text helpers the offline answerers share.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, StringConstraints

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.task import ModelTask, TaskReplyError

TRACKS = ("entity", "process", "law")
# Columns of the ``checklists`` table (docs/data_contract.md), whoever writes it: annotate or a benchmark file.
CHECKLIST_COLUMNS = (
    "sample_id",
    "question_id",
    "layer",
    "track",
    "kind",
    "polarity",
    "about",
    "question",
    "expected_text",
    "parent_ids",
)
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class AnnotationError(TaskReplyError):
    """A task's answer was missing or did not match its output schema."""


def unique(items: Sequence[str]) -> list[str]:
    """``items`` without repeats, in order."""
    return list(dict.fromkeys(items))


def _as_prompt_text(value: Any) -> str:
    """Strings go in verbatim, lists as JSON (so quoting and order stay exact)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True, kw_only=True)
class AnnotationTask(ModelTask):
    """An annotation task: its output model (``reply_schema``), the context its template reads, and whether
    it is sent the image."""

    reply_schema: type[BaseModel]
    context_keys: tuple[str, ...]
    sees_image: bool

    def build(self, context: Mapping[str, Any], image: bytes | None = None) -> VLMRequest:
        """The request: rendered prompt, output schema, context, and the image if the task reads it."""
        missing = [key for key in self.context_keys if key not in context]
        if missing:
            raise KeyError(f"task {self.name} needs context keys {missing}")
        if self.sees_image and image is None:
            raise ValueError(f"task {self.name} reads the figure but no image was given")
        fields: dict[str, Any] = {key: _as_prompt_text(context[key]) for key in self.context_keys}
        return self.request(
            images=[image] if self.sees_image and image is not None else [],
            context={key: context[key] for key in self.context_keys},
            **fields,
            schema=json.dumps(self.schema(), ensure_ascii=False),
        )

    def parse_output(self, result: VLMResult) -> BaseModel:
        """The validated output, or AnnotationError saying why the answer is unusable."""
        output: BaseModel = self.parse(result, AnnotationError)  # an instance of reply_schema
        return output


# ---- what the offline answerers share


def image_of(request: VLMRequest) -> bytes:
    """The one image a request that reads the figure carries."""
    if len(request.images) != 1:
        raise ValueError(f"needs exactly one image, got {len(request.images)}")
    return request.images[0]


def word_start(word: str) -> re.Pattern[str]:
    """``word`` at the start of a word, ignoring case (so "molecules" and "proportionality" count)."""
    return re.compile(rf"\b{re.escape(word)}", re.IGNORECASE)


def sentences(text: str) -> list[str]:
    """Split prose into sentences (at ". " before a capital or a parenthesis)."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(])", text.strip())


def sentences_with_cues(text: str, patterns: Sequence[re.Pattern[str]]) -> list[str]:
    """The sentences of ``text`` that contain one of ``patterns`` (e.g. the caption's statements of a law)."""
    return [s for s in sentences(text) if any(p.search(s) for p in patterns)]


def quoted(items: Sequence[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)
