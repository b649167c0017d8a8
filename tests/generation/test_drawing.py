"""A generator's requests stream through a window: an images API keeps the window full, a window the
generator raised on fails only its own samples, and each image's seconds run from its sending."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from sciir.backends.base import GenerationRequest, GenerationResult
from sciir.backends.openai_images import OpenAIImagesGenerator
from sciir.generation.drawing import run_generator
from sciir.testing.fake_images_server import FakeImagesServer, solid_png
from sciir.testing.scripted import SeedBytesGenerator


def _requests(count: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(sample_id=f"s{n}", prompt=f"a diagram {n}", seed=n, width=64, height=64)
        for n in range(count)
    ]


class CrashesOnSeed(SeedBytesGenerator):
    """Raises on any window holding the seed ``crash``, as a local model out of memory does."""

    def __init__(self, crash: int) -> None:
        super().__init__()
        self.crash = crash

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        if any(request.seed == self.crash for request in requests):
            raise MemoryError("out of device memory")
        return super().generate(requests)


def test_a_window_the_generator_raised_on_fails_its_samples_and_the_rest_are_drawn():
    timed = run_generator("local", CrashesOnSeed(crash=4), _requests(10), window=3)
    status = {result.sample_id: result.ok for result, _ in timed}
    assert [result.sample_id for result, _ in timed] == [f"s{n}" for n in range(10)]
    assert [s for s, ok in status.items() if not ok] == ["s3", "s4", "s5"]  # the window [3, 4, 5]
    failed = dict((result.sample_id, result.failure) for result, _ in timed)
    assert (
        failed["s4"]
        == "generator local raised on the window with sample s4: MemoryError('out of device memory')"
    )


class RefusesToStream(SeedBytesGenerator):
    def stream(self, requests: Any, on_result: Any, window: int | None = None) -> None:
        raise RuntimeError("no device")


def test_a_generator_that_raises_before_taking_a_request_is_not_retried_forever():
    with pytest.raises(RuntimeError, match="no device"):
        run_generator("local", RefusesToStream(), _requests(2), window=2)


class OneSlowImage:
    """An images responder that holds sample 0's image until ``needed`` other requests have arrived (or
    a deadline passes, so a runner in batches fails instead of hanging)."""

    def __init__(self, needed: int) -> None:
        self.needed, self.others = needed, threading.Semaphore(0)
        self.seen_while_slow = 0

    def __call__(self, body: dict[str, Any]) -> bytes:
        if body["prompt"].endswith(" 0"):
            deadline = time.monotonic() + 5.0
            while self.seen_while_slow < self.needed and self.others.acquire(
                timeout=deadline - time.monotonic()
            ):
                self.seen_while_slow += 1
        else:
            self.others.release()
        return solid_png(body)


def test_an_images_api_streams_one_slow_image_holds_back_nobody_else():
    """In batches of 4, sample 0's batch would hold the next batch back: at most 3 other requests could
    arrive while it is drawn. Streamed, the other slots keep taking requests."""
    responder = OneSlowImage(needed=20)
    with FakeImagesServer(responder) as server:
        generator = OpenAIImagesGenerator(base_url=server.base_url, model="fake-images", concurrency=4)
        timed = run_generator("api", generator, _requests(30), window=4)
    assert all(result.ok for result, _ in timed) and len(timed) == 30
    assert responder.seen_while_slow == 20
    slowest = max(timed, key=lambda pair: pair[1])
    assert slowest[0].sample_id == "s0"  # each image timed from its own sending
