"""The reasoning planner of Qwen-Image-SciIR (SciIR section 4), as a wrapper around any contestant generator.

Before synthesis a language model (any configured vision-language backend, task ``planner``) rewrites each
prompt into a Sci-RCoT plan; the wrapped generator draws the plan, and each result carries the prompt it
was given and the plan (``meta``), which the generate pipeline saves beside the image. A plan that cannot
be had (the planner failed or answered off its schema) fails that sample with the reason: the original
prompt is never drawn in its place, so a planned model is always judged on its plans.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
)
from sciir.backends.strict_schema import strict_model_schema
from sciir.tasks.parsing import TaskReplyError, parse_reply
from sciir.tasks.prompts import prompt_template

PLANNER_TASK = "planner"


class Plan(BaseModel):
    """The planner's reply: the Sci-RCoT the image model is given instead of the prompt."""

    plan: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class PlannerSettings(BaseModel):
    """A generator entry's ``planner`` (conf/base/backends.yml) beside its planner backend."""

    max_words: int = Field(default=180, ge=10)


def build_plan_request(prompt: str, settings: PlannerSettings) -> VLMRequest:
    """The planner request for one prompt (text only: the planner sees no image)."""
    template = prompt_template(PLANNER_TASK)
    schema = strict_model_schema(Plan)
    return VLMRequest(
        task=PLANNER_TASK,
        prompt=template.render(
            prompt=prompt, max_words=settings.max_words, schema=json.dumps(schema, ensure_ascii=False)
        ),
        json_schema=schema,
        context={"prompt": prompt, "max_words": settings.max_words},
        template_version=template.version,
    )


class PlannedGenerator(ImageGenerator):
    """``inner`` draws what ``planner`` plans for each prompt."""

    def __init__(
        self, inner: ImageGenerator, planner: VisionLanguageModel, settings: PlannerSettings | None = None
    ) -> None:
        super().__init__()
        self.inner, self.planner = inner, planner
        self.settings = settings or PlannerSettings()
        self.role = inner.role

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "planner": self.planner.identity()}

    @property
    def stats(self) -> Any:
        """The wrapped generator's response-cache counts, when it is cached."""
        return getattr(self.inner, "stats", None)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        replies = self.planner.generate([build_plan_request(r.prompt, self.settings) for r in requests])
        plans: dict[str, str] = {}
        failed: dict[str, GenerationResult] = {}
        for request, reply in zip(requests, replies, strict=True):
            try:
                plans[request.sample_id] = parse_reply(Plan, PLANNER_TASK, reply).plan
            except TaskReplyError as error:
                failed[request.sample_id] = GenerationResult(
                    sample_id=request.sample_id, failure=f"no plan for sample {request.sample_id}: {error}"
                )
        planned = [r.model_copy(update={"prompt": plans[r.sample_id]}) for r in requests if r.sample_id in plans]
        drawn = {result.sample_id: result for result in (self.inner.generate(planned) if planned else [])}
        return [
            failed.get(request.sample_id)
            or with_plan(drawn[request.sample_id], request.prompt, plans[request.sample_id])
            for request in requests
        ]


def with_plan(result: GenerationResult, prompt: str, plan: str) -> GenerationResult:
    """``result`` recording the prompt the planner was given and the plan that was drawn."""
    return result.model_copy(update={"meta": {**result.meta, "planner": {"prompt": prompt, "plan": plan}}})
