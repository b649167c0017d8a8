"""One stream through two models, the second fed by the first's answers: every job and step answered once,
both windows kept full over HTTP (no barrier between the models), callbacks on the calling thread, and an
error on either side stops both and is raised."""

from __future__ import annotations

import json
import threading

import pytest

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.runs.model_chain import stream_through_two
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan
from sciir.testing.scripted import LastToFirst, PromptLengthVLM


def _request(task: str, what: str) -> VLMRequest:
    """A request the loopback server answers (it reads a JSON checklist) and whose prompt names ``what``."""
    return VLMRequest(
        task=task, prompt=f"{what}\n" + json.dumps([{"id": what, "question": f"Is {what} drawn?"}])
    )


class Record:
    """Jobs 0..n-1; job j makes j % 3 steps for the second model (none, one or two)."""

    def __init__(self) -> None:
        self.first: dict[int, VLMResult] = {}
        self.second: dict[tuple[int, int], VLMResult] = {}
        self.threads: set[str] = set()

    def first_request(self, job: int) -> VLMRequest:
        return _request("first", f"job {job}")

    def first_answered(self, job: int, result: VLMResult) -> list[tuple[int, int]]:
        self.threads.add(threading.current_thread().name)
        assert job not in self.first
        self.first[job] = result
        return [(job, k) for k in range(job % 3)]

    def second_request(self, step: tuple[int, int]) -> VLMRequest:
        return _request("second", f"step {step[1]} of job {step[0]}")

    def second_answered(self, step: tuple[int, int], result: VLMResult) -> None:
        self.threads.add(threading.current_thread().name)
        assert step[0] in self.first, f"{step} was answered before its job's first answer"
        assert step not in self.second
        self.second[step] = result


def test_every_job_and_every_step_is_answered_once_on_the_calling_thread():
    record = Record()
    first = type("Reversed", (LastToFirst, PromptLengthVLM), {})()
    second = PromptLengthVLM()
    stream_through_two(
        first, second, range(30), record.first_request, record.first_answered,
        record.second_request, record.second_answered, window=4,
    )  # fmt: skip
    assert sorted(record.first) == list(range(30))
    assert sorted(record.second) == [(j, k) for j in range(30) for k in range(j % 3)]
    assert all(record.first[j].output == {"n": len(record.first_request(j).prompt)} for j in range(30))
    assert all(
        r.output == {"n": len(record.second_request(step).prompt)} for step, r in record.second.items()
    )
    assert record.threads == {threading.current_thread().name}
    assert (first.calls, second.calls) == (30, 30)


def test_over_http_both_windows_stay_full_at_once():
    """A barrier between the models (every first answer, then every second request) would leave one
    server idle while the other works; chained, both hold their window at the same time."""
    window, jobs = 6, 60
    record = Record()
    latency = FaultPlan(latency_s=(0.02, 0.06), seed=3)
    with FakeOpenAIServer(faults=latency) as one, FakeOpenAIServer(faults=latency) as two:
        first = OpenAICompatibleVLM(base_url=one.base_url, model="first", concurrency=window)
        second = OpenAICompatibleVLM(base_url=two.base_url, model="second", concurrency=window)
        both_busy: list[bool] = []
        answered = record.second_answered

        def second_answered(step: tuple[int, int], result: VLMResult) -> None:
            both_busy.append(one.stats.in_flight > 0)
            answered(step, result)

        stream_through_two(
            first, second, range(jobs), record.first_request, record.first_answered,
            record.second_request, second_answered,
        )  # fmt: skip
        stats = one.stats, two.stats
    assert [s.chat_requests for s in stats] == [jobs, jobs]  # 60 jobs make 0 + 1 + 2 ... = 60 steps
    assert [s.max_in_flight for s in stats] == [window, window]
    assert all(result.ok for result in [*record.first.values(), *record.second.values()])
    # While there were jobs left, the first server was working whenever a second answer came in.
    assert sum(both_busy[: len(both_busy) // 2]) >= len(both_busy) // 2 - 1


class Broken(Exception):
    pass


def test_an_error_in_a_callback_stops_both_streams_and_is_raised():
    record = Record()

    def second_answered(step: tuple[int, int], result: VLMResult) -> None:
        if step == (4, 0):
            raise Broken("the caller could not keep the answer")
        record.second_answered(step, result)

    threads = threading.active_count()
    with pytest.raises(Broken):
        stream_through_two(
            PromptLengthVLM(), PromptLengthVLM(), range(100), record.first_request,
            record.first_answered, record.second_request, second_answered, window=2,
        )  # fmt: skip
    assert len(record.first) < 100 and threading.active_count() == threads


def test_an_error_in_the_first_model_is_raised_on_the_calling_thread():
    class Crashing(PromptLengthVLM):
        def generate(self, requests):
            if any(r.prompt.startswith("job 6\n") for r in requests):
                raise Broken("the first model's process died")
            return super().generate(requests)

    record = Record()
    threads = threading.active_count()
    with pytest.raises(Broken):
        stream_through_two(
            Crashing(), PromptLengthVLM(), range(20), record.first_request, record.first_answered,
            record.second_request, record.second_answered, window=2,
        )  # fmt: skip
    assert 6 not in record.first and threading.active_count() == threads
