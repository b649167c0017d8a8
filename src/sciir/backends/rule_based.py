"""The shared shape of the rule-based backends (``offline``, ``ocr``): they know no task names, and answer
a request with the answerer the task registry names for their kind of reader (``sciir.tasks.registry``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar

import pytesseract

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.tasks.registry import Sight, UnknownTask, answerer, readers_of


def answer_threads() -> int:
    """Requests answered at once: one per core. Their time goes to Tesseract processes and OpenCV, which
    run outside the GIL, and a reading's first pass uses one core alone."""
    return max(1, os.cpu_count() or 1)


class RuleBasedVLM(VisionLanguageModel):
    """Answers each request by its task's registered rules for ``reader``; a task it has no rules for, or
    an image its rules cannot read, fails that request with the reason and the batch goes on."""

    reader: ClassVar[str]
    sight: Sight

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        threads = min(answer_threads(), len(requests))
        if threads <= 1:
            return [self._answer(request) for request in requests]
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"{self.reader}-rules") as pool:
            return list(pool.map(self._answer, requests))

    def _answer(self, request: VLMRequest) -> VLMResult:
        try:
            rules = answerer(request.task, self.reader)
        except UnknownTask as error:
            return VLMResult.failed(f"{self.reader} backend: {error.args[0]}")
        if rules is None:
            return VLMResult.failed(
                f"{self.reader} backend has no rules for task {request.task!r} "
                f"(answers {readers_of(self.reader)})"
            )
        try:
            return rules(request, self.sight)
        except (ValueError, pytesseract.TesseractError) as error:  # this request fails, the batch goes on
            return VLMResult.failed(f"{self.reader} {request.task}: {error}")
