"""The reasoning planner of Qwen-Image-SciIR (SciIR section 4), as a wrapper around any contestant generator.

Before synthesis a language model (any configured vision-language backend, task ``planner``:
``sciir.tasks.planner``) rewrites each prompt into a Sci-RCoT plan; the wrapped generator draws the plan,
and each result carries the prompt it was given and the plan (``meta``), which the generate pipeline saves
beside the image. A plan that cannot
be had (the planner failed or answered off its schema) fails that sample with the reason: the original
prompt is never drawn in its place, so a planned model is always judged on its plans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    Pending,
    VisionLanguageModel,
    VLMResult,
)
from sciir.generation.wrapping import WrappingGenerator
from sciir.runs.model_chain import stream_through_two
from sciir.tasks.planner import PlannerSettings, build_plan_request, plan_of
from sciir.tasks.task import TaskReplyError

_Planned = tuple[int, GenerationRequest, str]  # a request's position, the request, its plan


class PlannedGenerator(WrappingGenerator):
    """``inner`` draws what ``planner`` plans for each prompt."""

    wrapper_name = "a planned generator"

    def __init__(
        self, inner: ImageGenerator, planner: VisionLanguageModel, settings: PlannerSettings | None = None
    ) -> None:
        super().__init__(inner)
        self.planner = planner
        self.settings = settings or PlannerSettings()

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "planner": self.planner.identity()}

    def stream(
        self,
        requests: Iterable[GenerationRequest | Pending],
        on_result: Callable[[int, GenerationResult], None],
        window: int | None = None,
    ) -> None:
        """Every prompt's plan streamed through the planner and each plan drawn as soon as it arrives, the
        planner and the generator each with ``window`` requests in flight at most
        (``sciir.runs.model_chain``): no wait for the other plans. A sample without a plan fails at once
        with the reason."""

        def planned(job: tuple[int, GenerationRequest], reply: VLMResult) -> list[_Planned]:
            position, request = job
            try:
                return [(position, request, plan_of(reply))]
            except TaskReplyError as error:
                reason = f"no plan for sample {request.sample_id}: {error}"
                on_result(position, GenerationResult(sample_id=request.sample_id, failure=reason))
                return []

        def drawn(step: _Planned, result: GenerationResult) -> None:
            position, request, plan = step
            on_result(position, with_plan(result, request.prompt, plan))

        stream_through_two(
            self.planner,
            self.inner,
            self.positioned(requests),
            lambda job: build_plan_request(job[1].prompt, self.settings),
            planned,
            lambda step: step[1].model_copy(update={"prompt": step[2]}),
            drawn,
            window,
        )


def with_plan(result: GenerationResult, prompt: str, plan: str) -> GenerationResult:
    """``result`` recording the prompt the planner was given and the plan that was drawn."""
    return result.model_copy(update={"meta": {**result.meta, "planner": {"prompt": prompt, "plan": plan}}})
