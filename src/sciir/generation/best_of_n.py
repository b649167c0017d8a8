"""Test-time scaling by best-of-N (AIBench section 4), as a wrapper around any contestant generator.

Each prompt is drawn ``n`` times (seeds ``seed``, ``seed + 1`` ...); a selector (any vision-language backend,
task ``candidate_score``: ``sciir.tasks.candidate_score``) scores every candidate against the prompt alone,
never against the benchmark's checklist, so a contestant still sees nothing of the answer key; the best
scored candidate is kept (the earliest seed on a tie). A candidate the selector could not score is never given a score: when none is
scored the first drawn candidate is kept, and the manifest's ``meta.best_of`` says so with the reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

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
from sciir.tasks.candidate_score import build_score_request, score_of


class BestOfSettings(BaseModel):
    """A generator entry's ``best_of`` (conf/base/backends.yml) beside its selector backend."""

    n: int = Field(default=4, ge=2, le=64)


def choose(scores: Sequence[int | None]) -> int | None:
    """The index of the best score (the earliest on a tie), None when nothing was scored."""
    scored = [(score, -index) for index, score in enumerate(scores) if score is not None]
    return -max(scored)[1] if scored else None


class BestOfNGenerator(WrappingGenerator):
    """``inner`` draws each prompt ``n`` times and ``selector`` picks the best candidate."""

    wrapper_name = "a best-of-N generator"

    def __init__(
        self, inner: ImageGenerator, selector: VisionLanguageModel, settings: BestOfSettings
    ) -> None:
        super().__init__(inner)
        self.selector, self.settings = selector, settings

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "best_of": self.settings.n, "selector": self.selector.identity()}

    def stream(
        self,
        requests: Iterable[GenerationRequest | Pending],
        on_result: Callable[[int, GenerationResult], None],
        window: int | None = None,
    ) -> None:
        """Every prompt's candidates streamed through the generator and each drawn candidate scored as soon
        as it arrives (``sciir.runs.model_chain``), generator and selector each with ``window`` requests in
        flight at most; a prompt's best is reported once its last candidate is drawn and scored."""
        n = self.settings.n

        def jobs() -> Iterator[tuple[_Prompt, int]]:
            for position, request in self.positioned(requests):
                prompt = _Prompt(position, request, n)
                yield from ((prompt, k) for k in range(n))

        def drawn(job: tuple[_Prompt, int], result: GenerationResult) -> list[tuple[_Prompt, int]]:
            prompt, k = job
            prompt.drawn[k] = result
            if result.ok:
                return [job]
            self._candidate_done(prompt, on_result)
            return []

        def scored(step: tuple[_Prompt, int], reply: VLMResult) -> None:
            prompt, k = step
            prompt.judged[k] = score_of(reply)
            self._candidate_done(prompt, on_result)

        stream_through_two(
            self.inner,
            self.selector,
            jobs(),
            lambda job: job[0].request.model_copy(update={"seed": job[0].request.seed + job[1]}),
            drawn,
            lambda step: build_score_request(step[0].request.prompt, step[0].drawn[step[1]].image or b""),
            scored,
            window,
        )

    def _candidate_done(self, prompt: _Prompt, on_result: Callable[[int, GenerationResult], None]) -> None:
        prompt.left -= 1
        if not prompt.left:
            on_result(prompt.position, select(prompt))


@dataclass
class _Prompt:
    """One prompt's candidates on their way: drawn (or failed), then scored."""

    position: int
    request: GenerationRequest
    left: int  # candidates not yet drawn and scored (a failed one counts once drawn)
    drawn: dict[int, GenerationResult] = field(default_factory=dict)
    judged: dict[int, tuple[int | None, str]] = field(default_factory=dict)


def select(prompt: _Prompt) -> GenerationResult:
    """The best scored candidate of a prompt (the earliest drawn when none was scored), with the record of
    every candidate; a prompt whose candidates all failed fails with their reasons."""
    request, drawn = prompt.request, [prompt.drawn[k] for k in sorted(prompt.drawn)]
    kept = [k for k, result in enumerate(drawn) if result.ok]
    if not kept:
        reasons = "; ".join(dict.fromkeys(str(result.failure) for result in drawn))
        return GenerationResult(
            sample_id=request.sample_id, failure=f"all {len(drawn)} candidates failed: {reasons}"
        )
    scores = [prompt.judged[k][0] for k in kept]
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
            dict.fromkeys(prompt.judged[k][1] for k in kept)
        )
    chosen = drawn[kept[best or 0]]
    return chosen.model_copy(update={"meta": {**chosen.meta, "best_of": record}})
