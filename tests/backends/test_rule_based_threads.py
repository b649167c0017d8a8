"""The rule-based backends answer a batch's requests on several threads, in request order, each failure
staying with its own request."""

from __future__ import annotations

import threading
import time

import pytest

from sciir.backends import rule_based
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.offline import OfflineVLM
from sciir.backends.rule_based import RuleBook


@pytest.fixture
def spied_rules():
    threads: set[str] = set()

    def rules(request: VLMRequest, sight: object) -> VLMResult:
        threads.add(threading.current_thread().name)
        time.sleep(0.05)  # long enough that the pool's second thread takes a request
        if request.prompt == "bad":
            raise ValueError("unreadable image")
        return VLMResult(output={"prompt": request.prompt})

    return threads, RuleBook("offline", {"screen": rules}, ("screen",))


def test_a_batch_is_answered_on_several_threads_in_request_order(spied_rules, monkeypatch):
    monkeypatch.setattr(rule_based, "answer_threads", lambda: 2)
    threads, rules = spied_rules
    prompts = [str(number) for number in range(6)]
    prompts[3] = "bad"
    results = OfflineVLM(rules).generate([VLMRequest(task="screen", prompt=prompt) for prompt in prompts])
    assert [result.output for result in results if result.ok] == [
        {"prompt": prompt} for prompt in prompts if prompt != "bad"
    ]
    assert [index for index, result in enumerate(results) if not result.ok] == [3]
    assert "unreadable image" in results[3].failure
    assert len(threads) == 2 and all(name.startswith("offline-rules") for name in threads)


def test_one_core_answers_on_the_calling_thread(spied_rules, monkeypatch):
    monkeypatch.setattr(rule_based, "answer_threads", lambda: 1)
    threads, rules = spied_rules
    OfflineVLM(rules).generate([VLMRequest(task="screen", prompt=str(n)) for n in range(3)])
    assert threads == {threading.current_thread().name}


def test_a_slow_request_holds_back_no_other_and_results_come_as_they_are_done(monkeypatch):
    """Answered a window at a time, the requests after the first window would wait for its slowest."""
    monkeypatch.setattr(rule_based, "answer_threads", lambda: 2)

    def rules(request: VLMRequest, sight: object) -> VLMResult:
        time.sleep(0.6 if request.prompt == "0" else 0.02)
        return VLMResult(output={"prompt": request.prompt})

    arrived: list[int] = []
    model = OfflineVLM(RuleBook("offline", {"screen": rules}, ("screen",)))
    requests = [VLMRequest(task="screen", prompt=str(n)) for n in range(12)]
    model.stream(requests, lambda position, result: arrived.append(position), window=4)
    assert sorted(arrived) == list(range(12))
    assert arrived.index(0) > arrived.index(8)  # later windows' requests were answered meanwhile
