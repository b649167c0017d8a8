"""The reasoning planner of Qwen-Image-SciIR (SciIR section 4), as a wrapper around any contestant generator.

Before synthesis a language model (any configured vision-language backend, task ``planner``:
``sciir.tasks.planner``) rewrites each prompt into a Sci-RCoT plan; the wrapped generator draws the plan,
and each result carries the prompt it was given and the plan (``meta``), which the generate pipeline saves
beside the image. A plan that cannot
be had (the planner failed or answered off its schema) fails that sample with the reason: the original
prompt is never drawn in its place, so a planned model is always judged on its plans.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    Pending,
    VisionLanguageModel,
    VLMResult,
)
from sciir.tasks.planner import PlannerSettings, build_plan_request, plan_of
from sciir.tasks.task import TaskReplyError


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
    def stats(self) -> Mapping[str, float]:
        """The wrapped generator's response-cache counts, when it is cached (else empty)."""
        return self.inner.stats

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        results: list[GenerationResult | None] = [None] * len(requests)
        self.stream(requests, results.__setitem__)
        return cast(list[GenerationResult], results)

    def stream(
        self,
        requests: Iterable[GenerationRequest | Pending],
        on_result: Callable[[int, GenerationResult], None],
        window: int | None = None,
    ) -> None:
        """Every prompt's plan streamed through the planner over the whole stage, then every plan streamed
        through the generator (``window`` ahead at most in each): one wait between the two, for the last
        plan, instead of one per window. A sample without a plan fails at once with the reason."""
        asked: list[GenerationRequest] = []
        for request in requests:
            if isinstance(request, Pending):  # it would wait for answers only the whole stage gives
                raise RuntimeError(
                    "a planned generator plans its whole stage first: its requests cannot wait"
                )
            asked.append(request)
        planned: list[tuple[int, GenerationRequest, str]] = []

        def plan_arrived(position: int, reply: VLMResult) -> None:
            request = asked[position]
            try:
                planned.append((position, request, plan_of(reply)))
            except TaskReplyError as error:
                reason = f"no plan for sample {request.sample_id}: {error}"
                on_result(position, GenerationResult(sample_id=request.sample_id, failure=reason))

        plan_requests = (build_plan_request(request.prompt, self.settings) for request in asked)
        self.planner.stream(plan_requests, plan_arrived, window)
        planned.sort(key=lambda item: item[0])  # drawn in the order asked, whatever order plans came in

        def drawn(index: int, result: GenerationResult) -> None:
            position, request, plan = planned[index]
            on_result(position, with_plan(result, request.prompt, plan))

        to_draw = (request.model_copy(update={"prompt": plan}) for _, request, plan in planned)
        self.inner.stream(to_draw, drawn, window)


def with_plan(result: GenerationResult, prompt: str, plan: str) -> GenerationResult:
    """``result`` recording the prompt the planner was given and the plan that was drawn."""
    return result.model_copy(update={"meta": {**result.meta, "planner": {"prompt": prompt, "plan": plan}}})
