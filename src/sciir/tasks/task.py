"""The one interface every model task declares (as lm-evaluation-harness's ``Task``).

A task is data plus small functions, kept in one module of ``sciir.tasks``: its prompt template and version
(``conf/base/tasks/<name>.yml``, ``sciir.tasks.prompts``), the JSON schema of its reply (valid for strict
structured outputs), the functions that build its requests and parse replies into typed records, and, where
rules can answer it honestly, its answerers by reader kind (``offline``: OCR and diagram reading; ``ocr``:
text reading only). Each module declares its task as a ``ModelTask`` named ``TASK``; ``sciir.tasks.registry``
lists them, and hands each reader's answerers to the rule-based backends (``sciir.backends.rule_based``),
which know no task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Answerer
from sciir.backends.strict_schema import model_schema, omit_added_nulls, strict_model_schema
from sciir.tasks.prompts import PromptTemplate, prompt_template


class TaskReplyError(ValueError):
    """A task's answer was missing or did not match its output model."""


@dataclass(frozen=True, kw_only=True)
class ModelTask:
    """One task: its name, what it asks, the reply it expects and who can answer it without a model.

    ``reply_schema`` is the reply's JSON schema, a pydantic model (sent in OpenAI's strict form, and the
    parser's output), or None for a task whose reply is no JSON object (first-token log-probabilities, an
    image). ``answerers`` maps a reader kind to the function that answers the task's requests by rules.
    """

    name: str
    summary: str
    reply_schema: Mapping[str, Any] | type[BaseModel] | None
    answerers: Mapping[str, Answerer] = field(default_factory=dict)

    @property
    def prompt(self) -> PromptTemplate:
        return prompt_template(self.name)

    @property
    def version(self) -> str:
        """The version of the prompt template: part of every request's cache key."""
        return self.prompt.version

    def schema(self) -> dict[str, Any] | None:
        """The reply schema as sent (a pydantic model in OpenAI's strict form)."""
        if self.reply_schema is None or isinstance(self.reply_schema, Mapping):
            return None if self.reply_schema is None else dict(self.reply_schema)
        return strict_model_schema(self.reply_schema)

    def request(
        self,
        *,
        images: Sequence[bytes] = (),
        context: Mapping[str, Any] | None = None,
        json_schema: dict[str, Any] | None = None,
        top_logprobs: int | None = None,
        **fields: Any,
    ) -> VLMRequest:
        """A request of this task: its template rendered with ``fields``, the ``images``, the structured
        ``context`` rule-based readers use, and ``json_schema`` (a request-specific reply schema; default
        the task's own, none when it asks for ``top_logprobs``)."""
        template = self.prompt
        if json_schema is None and top_logprobs is None:
            json_schema = self.schema()
        return VLMRequest(
            task=self.name,
            prompt=template.render(**fields),
            images=list(images),
            json_schema=json_schema,
            context=dict(context or {}),
            template_version=template.version,
            top_logprobs=top_logprobs,
        )

    def parse(
        self,
        result: VLMResult,
        error: type[TaskReplyError] = TaskReplyError,
        context: dict[str, Any] | None = None,
    ) -> Any:
        """``result`` as the task's pydantic model (its validators given ``context``); a failed request or a
        reply that breaks a rule raises ``error``, naming every broken rule."""
        model = self.reply_schema
        if not isinstance(model, type):
            raise TypeError(f"task {self.name}: its reply is not a pydantic model")
        if not result.ok:
            raise error(f"{self.name} failed: {result.failure}")
        try:
            # A null in a field the strict schema made nullable means "left out": the model's default applies.
            return model.model_validate(omit_added_nulls(result.output, model_schema(model)), context=context)
        except ValidationError as invalid:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in invalid.errors()
            )
            raise error(f"{self.name} answer does not match its schema: {problems}") from invalid
