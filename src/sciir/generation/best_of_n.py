"""Test-time scaling by best-of-N (AIBench section 4), as a wrapper around any contestant generator.

Each prompt is drawn ``n`` times (seeds ``seed``, ``seed + 1`` ...); a selector (any vision-language backend,
task ``candidate_score``: ``sciir.tasks.candidate_score``) scores every candidate against the prompt alone,
never against the benchmark's checklist, so a contestant still sees nothing of the answer key; the best
scored candidate is kept (the earliest seed on a tie). A candidate the selector could not score is never given a score: when none is
scored the first drawn candidate is kept, and the manifest's ``meta.best_of`` says so with the reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator, VisionLanguageModel
from sciir.tasks.candidate_score import build_score_request, score_of


class BestOfSettings(BaseModel):
    """A generator entry's ``best_of`` (conf/base/backends.yml) beside its selector backend."""

    n: int = Field(default=4, ge=2, le=64)


def choose(scores: Sequence[int | None]) -> int | None:
    """The index of the best score (the earliest on a tie), None when nothing was scored."""
    scored = [(score, -index) for index, score in enumerate(scores) if score is not None]
    return -max(scored)[1] if scored else None


class BestOfNGenerator(ImageGenerator):
    """``inner`` draws each prompt ``n`` times and ``selector`` picks the best candidate."""

    def __init__(
        self, inner: ImageGenerator, selector: VisionLanguageModel, settings: BestOfSettings
    ) -> None:
        super().__init__()
        self.inner, self.selector, self.settings = inner, selector, settings
        self.role = inner.role

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "best_of": self.settings.n, "selector": self.selector.identity()}

    @property
    def stats(self) -> Mapping[str, float]:
        """The wrapped generator's counts (its response cache's, when it is cached)."""
        return self.inner.stats

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """Every candidate of the window drawn in one call, then every usable one scored in one call (no
        wait per prompt), then the best kept per prompt."""
        n = self.settings.n
        candidates = [r.model_copy(update={"seed": r.seed + k}) for r in requests for k in range(n)]
        drawn = self.inner.generate(candidates)
        groups = [drawn[i * n : (i + 1) * n] for i in range(len(requests))]
        usable = [(i, k) for i, group in enumerate(groups) for k, result in enumerate(group) if result.ok]
        replies = self.selector.generate(
            [build_score_request(requests[i].prompt, groups[i][k].image or b"") for i, k in usable]
        )
        judged: dict[tuple[int, int], tuple[int | None, str]] = dict(
            zip(usable, (score_of(reply) for reply in replies), strict=True)
        )
        return [self._select(request, groups[i], judged, i) for i, request in enumerate(requests)]

    def _select(
        self,
        request: GenerationRequest,
        drawn: Sequence[GenerationResult],
        judged: Mapping[tuple[int, int], tuple[int | None, str]],
        index: int,
    ) -> GenerationResult:
        kept = [k for k, result in enumerate(drawn) if result.ok]
        if not kept:
            reasons = "; ".join(dict.fromkeys(str(result.failure) for result in drawn))
            return GenerationResult(
                sample_id=request.sample_id, failure=f"all {len(drawn)} candidates failed: {reasons}"
            )
        scores = [judged[(index, k)][0] for k in kept]
        best = choose(scores)
        record: dict[str, Any] = {
            "n": len(drawn),
            "seeds": [request.seed + k for k in kept],
            "failed_candidates": len(drawn) - len(kept),
            "scores": scores,
            "chosen_seed": request.seed + kept[best or 0],
        }
        if best is None:
            record["unscored"] = "no candidate was scored, the first drawn is kept: " + "; ".join(
                dict.fromkeys(judged[(index, k)][1] for k in kept)
            )
        chosen = drawn[kept[best or 0]]
        return chosen.model_copy(update={"meta": {**chosen.meta, "best_of": record}})
