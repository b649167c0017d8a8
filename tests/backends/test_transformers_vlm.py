"""The ``transformers`` backend on a tiny random-weight Qwen2.5-VL built locally: replies decoded under their
JSON schemas (valid whatever the weights), first-token log-probabilities, batching, order, determinism,
seeded sampling, usage, devices and dtypes, and failures as results."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from PIL import Image

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.registry import build_backend
from sciir.backends.replies import schema_problems
from sciir.backends.transformers_runtime import load_processor
from sciir.backends.transformers_vlm import TransformersVLM, completion_length, reply_result
from sciir.tasks.vqascore import build_vqascore_request, vqascore_from_result
from sciir.testing.tiny_vlm import save_tiny_vlm

SRC = Path(__file__).resolve().parents[2] / "src"
# A short bounded string: '{"note": "' is 10 tokens, 4 characters at most 16 bytes (one token a byte), then
# '"}' and the end token; random weights write such a reply within 32 tokens, different per input.
SCHEMA = {
    "type": "object",
    "properties": {"note": {"type": "string", "maxLength": 4}},
    "required": ["note"],
    "additionalProperties": False,
}
MAX_NEW_TOKENS = 32
# An unbounded string: random weights never close it, so such a reply is always cut.
VERDICT = {"type": "object", "properties": {"verdict": {"type": "string"}}, "required": ["verdict"]}


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return save_tiny_vlm(tmp_path_factory.mktemp("tiny_vlm") / "model", seed=0)


@pytest.fixture(scope="module")
def batched(model_folder):
    return TransformersVLM(model_path=str(model_folder), batch_size=2, max_new_tokens=MAX_NEW_TOKENS)


def _png(colour: str, size: int = 56) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (size, size), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _requests(seed: int | None = None) -> list[VLMRequest]:
    """Three requests that differ in prompt, image or both (the first and last share the prompt)."""
    return [
        VLMRequest(
            task="judge", prompt="Is there an arrow?", images=[_png("red")], json_schema=SCHEMA, seed=seed
        ),
        VLMRequest(
            task="judge",
            prompt="Does the diagram show a membrane with three labelled channels and an arrow between them?",
            images=[_png("blue", 84)],
            json_schema=SCHEMA,
            seed=seed,
        ),
        VLMRequest(
            task="judge", prompt="Is there an arrow?", images=[_png("green")], json_schema=SCHEMA, seed=seed
        ),
    ]


def _verdict_request() -> VLMRequest:
    return _requests()[0].model_copy(update={"json_schema": VERDICT})


def test_importing_the_backend_does_not_import_torch():
    code = "import sys, sciir.backends.transformers_vlm; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": str(SRC)})


def test_registered_under_its_name(model_folder):
    backend = build_backend("vlm", "transformers", model_path=str(model_folder))
    assert isinstance(backend, TransformersVLM)


@pytest.mark.slow
def test_random_weights_write_valid_replies_under_the_schema(batched):
    results = batched.generate(_requests())
    assert len(results) == 3
    for result in results:
        assert result.ok, result.failure
        assert set(result.output or {}) == {"note"} and len(result.output["note"]) <= 4
        assert result.raw == json.dumps(result.output, ensure_ascii=False)  # compact JSON, nothing around it
        assert result.usage["prompt_tokens"] > 0
        assert 1 <= result.usage["completion_tokens"] <= MAX_NEW_TOKENS


@pytest.mark.slow
def test_requests_with_different_schemas_in_one_batch_each_get_a_reply_of_their_own_schema(model_folder):
    schemas = [
        {"type": "object", "properties": {"verdict": {"enum": ["yes", "no"]}}, "required": ["verdict"]},
        {
            "type": "object",
            "properties": {
                "score": {"type": "integer", "minimum": 1, "maximum": 5},
                "sure": {"type": "boolean"},
                "unit": {"type": ["string", "null"], "maxLength": 2},
            },
            "required": ["score", "sure", "unit"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "labels": {
                    "type": "array",
                    "items": {"type": "string", "maxLength": 3},
                    "minItems": 1,
                    "maxItems": 2,
                },
                "box": {
                    "type": "object",
                    "properties": {"x": {"enum": [0, 1]}, "y": {"enum": [0, 1]}},
                    "required": ["x", "y"],
                },
            },
            "required": ["labels", "box"],
        },
        SCHEMA,
    ]
    backend = TransformersVLM(model_path=str(model_folder), batch_size=4, max_new_tokens=96)
    requests = [
        request.model_copy(update={"json_schema": schema})
        for request, schema in zip(_requests() * 2, schemas, strict=False)
    ]
    results = backend.generate(requests)
    for schema, result in zip(schemas, results, strict=True):
        assert result.ok, result.failure
        assert schema_problems(result.output, schema) == []
        assert list(result.output) == list(schema["properties"])  # every property, in the schema's order


def test_a_reply_cut_at_max_new_tokens_fails_and_says_so(model_folder):
    short = TransformersVLM(model_path=str(model_folder), max_new_tokens=8)
    [result] = short.generate([_verdict_request()])
    assert not result.ok and result.output is None
    assert result.raw == '{"verdic'  # what the model wrote is kept, not replaced by a default
    assert "invalid reply for task judge: not JSON" in (result.failure or "")
    assert "(the reply was cut at max_new_tokens=8)" in (result.failure or "")
    assert result.usage["completion_tokens"] == 8


def test_a_schema_the_grammar_engine_cannot_compile_fails_only_its_own_request(batched):
    requests = _requests()
    requests[1] = requests[1].model_copy(update={"json_schema": {"type": "colour"}})
    good, bad, other = batched.generate(requests)
    assert bad.raw is None
    assert "task judge: its JSON schema cannot be compiled into a decoding grammar" in (bad.failure or "")
    assert good.ok and other.ok


def test_first_token_log_probabilities_answer_a_vqascore_request(batched):
    request = build_vqascore_request("a red membrane", _png("red"))
    [alone] = batched.generate([request])
    assert alone.ok and alone.usage["completion_tokens"] == 1
    alternatives = alone.output["top_logprobs"]
    assert len(alternatives) == request.top_logprobs
    logprobs = [entry["logprob"] for entry in alternatives]
    assert logprobs == sorted(logprobs, reverse=True) and logprobs[0] <= 0
    assert sum(math.exp(value) for value in logprobs) <= 1
    assert alone.output["answer"] == alone.raw == alternatives[0]["token"]  # greedy: the most likely token
    # The tiny tokenizer has a token per byte, none spelling "yes": VQAScore reads a bound, not a failure.
    score = vqascore_from_result(alone)
    assert score.value == 0.0 and "no 'yes' among the 5 most likely first tokens" in (score.note or "")
    # In a batch with JSON replies, it is generated apart from them and comes out the same.
    mixed = batched.generate([_requests()[0], request, _requests()[1]])
    assert mixed[1] == alone and mixed[0].ok and mixed[2].ok


@pytest.mark.slow
def test_batches_come_back_in_order_and_equal_generating_one_by_one(model_folder, batched):
    one_by_one = TransformersVLM(model_path=str(model_folder), batch_size=1, max_new_tokens=MAX_NEW_TOKENS)
    together = batched.generate(_requests())  # a batch of two, then a batch of one
    alone = one_by_one.generate(_requests())
    assert [r.raw for r in together] == [r.raw for r in alone]
    assert len({r.raw for r in together}) == 3  # replies depend on prompt and image, so order is visible
    # Left padding is not counted: each prompt's tokens are the same alone or padded in a batch.
    assert [r.usage for r in together] == [r.usage for r in alone]
    short, long, _ = together
    assert long.usage["prompt_tokens"] > short.usage["prompt_tokens"]


@pytest.mark.slow
def test_greedy_decoding_is_deterministic(batched):
    assert [r.raw for r in batched.generate(_requests())] == [r.raw for r in batched.generate(_requests())]


@pytest.mark.slow
def test_sampling_depends_on_the_seed_only_and_leaves_the_callers_random_stream(model_folder):
    sampler = TransformersVLM(
        model_path=str(model_folder), temperature=1.0, batch_size=3, max_new_tokens=MAX_NEW_TOKENS
    )
    state = torch.random.get_rng_state()
    first = [r.raw for r in sampler.generate(_requests(seed=1))]
    again = [r.raw for r in sampler.generate(_requests(seed=1))]
    other_seed = [r.raw for r in sampler.generate(_requests(seed=2))]
    assert torch.equal(torch.random.get_rng_state(), state)
    assert first == again
    assert first != other_seed
    [alone] = sampler.generate(_requests(seed=1)[1:2])  # the same sample without its batch companions
    assert alone.raw == first[1]


def test_sampling_without_a_seed_fails_that_request_without_generating(model_folder):
    sampler = TransformersVLM(model_path=str(model_folder), temperature=1.0, max_new_tokens=MAX_NEW_TOKENS)
    unseeded, seeded = sampler.generate([_requests()[0], _requests(seed=3)[1]])
    assert unseeded.raw is None and "needs a seed on the request" in (unseeded.failure or "")
    assert seeded.raw


def test_streaming_reports_each_result_once_as_its_batch_completes(batched):
    reported: list[tuple[int, str | None]] = []
    answered: dict[int, VLMResult] = {}

    def report(index: int, result: VLMResult) -> None:
        reported.append((index, result.raw))
        answered[index] = result

    batched.stream(_requests(), report)
    results = [answered[index] for index in sorted(answered)]
    assert sorted(reported) == sorted(enumerate(r.raw for r in results))
    assert [index for index, _ in reported] == [0, 1, 2]  # batches of two then one, in order


@pytest.mark.slow
def test_an_unreadable_image_fails_only_its_own_request(batched):
    requests = _requests()
    requests[1] = requests[1].model_copy(update={"images": [_png("red"), b"not an image"]})
    good, bad, other = batched.generate(requests)
    assert bad.raw is None and "image 2 of 2 is not a readable image" in (bad.failure or "")
    assert good.raw and other.raw
    assert [good.raw, other.raw] == [r.raw for r in batched.generate([_requests()[0], _requests()[2]])]


def test_a_missing_model_folder_fails_every_request_and_names_the_path(tmp_path):
    missing = tmp_path / "no_model_here"
    results = TransformersVLM(model_path=str(missing)).generate(_requests())
    assert len(results) == 3
    for result in results:
        assert not result.ok and result.raw is None
        assert f"model folder {missing} does not exist" in (result.failure or "")


def test_identity_follows_the_weights_and_decoding_not_device_or_batch_size(model_folder, tmp_path):
    base = TransformersVLM(model_path=str(model_folder), batch_size=1)
    assert (
        base.identity()
        == TransformersVLM(model_path=str(model_folder), batch_size=8, device="cuda").identity()
    )
    assert base.identity() != TransformersVLM(model_path=str(model_folder), temperature=0.7).identity()
    copy = shutil.copytree(model_folder, tmp_path / "model")
    before = TransformersVLM(model_path=str(copy)).identity()["weights"]
    config = json.loads((copy / "generation_config.json").read_text())
    (copy / "generation_config.json").write_text(json.dumps({**config, "repetition_penalty": 1.1}))
    assert TransformersVLM(model_path=str(copy)).identity()["weights"] != before


@pytest.mark.slow
def test_auto_device_and_dtype_load_the_checkpoints_dtype_where_the_hardware_is(model_folder, batched):
    auto = TransformersVLM(
        model_path=str(model_folder), device="auto", dtype="auto", batch_size=2, max_new_tokens=MAX_NEW_TOKENS
    )
    assert [r.raw for r in auto.generate(_requests())] == [r.raw for r in batched.generate(_requests())]
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert str(auto._loaded_model().model.device).startswith(expected)
    assert auto._loaded_model().model.dtype == torch.float32  # the tiny model is saved in float32


def test_an_unknown_dtype_fails_every_request_and_names_it(model_folder):
    [result] = TransformersVLM(model_path=str(model_folder), dtype="float33").generate(_requests()[:1])
    assert not result.ok and "dtype 'float33' is not a torch dtype name" in (result.failure or "")


@pytest.mark.parametrize(("batch_size", "window"), [(1, 16), (4, 16), (5, 20), (32, 32)])
def test_the_stream_window_holds_whole_batches(batch_size, window):
    assert TransformersVLM(model_path="unused", batch_size=batch_size).stream_window == window


@pytest.mark.skipif(importlib.util.find_spec("torchvision") is not None, reason="torchvision is installed")
def test_without_torchvision_the_processor_loads_with_the_pillow_image_processor(model_folder):
    processor = load_processor(model_folder)
    assert type(processor).__name__ == "ImageOnlyQwen2_5_VLProcessor"
    assert type(processor.image_processor).__name__ == "Qwen2VLImageProcessorPil"


@pytest.mark.parametrize(
    ("text", "output"),
    [
        ('{"verdict": "yes"}', {"verdict": "yes"}),
        ('```json\n{"verdict": "no", "evidence": "arrow"}\n```', {"verdict": "no", "evidence": "arrow"}),
        ('<think>look at the arrow</think>{"verdict": "yes"}', {"verdict": "yes"}),
    ],
)
def test_a_reply_holding_the_required_keys_is_parsed(text, output):
    request = _verdict_request()
    result = reply_result(request, text, {"completion_tokens": 5.0}, cut_at=None)
    assert result.ok and result.output == output and result.raw == text


@pytest.mark.parametrize(
    ("text", "cut_at", "reason"),
    [
        ('{"answer": "yes"}', None, "verdict: a required property is missing"),
        ('{"verdict": 1}', None, "verdict: 1 is not of type 'string'"),
        ('["yes"]', None, "expected a JSON object"),
        ('{"verdict": "ye', 8, "(the reply was cut at max_new_tokens=8)"),
    ],
)
def test_a_reply_without_the_required_json_is_a_failure_that_keeps_it(text, cut_at, reason):
    result = reply_result(_verdict_request(), text, {}, cut_at=cut_at)
    assert not result.ok and result.output is None and result.raw == text
    assert reason in (result.failure or "")


def test_completion_length_stops_at_the_first_end_token():
    assert completion_length([5, 7, 2, 0, 0], frozenset({2})) == (3, True)
    assert completion_length([5, 7, 9], frozenset({2, 3})) == (3, False)


@pytest.mark.parametrize(
    "settings",
    [{"batch_size": 0}, {"max_new_tokens": 0}, {"temperature": -0.1}, {"do_sample": True}],
)
def test_settings_that_could_only_fail_later_are_rejected(settings):
    with pytest.raises(ValueError):
        TransformersVLM(model_path="unused", **settings)
