"""Replicas of one served model: a backend given several base URLs spreads its window over them, retries
a failed attempt on another, and is the same model (same identity, same cached answers) in any order."""

from __future__ import annotations

import json
import socket

import pytest

from sciir.backends.base import VLMRequest
from sciir.backends.http.replicas import Replicas, replica_urls
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan


def _requests(count: int) -> list[VLMRequest]:
    return [
        VLMRequest(
            task="judge", prompt="Judge.\n" + json.dumps([{"id": f"q{n}", "question": f"Is {n} drawn?"}])
        )
        for n in range(count)
    ]


def _closed_port_url() -> str:
    """A loopback URL where nothing listens: a replica that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_the_window_spreads_over_the_replicas():
    with (
        FakeOpenAIServer(faults=FaultPlan(latency_s=(0.005, 0.02), seed=1)) as first,
        FakeOpenAIServer(faults=FaultPlan(latency_s=(0.005, 0.02), seed=2)) as second,
    ):
        judge = OpenAICompatibleVLM(
            base_url=[first.base_url, second.base_url], model="fake-vlm", concurrency=8
        )
        results = judge.generate(_requests(64))
        counts = first.stats.chat_requests, second.stats.chat_requests
        most = first.stats.max_in_flight, second.stats.max_in_flight
    assert all(result.ok for result in results)
    assert sum(counts) == 64 and min(counts) >= 24  # about half each, never all on one
    assert max(most) <= 5  # 8 in flight, split: a replica holds about 4, never the whole window


def test_a_replica_that_is_down_costs_a_retry_not_a_failure():
    dead = _closed_port_url()
    with FakeOpenAIServer() as live:
        judge = OpenAICompatibleVLM(
            base_url=[dead, live.base_url],
            model="fake-vlm",
            concurrency=4,
            max_retries=1,
            retry_base_delay_s=0.01,
        )
        results = judge.generate(_requests(30))
        answered = live.stats.chat_requests
    assert all(result.ok for result in results), [r.failure for r in results if not r.ok][:1]
    assert answered == 30
    attempts = sum(result.usage["http_requests"] for result in results)
    assert attempts < 30 + 8  # the dead replica rests after failing: a few tries, not one per request


def test_one_replica_alone_still_fails_with_the_reason_when_it_is_down():
    judge = OpenAICompatibleVLM(
        base_url=[_closed_port_url()], model="fake-vlm", max_retries=1, retry_base_delay_s=0.01
    )
    (result,) = judge.generate(_requests(1))
    assert not result.ok and "gave up after 2 attempts" in result.failure


def test_replicas_are_one_model_whatever_their_order():
    one = OpenAICompatibleVLM(base_url="http://a:8000/v1/", model="m")
    assert one.identity()["config"]["base_url"] == "http://a:8000/v1"  # one URL: the identity as before
    ab = OpenAICompatibleVLM(base_url=["http://a:8000/v1", "http://b:8000/v1"], model="m")
    ba = OpenAICompatibleVLM(base_url=["http://b:8000/v1", "http://a:8000/v1/"], model="m")
    assert ab.identity_hash() == ba.identity_hash() != one.identity_hash()


@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ([], "lists no URL"),
        (["http://a/v1", "http://a/v1/"], "lists a replica twice"),
        (["http://a/v1", "a:8000/v1"], "must start with http:// or https://, got 'a:8000/v1'"),
    ],
)
def test_a_bad_replica_list_is_refused_with_the_reason(base_url: list[str], message: str):
    with pytest.raises(ValueError, match=message):
        replica_urls(base_url)


def test_a_resting_replica_is_picked_only_when_every_other_one_rests():
    replicas = Replicas(["http://a", "http://b"])
    replicas.failed("http://a")
    with replicas.attempt() as busy:
        assert busy == "http://b"
        assert replicas.pick() == "http://b"  # b is busier, but a rests
    replicas.failed("http://b")
    assert replicas.pick(avoid="http://b") == "http://a"
    replicas.answered("http://a")
    assert replicas.pick() == "http://a"
