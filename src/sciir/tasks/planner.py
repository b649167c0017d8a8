"""The ``planner`` task of Qwen-Image-SciIR (SciIR section 4): a language model rewrites a generation prompt
into a Sci-RCoT plan before synthesis (text only: the planner sees no image). The wrapper that draws the
plan instead of the prompt is ``sciir.generation.planning``. No rule can plan a figure honestly, so the
task has no offline answerer.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.task import ModelTask

PLANNER_TASK = "planner"


class Plan(BaseModel):
    """The planner's reply: the Sci-RCoT the image model is given instead of the prompt."""

    plan: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class PlannerSettings(BaseModel):
    """A generator entry's ``planner`` (conf/base/backends.yml) beside its planner backend."""

    max_words: int = Field(default=180, ge=10)


def build_plan_request(prompt: str, settings: PlannerSettings) -> VLMRequest:
    """The planner request for one prompt (text only: the planner sees no image)."""
    return TASK.request(
        context={"prompt": prompt, "max_words": settings.max_words},
        prompt=prompt,
        max_words=settings.max_words,
        schema=json.dumps(TASK.schema(), ensure_ascii=False),
    )


def plan_of(reply: VLMResult) -> str:
    """The plan of a reply; TaskReplyError (``sciir.tasks.task``) saying why there is none."""
    parsed: Plan = TASK.parse(reply)
    return parsed.plan


TASK = ModelTask(
    name=PLANNER_TASK,
    summary="a generation prompt rewritten into a Sci-RCoT plan before synthesis (SciIR 4, Qwen-Image-SciIR)",
    reply_schema=Plan,
)
