"""The response cache: keys, hits, per-response writes, usage sums, concurrent writers."""

import json
import pickle
import sqlite3
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy
from pathlib import Path

import pytest

from sciir.backends.base import GenerationRequest, VLMRequest
from sciir.backends.cache import CachedGenerator, CachedVLM, ResponseCache, stats_metrics
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan
from sciir.testing.scripted import PromptLengthVLM as CountingVLM
from sciir.testing.scripted import SeedBytesGenerator as BytesGenerator


def test_second_pass_is_served_from_the_cache(tmp_path):
    inner = CountingVLM(model="m")
    requests = [VLMRequest(task="t", prompt=p, images=[b"png"]) for p in ["a", "bb", "ccc"]]
    first = CachedVLM(inner, ResponseCache(tmp_path / "c.sqlite")).generate(requests)
    again = CachedVLM(inner, ResponseCache(tmp_path / "c.sqlite"))
    second = again.generate(requests)
    assert inner.calls == 3
    assert [r.output for r in second] == [r.output for r in first] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert all(r.cached for r in second)
    assert again.stats == {
        "hits": 3,
        "misses": 0,
        "failures": 0,
        "http_requests": 0.0,
        "prompt_tokens": 0.0,
        "completion_tokens": 0.0,
        "cost_usd": 0.0,
    }


def test_failures_are_returned_in_order_and_not_cached(tmp_path):
    inner = CountingVLM(model="m")
    cached = CachedVLM(inner, ResponseCache(tmp_path / "c.sqlite"), window=2)
    requests = [VLMRequest(task="t", prompt=p) for p in ["ok1", "fail", "ok2"]]
    results = cached.generate(requests)
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].failure == "scripted failure"
    cached.generate(requests)
    assert inner.calls == 4  # only the failed request is paid for again
    assert (cached.stats["hits"], cached.stats["misses"], cached.stats["failures"]) == (2, 4, 2)


