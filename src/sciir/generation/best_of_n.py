"""Test-time scaling by best-of-N (AIBench section 4), as a wrapper around any contestant generator.

Each prompt is drawn ``n`` times (seeds ``seed``, ``seed + 1`` ...); a selector (any vision-language backend,
task ``candidate_score``) scores every candidate against the prompt alone, never against the benchmark's
checklist, so a contestant still sees nothing of the answer key; the best scored candidate is kept (the
earliest seed on a tie). A candidate the selector could not score is never given a score: when none is
scored the first drawn candidate is kept, and the manifest's ``meta.best_of`` says so with the reasons.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, Field

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
)
from sciir.backends.strict_schema import strict_model_schema
from sciir.tasks.parsing import TaskReplyError, parse_reply
from sciir.tasks.prompts import prompt_template

SCORE_TASK = "candidate_score"


class CandidateScore(BaseModel):
    """The selector's reply: 1-10, or null when the image cannot be judged, with the reason."""

    score: Annotated[int, Field(ge=1, le=10)] | None
    rationale: str


class BestOfSettings(BaseModel):
    """A generator entry's ``best_of`` (conf/base/backends.yml) beside its selector backend."""

    n: int = Field(default=4, ge=2, le=64)


def build_score_request(prompt: str, image: bytes) -> VLMRequest:
    """The selector's request for one candidate: the image and the prompt it was drawn from."""
    template = prompt_template(SCORE_TASK)
    schema = strict_model_schema(CandidateScore)
    return VLMRequest(
        task=SCORE_TASK,
        prompt=template.render(prompt=prompt, schema=json.dumps(schema, ensure_ascii=False)),
        images=[image],
        json_schema=schema,
        context={"prompt": prompt},
        template_version=template.version,
    )


def score_of(reply: VLMResult) -> tuple[int | None, str]:
    """A candidate's score and why (the selector's rationale, or why there is no score)."""
    try:
        parsed = parse_reply(CandidateScore, SCORE_TASK, reply)
    except TaskReplyError as error:
        return None, str(error)
    return parsed.score, parsed.rationale


def choose(scores: Sequence[int | None]) -> int | None:
    """The index of the best score (the earliest on a tie), None when nothing was scored."""
    scored = [(score, -index) for index, score in enumerate(scores) if score is not None]
    return -max(scored)[1] if scored else None


class BestOfNGenerator(ImageGenerator):
    """``inner`` draws each prompt ``n`` times and ``selector`` picks the best candidate."""

    def __init__(self, inner: ImageGenerator, selector: VisionLanguageModel, settings: BestOfSettings) -> None:
        super().__init__()
        self.inner, self.selector, self.settings = inner, selector, settings
        self.role = inner.role

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "best_of": self.settings.n, "selector": self.selector.identity()}

    @property
    def stats(self) -> Any:
        return getattr(self.inner, "stats", None)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        n = self.settings.n
        candidates = [r.model_copy(update={"seed": r.seed + k}) for r in requests for k in range(n)]
        drawn = self.inner.generate(candidates)
        return [self._select(request, drawn[i * n : (i + 1) * n]) for i, request in enumerate(requests)]

    def _select(self, request: GenerationRequest, drawn: Sequence[GenerationResult]) -> GenerationResult:
        kept = [k for k, result in enumerate(drawn) if result.ok]
        usable = [drawn[k] for k in kept]
        if not usable:
            reasons = "; ".join(dict.fromkeys(str(result.failure) for result in drawn))
            return GenerationResult(
                sample_id=request.sample_id, failure=f"all {len(drawn)} candidates failed: {reasons}"
            )
        replies = self.selector.generate([build_score_request(request.prompt, r.image or b"") for r in usable])
        judged = [score_of(reply) for reply in replies]
        scores = [score for score, _ in judged]
        best = choose(scores)
        record: dict[str, Any] = {
            "n": len(drawn),
            "seeds": [request.seed + k for k in kept],
            "failed_candidates": len(drawn) - len(usable),
            "scores": scores,
            "chosen_seed": request.seed + kept[best or 0],
        }
        if best is None:
            record["unscored"] = "no candidate was scored, the first drawn is kept: " + "; ".join(
                dict.fromkeys(reason for _, reason in judged)
            )
        chosen = usable[best or 0]
        return chosen.model_copy(update={"meta": {**chosen.meta, "best_of": record}})
