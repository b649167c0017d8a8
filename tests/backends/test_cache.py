from concurrent.futures import ThreadPoolExecutor

from sciir.backends.base import GenerationRequest, VLMRequest
from sciir.backends.cache import CachedGenerator, CachedVLM, ResponseCache
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
    assert again.stats == {"hits": 3, "misses": 0, "failures": 0}


def test_failures_are_returned_in_order_and_not_cached(tmp_path):
    inner = CountingVLM(model="m")
    cached = CachedVLM(inner, ResponseCache(tmp_path / "c.sqlite"), chunk_size=2)
    requests = [VLMRequest(task="t", prompt=p) for p in ["ok1", "fail", "ok2"]]
    results = cached.generate(requests)
    assert [r.ok for r in results] == [True, False, True]
    assert results[1].failure == "scripted failure"
    cached.generate(requests)
    assert inner.calls == 4  # only the failed request is paid for again
    assert cached.stats == {"hits": 2, "misses": 4, "failures": 2}


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
        CachedVLM(CountingVLM(), ResponseCache(path), chunk_size=5).generate(requests)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    assert len(ResponseCache(path)) == 200
