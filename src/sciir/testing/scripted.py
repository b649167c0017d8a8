"""Small scripted backends for tests and examples: real implementations of the interfaces."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    Model,
    Req,
    Res,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
)


class CountingModel(Model[Req, Res]):
    """A scripted model that answers each request on its own (``answer``) and counts the requests it serves."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.calls = 0

    def generate(self, requests: Sequence[Req]) -> list[Res]:
        self.calls += len(requests)
        return [self.answer(request) for request in requests]

    def answer(self, request: Req) -> Res:
        raise NotImplementedError


class PromptLengthVLM(CountingModel[VLMRequest, VLMResult], VisionLanguageModel):
    """Answers {"n": len(prompt)}; fails prompts that start with "fail". Counts the requests it serves."""

    def answer(self, request: VLMRequest) -> VLMResult:
        if request.prompt.startswith("fail"):
            return VLMResult.failed("scripted failure")
        return VLMResult(output={"n": len(request.prompt)})


class SeedBytesGenerator(CountingModel[GenerationRequest, GenerationResult], ImageGenerator):
    """Returns three bytes of the seed as the "image" and the seed as meta. Counts the requests it serves."""

    def answer(self, request: GenerationRequest) -> GenerationResult:
        image = bytes([request.seed % 256]) * 3
        return GenerationResult(sample_id=request.sample_id, image=image, meta={"seed": request.seed})


class LastToFirst(Model[Req, Res]):
    """Mixed in before a synchronous scripted model: each window of a stream is reported last to first, as
    one slow first reply would make it."""

    def _answer_window(self, requests: Sequence[Req], on_result: Callable[[int, Res], None]) -> list[Res]:
        results = self.generate(requests)
        for index in reversed(range(len(results))):
            on_result(index, results[index])
        return results
