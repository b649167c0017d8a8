"""Replies into typed records: a task's answer is its output model or a failure naming every broken rule."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sciir.backends.base import VLMResult
from sciir.backends.strict_schema import omit_added_nulls


class TaskReplyError(ValueError):
    """A task's answer was missing or did not match its output model."""


Output = TypeVar("Output", bound=BaseModel)


def parse_reply(
    model: type[Output],
    task: str,
    result: VLMResult,
    error: type[TaskReplyError] = TaskReplyError,
    context: dict[str, Any] | None = None,
) -> Output:
    """``result`` as ``model`` (its validators given ``context``); a failed request or a reply that breaks
    a rule raises ``error``."""
    if not result.ok:
        raise error(f"{task} failed: {result.failure}")
    try:
        # A null in a field the strict schema made nullable means "left out": the model's default applies.
        return model.model_validate(omit_added_nulls(result.output, model.model_json_schema()), context=context)
    except ValidationError as invalid:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in invalid.errors()
        )
        raise error(f"{task} answer does not match its schema: {problems}") from invalid
