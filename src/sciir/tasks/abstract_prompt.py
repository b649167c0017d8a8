"""The ``abstract_prompt`` task (SciIR appendix F): the Sci-RCoT distilled by term substitution into a short
generation prompt that names the terms instead of describing the figure (the intrinsic-reasoning setting).

Offline (``answer_by_rule``): the style the Sci-RCoT states, then the quoted terms, nothing about layout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.annotation import AnnotationTask, NonEmpty, quoted
from sciir.tasks.reasoning import figure_kind


class AbstractPrompt(BaseModel):
    """A short generation prompt that names terms instead of describing the figure."""

    prompt: NonEmpty


def style_from_rcot(sci_rcot: str) -> str | None:
    """The style a Sci-RCoT states in its 'Style:' sentence, if it has one."""
    match = re.search(r"Style:\s*(.+?)(?:\.\s|\.?$)", sci_rcot)
    return match.group(1).strip() if match else None


def abstract_from_terms(style: str, terms: Sequence[str]) -> str:
    """A short prompt naming the terms in the given style, leaving layout and connections to the model."""
    subject = f"showing {quoted(terms)}" if terms else "of the described scientific content"
    return f"A {style} {subject}; render every quoted label with exactly this spelling."


class _AbstractContext(BaseModel):
    caption: str
    terms: list[str]
    sci_rcot: str


def answer_by_rule(request: VLMRequest, sight: Sight) -> VLMResult:
    """The Sci-RCoT's style and the quoted terms (module docstring)."""
    context = _AbstractContext.model_validate(request.context)
    style = style_from_rcot(context.sci_rcot) or figure_kind(context.caption)
    return VLMResult(output={"prompt": abstract_from_terms(style, context.terms)})


TASK = AnnotationTask(
    name="abstract_prompt",
    summary="the Sci-RCoT distilled by term substitution (SciIR F)",
    reply_schema=AbstractPrompt,
    answerers={"offline": answer_by_rule},
    context_keys=("caption", "terms", "sci_rcot"),
    sees_image=False,
)
