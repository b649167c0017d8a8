"""Dry runs: what a run would ask its models, and roughly what that would cost, before anything is spent.

With ``SCIIR_DRY_RUN=1`` every vision-language backend is wrapped (under its response cache) by
:class:`DryRunVLM`: a request the cache can answer is answered from the cache, as in a real run (it costs
nothing); any other is **not sent**, but counted in the run's :data:`LEDGER` with an estimate of its
tokens and cost, and fails with the reason "dry run". The project hook writes no output in a dry run
(every dataset the pipeline writes is swapped for memory) and prints the ledger at the end.

Estimates, not measurements (``sciir.backends.token_estimates``): the prompt's text and reply schema at
4 characters a token; an image at one token per 28x28 pixels after the backend's ``image_limits``;
completion tokens at the backend's
``max_tokens`` / ``max_new_tokens`` (an upper bound), and cost from the backend's configured prices.
Requests that a stage makes only from earlier answers (annotate's later tasks) cannot be known without
those answers and are not counted: the summary says so.
"""

from __future__ import annotations

import io
import json
import math
import os
import threading
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.token_estimates import image_tokens, text_tokens
from sciir.images.payload import ImageLimits

DRY_RUN_ENV = "SCIIR_DRY_RUN"
NOT_SENT = "dry run: not sent to the model (SCIIR_DRY_RUN is set)"


def dry_run_requested() -> bool:
    return os.environ.get(DRY_RUN_ENV, "").strip().lower() not in ("", "0", "false", "no")


def sent_image_tokens(image: bytes, max_side: int | None) -> int:
    """Tokens of one image as sent: its size (its longer side scaled down to ``max_side``) in patches."""
    size = getattr(image, "size", None)  # a sciir.images.payload.Payload knows its size
    if size is None:
        from PIL import Image

        with Image.open(io.BytesIO(image)) as opened:  # the header only
            size = opened.size
    width, height = size
    scale = min(1.0, max_side / max(width, height)) if max_side else 1.0
    return image_tokens(width * scale, height * scale)


def prompt_tokens(request: VLMRequest, max_side: int | None) -> int:
    """The prompt's text, the reply schema it carries, and its images, in tokens."""
    text = len(request.prompt) + (len(json.dumps(request.json_schema)) if request.json_schema else 0)
    return math.ceil(text_tokens(text)) + sum(sent_image_tokens(image, max_side) for image in request.images)


@dataclass
class LedgerRow:
    """The requests one backend would have been sent for one task."""

    requests: int = 0
    images: int = 0
    prompt_tokens: int = 0
    completion_tokens_at_most: int | None = 0
    cost_usd: float | None = 0.0


@dataclass
class Ledger:
    """The dry run's counts, by backend and task (one ledger per process: one ``kedro run``)."""

    rows: dict[tuple[str, str], LedgerRow] = field(default_factory=lambda: defaultdict(LedgerRow))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self, backend: str, task: str, prompt: int, images: int, completion: int | None, cost: float | None
    ) -> None:
        with self._lock:
            row = self.rows[(backend, task)]
            row.requests += 1
            row.images += images
            row.prompt_tokens += prompt
            row.completion_tokens_at_most = (
                None if completion is None or row.completion_tokens_at_most is None
                else row.completion_tokens_at_most + completion
            )  # fmt: skip
            row.cost_usd = None if cost is None or row.cost_usd is None else row.cost_usd + cost

    def table(self) -> list[dict[str, Any]]:
        return [
            {"backend": backend, "task": task, **vars(row)}
            for (backend, task), row in sorted(self.rows.items())
        ]

    def clear(self) -> None:
        with self._lock:
            self.rows.clear()


LEDGER = Ledger()


def _completion_limit(config: dict[str, Any]) -> int | None:
    for name in ("max_tokens", "max_new_tokens", "max_completion_tokens"):
        value = config.get(name)
        if isinstance(value, int):
            return value
    return None


class DryRunVLM(VisionLanguageModel):
    """Counts the requests it is given in ``ledger`` and sends none (see the module docstring)."""

    def __init__(self, inner: VisionLanguageModel, ledger: Ledger = LEDGER) -> None:
        super().__init__()
        self.inner = inner
        self.ledger = ledger
        identity = inner.identity()
        config = identity.get("config") or {}
        self._label = str(identity.get("backend", type(inner).__name__))
        self._max_side = inner.image_limits.max_side or 1024
        self._completion = _completion_limit(config)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()  # the cache finds what the real backend answered before

    @property
    def stream_window(self) -> int:
        return self.inner.stream_window

    @property
    def image_limits(self) -> ImageLimits:
        return self.inner.image_limits

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [self._count(request) for request in requests]

    def _count(self, request: VLMRequest) -> VLMResult:
        prompt = prompt_tokens(request, self._max_side)
        cost = self._cost(prompt)
        self.ledger.add(self._label, request.task, prompt, len(request.images), self._completion, cost)
        return VLMResult.failed(NOT_SENT)

    def _cost(self, prompt: int) -> float | None:
        prices = getattr(self.inner, "prices", None)
        if prices is None or self._completion is None:
            return None
        cost: float = prices.cost_usd({"prompt_tokens": prompt, "completion_tokens": self._completion})
        return cost
