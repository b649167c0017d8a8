"""Streaming through the model seam: a bounded window, no waves, a lazy producer, cache hits at once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence

import pytest

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.http.client import HTTPTransport
from sciir.backends.http.session import HTTPSession
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan
from sciir.testing.scripted import LastToFirst, PromptLengthVLM


def _judge_request(n: int) -> VLMRequest:
    checklist = [{"id": f"q{n}", "question": f"Is label {n} drawn?"}]
    return VLMRequest(task="judge", prompt="Judge.\n" + json.dumps(checklist))


class Pulled:
    """A lazy stream of requests that records how many were taken from it."""

    def __init__(self, requests: Sequence[VLMRequest]) -> None:
        self.requests, self.count = requests, 0

    def __iter__(self) -> Iterator[VLMRequest]:
        for request in self.requests:
            self.count += 1
            yield request


def test_an_http_stream_keeps_at_most_window_requests_ahead_of_the_replies():
    window, total = 4, 40
    stream = Pulled([_judge_request(n) for n in range(total)])
    pulled_at_result: list[int] = []
    positions: list[int] = []

    def arrived(position: int, result: VLMResult) -> None:
        assert result.ok, result.failure
        pulled_at_result.append(stream.count)
        positions.append(position)

    with FakeOpenAIServer(faults=FaultPlan(latency_s=(0.0, 0.02), seed=3)) as srv:
        judge = OpenAICompatibleVLM(base_url=srv.base_url, model="judge", concurrency=window)
        judge.stream(stream, arrived)
        stats = srv.stats
    assert sorted(positions) == list(range(total))
    assert stats.chat_requests == total and stats.max_in_flight == window
    # Request n + window is taken only once n requests have been answered: never more than the window ahead.
    assert all(pulled <= done + window for done, pulled in enumerate(pulled_at_result))
    assert pulled_at_result[0] <= window  # lazily: the first reply came before the stream was read through


def test_a_window_smaller_than_the_concurrency_bounds_the_requests_in_flight():
    with FakeOpenAIServer(faults=FaultPlan(latency_s=(0.0, 0.01), seed=1)) as srv:
        judge = OpenAICompatibleVLM(base_url=srv.base_url, model="judge", concurrency=8)
        judge.stream((_judge_request(n) for n in range(24)), lambda index, result: None, window=2)
        assert srv.stats.max_in_flight <= 2 and srv.stats.chat_requests == 24


def test_one_slow_reply_holds_back_nobody_else():
    """Item 0 does not finish until 30 others have; in waves of the window it could never see more than
    3 others finish, and it would give up after its deadline with fewer."""
    window, total, needed = 4, 60, 30
    finished: list[int] = []
    started_while_slow: list[int] = []
    slow_running = False

    async def call(session: HTTPSession, item: int) -> int:
        nonlocal slow_running
        if item == 0:
            slow_running = True
            for _ in range(10_000):  # a deadline, so a wave-by-wave runner fails instead of hanging
                if len(finished) >= needed:
                    break
                await asyncio.sleep(0.001)
            slow_running = False
            return item
        if slow_running:
            started_while_slow.append(item)
        await asyncio.sleep(0)
        return item

    def on_error(item: int, err: Exception) -> int:
        raise AssertionError(f"item {item} failed: {err}")

    transport = HTTPTransport(base_url="http://127.0.0.1:9", concurrency=window)
    transport.run_stream(range(total), call, on_error, lambda position, item: finished.append(item))
    assert sorted(finished) == list(range(total))
    assert finished.index(0) >= needed  # the slow one finished after at least 30 others
    assert len(started_while_slow) >= needed  # and they were started while it was in flight


def test_an_exception_from_the_producer_stops_the_stream():
    def broken() -> Iterator[int]:
        yield 1
        raise ValueError("the producer broke")

    async def call(session: HTTPSession, item: int) -> int:
        return item

    transport = HTTPTransport(base_url="http://127.0.0.1:9", concurrency=2)
    with pytest.raises(ValueError, match="the producer broke"):
        transport.run_stream(broken(), call, lambda item, err: item, lambda position, item: None)


class ReversedVLM(LastToFirst, PromptLengthVLM):
    """A synchronous backend that reports each window's results last to first."""


def test_a_synchronous_backend_streams_one_window_at_a_time_and_positions_stay_right():
    stream = Pulled([VLMRequest(task="t", prompt="x" * n) for n in range(1, 8)])
    seen: dict[int, tuple[int, dict]] = {}
    backend = ReversedVLM()
    backend.stream(stream, lambda position, result: seen.update({position: (stream.count, result.output)}))
    assert {position: output for position, (_, output) in seen.items()} == {p: {"n": p + 1} for p in range(7)}
    assert seen[0][0] == 7  # the default window (16) holds the whole stream
    windowed = Pulled(stream.requests)
    pulled: dict[int, int] = {}
    backend.stream(windowed, lambda position, result: pulled.update({position: windowed.count}), window=3)
    assert pulled == {0: 3, 1: 3, 2: 3, 3: 6, 4: 6, 5: 6, 6: 7}


def test_cache_hits_stream_at_once_and_only_misses_reach_the_backend(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = PromptLengthVLM(model="m")
    requests = [VLMRequest(task="t", prompt="p" * n) for n in range(1, 11)]
    CachedVLM(inner, cache).generate(requests[:6])
    assert inner.calls == 6
    cached = CachedVLM(inner, cache)
    answers: dict[int, VLMResult] = {}
    cached.stream(iter(requests + requests[8:]), lambda position, result: answers.update({position: result}))
    assert inner.calls == 6 + 4  # requests 6..9 once each; their repeats at positions 10, 11 ride along
    assert sorted(answers) == list(range(12))
    assert all(answers[p].cached for p in [*range(6), 10, 11])  # hits, and repeats answered unsent
    assert not any(answers[p].cached for p in range(6, 10))
    assert [answers[p].output["n"] for p in range(12)] == [*range(1, 11), 9, 10]
    assert (cached.stats["hits"], cached.stats["misses"]) == (8, 4)


class Recording(VisionLanguageModel):
    """Counts the requests sent; answers nothing but {"ok": true}."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.sent += len(requests)
        return [VLMResult(output={"ok": True}) for _ in requests]


def test_a_fully_cached_stream_never_calls_the_backend(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    requests = [_judge_request(n) for n in range(20)]
    CachedVLM(Recording(), cache).generate(requests)
    again = Recording()
    order: list[int] = []
    CachedVLM(again, cache).stream(iter(requests), lambda position, result: order.append(position))
    assert again.sent == 0 and order == list(range(20))
