"""One stream over a stage whose requests depend on earlier answers: follow-ups are sent as soon as their
answer arrives, the window stays full (no waves), a waiting source with nothing in flight is a clear error."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from sciir.backends.base import PENDING, Pending, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.http.client import HTTPTransport
from sciir.backends.http.session import HTTPSession
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.runs.follow_ups import stream_with_follow_ups
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan
from sciir.testing.scripted import LastToFirst, PromptLengthVLM

STEPS = 3  # each sample asks three tasks in a chain: step k + 1 needs step k's answer


class Chains:
    """Samples whose steps form a chain; records the order of answers and how full the window was."""

    def __init__(self, samples: int) -> None:
        self.samples = samples
        self.answers: dict[tuple[int, int], VLMResult] = {}
        self.made = self.started = 0
        self.in_flight_at_answer: list[tuple[int, bool]] = []  # (requests in flight, new samples left)

    def first_jobs(self) -> Iterator[tuple[int, int]]:
        for sample in range(self.samples):
            self.started += 1
            yield sample, 0

    def request(self, job: tuple[int, int]) -> VLMRequest:
        self.made += 1
        sample, step = job
        # The prompt's length encodes the job, so a scripted answer names what it answered.
        checklist = [{"id": f"s{sample}-{step}", "question": f"Is step {step} of sample {sample} drawn?"}]
        return VLMRequest(
            task="chain", prompt="p" * (1 + sample * STEPS + step) + "\n" + json.dumps(checklist)
        )

    def answered(self, job: tuple[int, int], result: VLMResult) -> list[tuple[int, int]]:
        sample, step = job
        assert step == 0 or (sample, step - 1) in self.answers, f"{job} was sent before the step it needs"
        self.in_flight_at_answer.append((self.made - len(self.answers), self.started < self.samples))
        self.answers[job] = result
        return [(sample, step + 1)] if step + 1 < STEPS and result.ok else []


def test_every_step_of_every_chain_is_answered_once_after_the_step_it_needs():
    chains = Chains(samples=25)
    model = type("Reversed", (LastToFirst, PromptLengthVLM), {})()
    stream_with_follow_ups(model, chains.first_jobs(), chains.request, chains.answered, window=4)
    assert sorted(chains.answers) == [(s, k) for s in range(25) for k in range(STEPS)]
    assert model.calls == 25 * STEPS
    assert all(result.ok for result in chains.answers.values())


def test_a_failed_step_ends_its_chain_and_no_other():
    chains = Chains(samples=6)
    model = PromptLengthVLM()
    original = chains.request

    def failing_sample_two(job: tuple[int, int]) -> VLMRequest:
        request = original(job)
        return request.model_copy(update={"prompt": "fail" + request.prompt}) if job == (2, 1) else request

    stream_with_follow_ups(model, chains.first_jobs(), failing_sample_two, chains.answered, window=3)
    assert (2, 2) not in chains.answers and not chains.answers[(2, 1)].ok
    assert len(chains.answers) == 6 * STEPS - 1


def test_over_http_the_window_stays_full_until_the_new_samples_run_out():
    """In waves (a batch's step 1, wait, step 2, wait ...) the requests in flight fall as a wave's answers
    come in, (window + 1) / 2 on average at each answer; streamed, an answer finds the window full while
    new samples remain, short only of the answers that arrived with it."""
    window, samples = 6, 40
    chains = Chains(samples)
    with FakeOpenAIServer(faults=FaultPlan(latency_s=(0.0, 0.03), seed=5)) as srv:
        judge = OpenAICompatibleVLM(base_url=srv.base_url, model="fake-vlm", concurrency=window)
        stream_with_follow_ups(judge, chains.first_jobs(), chains.request, chains.answered)
        stats = srv.stats
    assert stats.chat_requests == samples * STEPS and stats.max_in_flight == window
    assert all(result.ok for result in chains.answers.values())
    while_new = [in_flight for in_flight, new_left in chains.in_flight_at_answer if new_left]
    assert len(while_new) > samples  # most of the stream ran with new samples still to start
    assert max(while_new) == window and sum(while_new) / len(while_new) >= window - 1


def test_a_cached_rerun_sends_nothing_and_gives_the_same_answers(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    first, again = Chains(10), Chains(10)
    model = PromptLengthVLM()
    stream_with_follow_ups(CachedVLM(model, cache), first.first_jobs(), first.request, first.answered)
    stream_with_follow_ups(CachedVLM(model, cache), again.first_jobs(), again.request, again.answered)
    assert model.calls == 10 * STEPS
    assert {job: r.output for job, r in again.answers.items()} == {
        job: r.output for job, r in first.answers.items()
    }
    assert all(result.cached for result in again.answers.values())


def _waits_with_nothing_sent() -> Iterator[VLMRequest | Pending]:
    yield PENDING


def test_a_source_that_waits_with_nothing_in_flight_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match="PENDING"):
        PromptLengthVLM().stream(_waits_with_nothing_sent(), lambda position, result: None)

    async def call(session: HTTPSession, item: VLMRequest) -> VLMResult:
        return VLMResult(output={})

    transport = HTTPTransport(base_url="http://127.0.0.1:9", concurrency=2)
    with pytest.raises(RuntimeError, match="PENDING"):
        transport.run_stream(_waits_with_nothing_sent(), call, lambda item, err: item, lambda p, r: None)
