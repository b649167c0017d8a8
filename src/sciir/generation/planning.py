"""The reasoning planner of Qwen-Image-SciIR (SciIR section 4), as a wrapper around any contestant generator.

Before synthesis a language model (any configured vision-language backend, task ``planner``:
``sciir.tasks.planner``) rewrites each prompt into a Sci-RCoT plan; the wrapped generator draws the plan,
and each result carries the prompt it was given and the plan (``meta``), which the generate pipeline saves
beside the image. A plan that cannot
be had (the planner failed or answered off its schema) fails that sample with the reason: the original
prompt is never drawn in its place, so a planned model is always judged on its plans.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator, VisionLanguageModel
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
        replies = self.planner.generate([build_plan_request(r.prompt, self.settings) for r in requests])
        plans: dict[str, str] = {}
        failed: dict[str, GenerationResult] = {}
        for request, reply in zip(requests, replies, strict=True):
            try:
                plans[request.sample_id] = plan_of(reply)
            except TaskReplyError as error:
                failed[request.sample_id] = GenerationResult(
                    sample_id=request.sample_id, failure=f"no plan for sample {request.sample_id}: {error}"
                )
        planned = [
            r.model_copy(update={"prompt": plans[r.sample_id]}) for r in requests if r.sample_id in plans
        ]
        drawn = {result.sample_id: result for result in (self.inner.generate(planned) if planned else [])}
        return [
            failed.get(request.sample_id)
            or with_plan(drawn[request.sample_id], request.prompt, plans[request.sample_id])
            for request in requests
        ]


def with_plan(result: GenerationResult, prompt: str, plan: str) -> GenerationResult:
    """``result`` recording the prompt the planner was given and the plan that was drawn."""
    return result.model_copy(update={"meta": {**result.meta, "planner": {"prompt": prompt, "plan": plan}}})
