"""Small scripted backends for tests and examples: real implementations of the interfaces."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sciir.backends.base import (
    GenerationRequest,
    GenerationResult,
    ImageGenerator,
    VisionLanguageModel,
    VLMRequest,
    VLMResult,
)


class PromptLengthVLM(VisionLanguageModel):
    """Answers {"n": len(prompt)}; fails prompts that start with "fail". Counts the requests it serves."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.calls = 0

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.calls += len(requests)
        return [
            VLMResult.failed("scripted failure")
            if r.prompt.startswith("fail")
            else VLMResult(output={"n": len(r.prompt)})
            for r in requests
        ]


class SeedBytesGenerator(ImageGenerator):
    """Returns three bytes of the seed as the "image" and the seed as meta. Counts the requests it serves."""

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.calls = 0

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.calls += len(requests)
        return [
            GenerationResult(sample_id=r.sample_id, image=bytes([r.seed % 256]) * 3, meta={"seed": r.seed})
            for r in requests
        ]
