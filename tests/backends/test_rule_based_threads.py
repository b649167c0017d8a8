"""The rule-based backends answer a batch's requests on several threads, in request order, each failure
staying with its own request."""

from __future__ import annotations

import threading
import time

import pytest

from sciir.backends import rule_based
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.offline import OfflineVLM


@pytest.fixture
def spied_rules(monkeypatch):
    threads: set[str] = set()

    def rules(request: VLMRequest, sight: object) -> VLMResult:
        threads.add(threading.current_thread().name)
        time.sleep(0.05)  # long enough that the pool's second thread takes a request
        if request.prompt == "bad":
            raise ValueError("unreadable image")
        return VLMResult(output={"prompt": request.prompt})

    monkeypatch.setattr(rule_based, "answerer", lambda task, reader: rules)
    return threads


def test_a_batch_is_answered_on_several_threads_in_request_order(spied_rules, monkeypatch):
    monkeypatch.setattr(rule_based, "answer_threads", lambda: 2)
    prompts = [str(number) for number in range(6)]
    prompts[3] = "bad"
    results = OfflineVLM().generate([VLMRequest(task="screen", prompt=prompt) for prompt in prompts])
    assert [result.output for result in results if result.ok] == [
        {"prompt": prompt} for prompt in prompts if prompt != "bad"
    ]
    assert [index for index, result in enumerate(results) if not result.ok] == [3]
    assert "unreadable image" in results[3].failure
    assert len(spied_rules) == 2 and all(name.startswith("offline-rules") for name in spied_rules)


def test_one_core_answers_on_the_calling_thread(spied_rules, monkeypatch):
    monkeypatch.setattr(rule_based, "answer_threads", lambda: 1)
    OfflineVLM().generate([VLMRequest(task="screen", prompt=str(n)) for n in range(3)])
    assert spied_rules == {threading.current_thread().name}