def test_key_changes_with_backend_settings_images_and_template(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    base = VLMRequest(task="t", prompt="p", images=[b"one"])
    variants = [
        base,
        base.model_copy(update={"images": [b"two"]}),
        base.model_copy(update={"template_version": "2"}),
        base.model_copy(update={"seed": 3}),
    ]
    for temperature in (0.0, 0.7):
        CachedVLM(CountingVLM(temperature=temperature), cache).generate(variants)
    assert len(cache) == 8


def test_secrets_do_not_change_or_enter_the_key(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    request = [VLMRequest(task="t", prompt="p")]
    CachedVLM(CountingVLM(model="m", api_key="sk-canary-1"), cache).generate(request)
    second = CachedVLM(CountingVLM(model="m", api_key="sk-canary-2"), cache)
    second.generate(request)
    assert second.stats["hits"] == 1
    assert b"sk-canary" not in (tmp_path / "c.sqlite").read_bytes()


def test_generated_images_round_trip_with_their_meta(tmp_path):
    inner = BytesGenerator()
    cache = ResponseCache(tmp_path / "c.sqlite")
    requests = [GenerationRequest(sample_id=f"s{i}", prompt="x", seed=i) for i in range(3)]
    CachedGenerator(inner, cache).generate(requests)
    [hit] = CachedGenerator(inner, cache).generate(requests[2:])
    assert inner.calls == 3
    assert hit.cached and hit.image == b"\x02\x02\x02" and hit.meta == {"seed": 2} and hit.sample_id == "s2"


def test_concurrent_writers_share_one_file(tmp_path):
    path = tmp_path / "c.sqlite"

    def work(worker: int) -> None:
        requests = [VLMRequest(task="t", prompt=f"{worker}-{i}") for i in range(50)]
        CachedVLM(CountingVLM(), ResponseCache(path), window=5).generate(requests)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    assert len(ResponseCache(path)) == 200


# Each trial a new file opened by OPENERS threads released together: without waiting for another
# opener, about one trial in twenty hit "database is locked" (so 300 trials fail all but surely).
OPENERS, OPEN_TRIALS = 4, 300


@pytest.mark.slow
def test_openers_released_together_all_open_a_new_cache(tmp_path):
    errors: list[Exception] = []

    def open_cache(path: Path, barrier: threading.Barrier) -> None:
        barrier.wait()
        try:
            ResponseCache(path).put(f"{threading.get_ident()}", b"v")
        except sqlite3.OperationalError as error:
            errors.append(error)

    for trial in range(OPEN_TRIALS):
        path, barrier = tmp_path / f"{trial}.sqlite", threading.Barrier(OPENERS)
        threads = [threading.Thread(target=open_cache, args=(path, barrier)) for _ in range(OPENERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(ResponseCache(tmp_path / "0.sqlite")) == OPENERS


def _judge_request(n: int, seed: int | None = None) -> VLMRequest:
    checklist = [{"id": f"q{n}", "question": f"Is label {n} drawn?"}]
    return VLMRequest(task="judge", prompt="Judge.\n" + json.dumps(checklist), seed=seed)


def _openai(srv: FakeOpenAIServer, **settings) -> OpenAICompatibleVLM:
    return OpenAICompatibleVLM(base_url=srv.base_url, model="judge", retry_base_delay_s=0.01, **settings)


def test_each_answer_is_in_the_cache_when_it_is_reported(tmp_path):
    path = tmp_path / "c.sqlite"
    reader = ResponseCache(path)  # a second connection, as another process would see the file
    stored_when_reported: list[int] = []
    with FakeOpenAIServer(faults=FaultPlan(latency_s=(0.0, 0.05), seed=1)) as srv:
        cached = CachedVLM(_openai(srv, concurrency=4), ResponseCache(path))
        cached.stream(
            [_judge_request(n) for n in range(12)],
            lambda index, result: stored_when_reported.append(len(reader)),
        )
    assert stored_when_reported == list(range(1, 13))


def test_usage_of_sent_calls_adds_up_and_cached_answers_cost_nothing(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    requests = [_judge_request(n) for n in range(5)]
    prices = {"price_per_million_prompt_tokens": 3.0, "price_per_million_completion_tokens": 15.0}
    with FakeOpenAIServer(faults=FaultPlan(script=["500"], retry_after_s=0.01)) as srv:
        cold = CachedVLM(_openai(srv, **prices), cache)
        results = cold.generate(requests)
        warm = CachedVLM(_openai(srv, **prices), cache)
        warm.generate(requests)
        sent = srv.stats.chat_requests
    assert sent == 6 == cold.stats["http_requests"]  # five requests, one of them retried once
    assert cold.stats["prompt_tokens"] == sum(r.usage["prompt_tokens"] for r in results) > 0
    expected_cost = (cold.stats["prompt_tokens"] * 3.0 + cold.stats["completion_tokens"] * 15.0) / 1e6
    assert cold.stats["cost_usd"] == pytest.approx(expected_cost) and expected_cost > 0
    assert warm.stats == {**dict.fromkeys(warm.stats, 0), "hits": 5}


def test_sampled_requests_are_cached_under_their_seed(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with FakeOpenAIServer() as srv:
        CachedVLM(_openai(srv, temperature=0.8), cache).generate(
            [_judge_request(1, seed=1), _judge_request(1, seed=2)]
        )
        again = CachedVLM(_openai(srv, temperature=0.8), cache)
        again.generate([_judge_request(1, seed=1), _judge_request(1, seed=3)])
        seeds_sent = [r.body["seed"] for r in srv.requests]
    assert sorted(seeds_sent[:2]) == [1, 2] and seeds_sent[2:] == [3]  # seed 1 came from the cache
    assert (again.stats["hits"], again.stats["misses"]) == (1, 1)


def test_identical_requests_in_one_batch_are_sent_once(tmp_path):
    inner = CountingVLM()
    cached = CachedVLM(inner, ResponseCache(tmp_path / "c.sqlite"))
    results = cached.generate([VLMRequest(task="t", prompt=p) for p in ["aa", "b", "aa", "aa"]])
    assert [r.output for r in results] == [{"n": 2}, {"n": 1}, {"n": 2}, {"n": 2}]
    assert inner.calls == 2
    assert (cached.stats["hits"], cached.stats["misses"]) == (2, 2)


def test_stats_become_stage_metrics_with_cache_counts_apart_from_usage():
    stats = {
        "hits": 3,
        "misses": 2,
        "failures": 1,
        "http_requests": 4.0,
        "prompt_tokens": 10.0,
        "cost_usd": 0.5,
    }
    assert stats_metrics(stats, prefix="judge_") == {
        "judge_cache_hits": 3.0,
        "judge_cache_misses": 2.0,
        "judge_cache_failures": 1.0,
        "judge_http_requests": 4.0,
        "judge_prompt_tokens": 10.0,
        "judge_cost_usd": 0.5,
    }


def test_a_cache_survives_pickling_and_reopens_its_file(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", b"v")
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.get_many(["k", "missing"]) == {"k": b"v"}


def test_a_cached_backend_survives_deep_copies_as_kedro_memory_datasets_make_them(tmp_path):
    with FakeOpenAIServer() as srv:
        cached = CachedVLM(_openai(srv, requests_per_minute=600), ResponseCache(tmp_path / "c.sqlite"))
        cached.generate([_judge_request(1)])
        copy = deepcopy(cached)
        old, new = copy.generate([_judge_request(1), _judge_request(2)])
        sent = srv.stats.chat_requests
    assert old.cached and new.ok and not new.cached and sent == 2
    assert (copy.stats["hits"], copy.stats["misses"]) == (1, 2)  # the copy goes on counting from the original


# A process of the project's commands (sciir.runs.process_exit) whose cache a reference cycle holds, as a Kedro
# catalog's does: the collector does not reach the cycle at exit, yet the connection is closed.
HELD_IN_A_CYCLE = """
from sciir.backends.cache import ResponseCache
from sciir.runs.process_exit import skip_collections_at_exit
skip_collections_at_exit()
class Holder: pass
holder = Holder(); holder.itself = holder
holder.cache = ResponseCache("responses.sqlite"); holder.cache.put("k", b"v" * 100_000)
"""


def test_the_connection_is_closed_at_exit_leaving_no_write_ahead_log(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", HELD_IN_A_CYCLE], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["responses.sqlite"]
    assert ResponseCache(tmp_path / "responses.sqlite").get_many(["k"]) == {"k": b"v" * 100_000}
