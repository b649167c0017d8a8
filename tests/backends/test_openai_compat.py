"""The `openai` backend against the loopback fake server: payloads, parsing and schema checks, retries,
faults, rate limits, usage and cost, streaming."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import re
from typing import Any

import pytest
from PIL import Image
from pydantic import ValidationError

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.http.rate_limits import RateLimits, TokenBucket
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.backends.openai_replies import first_token_logprobs, reply_text
from sciir.backends.replies import (
    InvalidReply,
    UnsupportedSchema,
    parse_json_object,
    reply_validator,
    schema_problems,
)
from sciir.tasks.judge import JUDGE_REPLY_SCHEMA, render_judge_prompt
from sciir.tasks.registry import ANNOTATION_TASKS as TASKS
from sciir.testing.chat_answers import FirstTokenDistribution
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan

API_KEY = "sk-test-DO-NOT-LEAK-4711"
CHECKLIST = [
    {"id": "q1", "question": "Is there an arrow?", "layer": 2, "track": "process", "expected_text": None},
    {"id": "q2", "question": "Is 'ATP' written?", "layer": 1, "track": "text", "expected_text": "ATP"},
]
JUDGE_SCHEMA = JUDGE_REPLY_SCHEMA  # strict-mode valid, as the fake server requires of strict requests


def _png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buffer, format="PNG")
    return buffer.getvalue()


def _judge_request(
    question_id: str = "q1", images: list[bytes] | None = None, seed: int | None = None
) -> VLMRequest:
    checklist = [{"id": question_id, "question": f"Is {question_id} drawn?"}]
    return VLMRequest(
        task="judge",
        prompt="Judge the figure.\n" + json.dumps(checklist),
        images=images or [],
        json_schema=JUDGE_SCHEMA,
        seed=seed,
    )


def _vlm(srv: FakeOpenAIServer, **settings: Any) -> OpenAICompatibleVLM:
    """A backend on the fake server with retries fast enough for tests."""
    defaults: dict[str, Any] = {
        "api_key": API_KEY,
        "max_retries": 2,
        "retry_base_delay_s": 0.01,
        "timeout_s": 2,
    }
    return OpenAICompatibleVLM(base_url=srv.base_url, model="judge-model", **{**defaults, **settings})


def _fixed(content: str):
    return lambda request: content


def test_happy_path_sends_images_schema_and_settings_and_parses_the_answer() -> None:
    request = _judge_request("q7", images=[_png(2000, 1000), _png(64, 32)], seed=11)
    with FakeOpenAIServer() as srv:
        vlm = _vlm(
            srv, system_prompt="You are a strict judge.", image_max_side=512, max_tokens=300, top_p=0.9
        )
        [result] = vlm.generate([request])
        [sent] = srv.requests
    assert result.ok, result.failure
    assert result.output["answers"][0]["id"] == "q7" and result.output["answers"][0]["verdict"] == "yes"
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0
    body = sent.body
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert (body["model"], body["temperature"], body["max_tokens"], body["seed"], body["top_p"]) == (
        "judge-model",
        0.0,
        300,
        11,
        0.9,
    )
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "judge", "schema": JUDGE_SCHEMA, "strict": True},
    }
    assert body["messages"][0] == {"role": "system", "content": "You are a strict judge."}
    text_part, *image_parts = body["messages"][1]["content"]
    assert text_part == {"type": "text", "text": request.prompt}
    sizes = []
    for part in image_parts:
        url = part["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        sizes.append(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).size)
    assert sizes == [(512, 256), (64, 32)]  # downscaled to image_max_side, small ones untouched


def test_no_seed_and_no_schema_leave_those_fields_out() -> None:
    request = VLMRequest(task="reasoning", prompt="Return JSON.")
    with FakeOpenAIServer(responder=_fixed('{"terms": []}')) as srv:
        [result] = _vlm(srv).generate([request])
        [sent] = srv.requests
    assert result.output == {"terms": []}
    assert "seed" not in sent.body and "response_format" not in sent.body
    assert sent.body["messages"][0]["role"] == "user"


@pytest.mark.parametrize(
    "fault", ["429", "500", "503", "timeout", "drop", "truncated", "malformed_json", "schema_invalid"]
)
def test_a_single_fault_is_retried_and_the_request_succeeds(fault: str) -> None:
    plan = FaultPlan(script=[fault], retry_after_s=0.05, hang_s=3)
    with FakeOpenAIServer(faults=plan) as srv:
        # The hanging fault outlasts the timeout; the retry's answer must not, on cores the rest of the
        # suite keeps busy (at 0.3 s a retry under load once timed out and made a third attempt).
        [result] = _vlm(srv, timeout_s=1.5).generate([_judge_request()])
        attempts = srv.stats.chat_requests
    assert result.ok, result.failure
    assert attempts == 2


@pytest.mark.parametrize(
    "fault, expected",
    [
        ("503", "HTTP 503"),
        ("429", "HTTP 429"),
        ("timeout", "timed out after 0.3 s"),
        ("drop", "ServerDisconnectedError"),
        ("truncated", "ClientPayloadError"),
        ("malformed_json", "not JSON"),
    ],
)
def test_a_persistent_fault_ends_as_a_failure_naming_it(fault: str, expected: str) -> None:
    plan = FaultPlan(probabilities={fault: 1.0}, retry_after_s=0.01, hang_s=3)
    with FakeOpenAIServer(faults=plan) as srv:
        results = _vlm(srv, max_retries=1, timeout_s=0.3).generate([_judge_request()])
        attempts = srv.stats.chat_requests
    assert results[0].output is None
    assert results[0].failure.startswith("task judge: POST /chat/completions gave up after 2 attempts")
    assert expected in results[0].failure
    assert attempts == 2 == results[0].usage["http_requests"]


def test_retry_after_is_honoured_between_attempts() -> None:
    plan = FaultPlan(script=["429"], retry_after_s=0.4)
    with FakeOpenAIServer(faults=plan) as srv:
        [result] = _vlm(srv, retry_base_delay_s=0.001, retry_max_delay_s=0.002).generate([_judge_request()])
        first, second = srv.requests
    assert result.ok
    # Backoff alone would wait at most 2 ms; the gap comes from the server's Retry-After.
    assert second.received_at - first.received_at >= 0.4


@pytest.mark.parametrize("fault", ["400", "401"])
def test_client_errors_are_not_retried(fault: str) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=[fault])) as srv:
        [result] = _vlm(srv).generate([_judge_request()])
        attempts = srv.stats.chat_requests
    assert attempts == 1
    assert f"returned HTTP {fault} (not retried)" in result.failure


def test_the_api_key_never_appears_in_identity_repr_or_failures() -> None:
    # The 401 fault echoes the presented key in its error body, as careless servers do.
    with FakeOpenAIServer(faults=FaultPlan(script=["401"])) as srv:
        vlm = _vlm(srv)
        [result] = vlm.generate([_judge_request()])
    assert "Incorrect API key provided: ***" in result.failure
    exposed = [
        json.dumps(vlm.identity()),
        vlm.identity_hash(),
        repr(vlm),
        str(vlm),
        result.failure,
        repr(result),
    ]
    assert not any(API_KEY in text for text in exposed)


def test_identity_holds_what_changes_answers_and_not_operational_settings() -> None:
    fast = OpenAICompatibleVLM(base_url="http://h/v1/", model="m", concurrency=2, max_retries=0, top_p=0.5)
    slow = OpenAICompatibleVLM(base_url="http://h/v1", model="m", concurrency=32, timeout_s=5, top_p=0.5)
    warmer = OpenAICompatibleVLM(base_url="http://h/v1", model="m", temperature=0.7, top_p=0.5)
    assert fast.identity_hash() == slow.identity_hash() != warmer.identity_hash()
    assert fast.identity()["config"]["top_p"] == 0.5


@pytest.mark.parametrize("setting", [{"response_format": {"type": "text"}}, {"logprobs": True}])
def test_settings_the_backend_owns_cannot_be_overridden(setting: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(setting))):
        OpenAICompatibleVLM(base_url="http://h/v1", model="m", **setting)


def test_invalid_json_is_asked_again_then_fails_with_the_raw_text() -> None:
    with FakeOpenAIServer(responder=_fixed("I think the arrow is there.")) as srv:
        [result] = _vlm(srv, invalid_reply_retries=1).generate([_judge_request()])
        attempts = srv.stats.chat_requests
    assert attempts == 2 == result.usage["http_requests"]
    assert result.failure.startswith("invalid reply for task judge: not JSON: Expecting value")
    assert result.raw == "I think the arrow is there."
    assert result.usage["completion_tokens"] == 2 * len("I think the arrow is there.".split())


def test_a_reply_missing_required_keys_fails_with_the_raw_text() -> None:
    with FakeOpenAIServer(responder=_fixed('{"verdicts": []}')) as srv:
        [result] = _vlm(srv, invalid_reply_retries=0).generate([_judge_request()])
    assert result.failure == (
        "invalid reply for task judge: does not match its JSON schema: answers: a required property is "
        "missing; verdicts: not a property of this object"
    )
    assert result.raw == '{"verdicts": []}'


def test_fenced_and_thinking_replies_are_parsed() -> None:
    fenced = '```json\n{"answers": [{"id": "q1", "verdict": "no"}]}\n```'
    thinking = '<think>The arrow is missing.</think>\n{"answers": []}'
    assert parse_json_object(fenced, ["answers"]) == {"answers": [{"id": "q1", "verdict": "no"}]}
    assert parse_json_object(thinking, ["answers"]) == {"answers": []}
    with pytest.raises(InvalidReply, match="expected a JSON object, got list"):
        parse_json_object("[1, 2]")


def test_reply_text_reads_part_lists_and_reports_refusals_and_empty_replies() -> None:
    parts = {
        "choices": [
            {"message": {"content": [{"type": "text", "text": '{"a"'}, {"type": "text", "text": ": 1}"}]}}
        ]
    }
    assert reply_text(parts) == '{"a": 1}'
    refused = {"choices": [{"message": {"content": None, "refusal": "I cannot judge this."}}]}
    with pytest.raises(InvalidReply, match="refused: I cannot judge this"):
        reply_text(refused)
    with pytest.raises(InvalidReply, match="no text content \\(finish_reason 'length'\\)"):
        reply_text({"choices": [{"message": {"content": ""}, "finish_reason": "length"}]})
    with pytest.raises(InvalidReply, match="no choices"):
        reply_text({"error": "overloaded"})


def test_concurrency_bound_is_respected() -> None:
    with FakeOpenAIServer(faults=FaultPlan(latency_s=0.05)) as srv:
        results = _vlm(srv, concurrency=3).generate([_judge_request(f"q{n}") for n in range(12)])
        stats = srv.stats
    assert all(r.ok for r in results)
    assert stats.max_in_flight == 3


def test_results_stay_in_request_order_when_replies_arrive_out_of_order() -> None:
    def echo_question_id(request: dict[str, Any]) -> str:
        text = request["messages"][-1]["content"][0]["text"]
        qid = re.search(r'"id": "(q\d+)"', text).group(1)
        return json.dumps({"answers": [{"id": qid, "evidence": "e", "reasoning": "r", "verdict": "yes"}]})

    requests = [_judge_request(f"q{n}") for n in range(10)]
    with FakeOpenAIServer(responder=echo_question_id, faults=FaultPlan(latency_s=(0.0, 0.06), seed=3)) as srv:
        results = _vlm(srv, concurrency=10).generate(requests)
    assert [r.output["answers"][0]["id"] for r in results] == [f"q{n}" for n in range(10)]


def test_a_corrupt_image_fails_its_request_only() -> None:
    requests = [_judge_request("q1", images=[_png(8, 8), b"not an image"]), _judge_request("q2")]
    with FakeOpenAIServer() as srv:
        broken, fine = _vlm(srv).generate(requests)
        sent = srv.requests
    assert broken.failure.startswith(
        "task judge: image 2 of 2 is not a readable image: not a recognised image format"
    )
    assert fine.ok
    assert len(sent) == 1  # the broken request never reached the server


def test_an_unreachable_server_ends_as_a_failure() -> None:
    with FakeOpenAIServer() as srv:
        vlm = _vlm(srv, max_retries=1)
    [result] = vlm.generate([_judge_request()])  # the server is gone now
    assert "gave up after 2 attempts" in result.failure and "ClientConnectorError" in result.failure


def test_generate_works_inside_a_running_event_loop() -> None:
    async def judge_from_async_code(vlm: OpenAICompatibleVLM) -> list[bool]:
        return [r.ok for r in vlm.generate([_judge_request("q1"), _judge_request("q2")])]

    with FakeOpenAIServer() as srv:
        assert asyncio.run(judge_from_async_code(_vlm(srv))) == [True, True]
    assert _vlm(srv).generate([]) == []


def _fixed_by_id(verdicts: dict[str, Any]):
    """A responder answering the question ids in the prompt with the given verdict values."""

    def answer(request: dict[str, Any]) -> str:
        text = request["messages"][-1]["content"][0]["text"]
        answers = [
            {"id": qid, "evidence": "e", "reasoning": "r", "verdict": verdicts[qid]}
            for qid in re.findall(r'"id": "(q\d+)"', text)
        ]
        return json.dumps({"answers": answers})

    return answer


def test_a_reply_of_the_wrong_shape_deep_inside_is_retried_then_fails_naming_the_place() -> None:
    request = VLMRequest(
        task="judge", prompt=render_judge_prompt("p", CHECKLIST), json_schema=JUDGE_REPLY_SCHEMA
    )
    with FakeOpenAIServer(responder=_fixed_by_id({"q1": "yes", "q2": "maybe"})) as srv:
        [result] = _vlm(srv, invalid_reply_retries=1).generate([request])
        attempts = srv.stats.chat_requests
    assert attempts == 2
    assert result.output is None
    assert result.failure.startswith("invalid reply for task judge: does not match its JSON schema: ")
    assert "answers.1.verdict: 'maybe' is not one of ['yes', 'no', None]" in result.failure
    assert json.loads(result.raw)["answers"][1]["verdict"] == "maybe"


def test_a_null_verdict_fits_the_judge_schema_and_stays_an_abstention() -> None:
    request = VLMRequest(
        task="judge", prompt=render_judge_prompt("p", CHECKLIST), json_schema=JUDGE_REPLY_SCHEMA
    )
    with FakeOpenAIServer(responder=_fixed_by_id({"q1": None, "q2": "no"})) as srv:
        [result] = _vlm(srv).generate([request])
    assert [a["verdict"] for a in result.output["answers"]] == [None, "no"]


@pytest.mark.parametrize(
    "value, problems",
    [
        ({"answers": [{"id": "q1", "evidence": "e", "reasoning": "r", "verdict": "yes"}]}, []),
        ({"answers": "yes"}, ["answers: 'yes' is not of type 'array'"]),
        (
            {"answers": [{"id": 1, "evidence": "e", "reasoning": "r", "verdict": "no"}]},
            ["answers.0.id: 1 is not of type 'string'"],
        ),
        (
            {"answers": [{"id": "q1", "evidence": "e", "verdict": "no"}]},
            ["answers.0.reasoning: a required property is missing"],
        ),
        ({"answers": [], "note": "x"}, ["note: not a property of this object"]),
    ],
)
def test_judge_replies_are_checked_for_nested_types_required_fields_and_extras(value, problems) -> None:
    assert schema_problems(value, JUDGE_REPLY_SCHEMA) == problems


def test_pydantic_generated_schemas_with_refs_unions_and_bounds_are_checked() -> None:
    # pydantic's own schema: $defs + $ref, anyOf [string, null], enums, minItems, optional fields
    checklist_schema = TASKS["checklist"].reply_schema.model_json_schema()
    question = {
        "id": "a",
        "layer": 1,
        "track": "text",
        "question": "Is 'ATP' written?",
        "expected_text": None,
        "kind": "text",
        "polarity": "positive",
        "about": ["ATP"],
    }
    assert schema_problems({"questions": [question]}, checklist_schema) == []
    bad = {**question, "layer": True, "expected_text": 5}
    assert schema_problems({"questions": [bad]}, checklist_schema) == [
        "questions.0.expected_text: 5 is not valid under any of the given schemas",
        "questions.0.layer: True is not of type 'integer'",
        "questions.0.layer: True is not one of [1, 2]",
    ]
    assert schema_problems({"questions": []}, checklist_schema) == ["questions: [] should be non-empty"]
    scores = {"entity": 11, "process": "3", "law": 2, "rationale": "r"}
    assert schema_problems(scores, TASKS["track_scores"].schema()) == [
        "entity: 11 is greater than the maximum of 10",
        "process: '3' is not of type 'integer'",
    ]


def test_a_schema_that_cannot_be_checked_fails_the_request_before_it_is_sent() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    with FakeOpenAIServer() as srv:
        [result] = _vlm(srv).generate([VLMRequest(task="t", prompt="p", json_schema=schema)])
        sent = srv.stats.chat_requests
    assert sent == 0
    assert result.failure.startswith(
        "task t: replies cannot be checked against its JSON schema: $ref '#/$defs/missing' cannot be "
        "resolved within the schema"
    )
    with pytest.raises(UnsupportedSchema, match="refers to itself"):
        reply_validator({"$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"})
    with pytest.raises(UnsupportedSchema, match="not a valid JSON schema at type"):
        reply_validator({"type": "text"})
    with pytest.raises(UnsupportedSchema, match="cannot be resolved"):
        reply_validator({"$ref": "https://example.org/schema.json"})  # never fetched


def test_one_of_means_exactly_one_and_all_of_means_every_one() -> None:
    one_of = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert schema_problems(2.5, one_of) == []
    assert schema_problems(2, one_of)  # an integer is a number too: two alternatives match
    all_of = {"type": "object", "allOf": [{"required": ["a"]}, {"required": ["b"]}]}
    assert schema_problems({"a": 1, "b": 2}, all_of) == []
    assert schema_problems({"a": 1}, all_of) == ["b: a required property is missing"]


def test_sampled_decoding_needs_a_seed_and_sends_it() -> None:
    with FakeOpenAIServer() as srv:
        vlm = _vlm(srv, temperature=0.7)
        unseeded, seeded = vlm.generate([_judge_request("q1"), _judge_request("q2", seed=5)])
        [sent] = srv.requests
    assert unseeded.failure.startswith("task judge: sampled decoding (temperature 0.7) needs a seed")
    assert unseeded.usage == {"http_requests": 0.0}
    assert seeded.ok and (sent.body["temperature"], sent.body["seed"]) == (0.7, 5)


def test_usage_counts_every_attempt_and_cost_follows_the_configured_prices() -> None:
    plan = FaultPlan(script=["schema_invalid", "503"], retry_after_s=0.01)
    with FakeOpenAIServer(faults=plan) as srv:
        vlm = _vlm(srv, price_per_million_prompt_tokens=2.0, price_per_million_completion_tokens=10.0)
        [priced] = vlm.generate([_judge_request()])
        [unpriced] = _vlm(srv).generate([_judge_request()])
        bodies = [r.body for r in srv.requests]
    # Attempt 1: a schema-invalid reply (billed); attempt 2: HTTP 503 (not billed); attempt 3: the answer.
    assert priced.ok and priced.usage["http_requests"] == 3
    assert priced.usage["prompt_tokens"] == 2 * len(bodies[0]["messages"][0]["content"][0]["text"].split())
    expected = (priced.usage["prompt_tokens"] * 2.0 + priced.usage["completion_tokens"] * 10.0) / 1e6
    assert priced.usage["cost_usd"] == pytest.approx(expected) and expected > 0
    assert "cost_usd" not in unpriced.usage and unpriced.usage["http_requests"] == 1


def test_streaming_reports_each_result_as_it_completes() -> None:
    # The first request is rate limited once (Retry-After 0.3 s), so the second one finishes first.
    plan = FaultPlan(script=["429"], retry_after_s=0.3)
    reported: list[tuple[int, bool]] = []
    answered: dict[int, VLMResult] = {}

    def report(index: int, result: VLMResult) -> None:
        reported.append((index, result.ok))
        answered[index] = result

    with FakeOpenAIServer(faults=plan) as srv:
        _vlm(srv, concurrency=2).stream([_judge_request("q1"), _judge_request("q2")], report)
    results = [answered[index] for index in sorted(answered)]
    assert reported == [(1, True), (0, True)]
    assert [r.output["answers"][0]["id"] for r in results] == ["q1", "q2"]


def test_a_429_makes_every_request_wait_out_the_retry_after() -> None:
    plan = FaultPlan(script=["429"], retry_after_s=0.4)
    with FakeOpenAIServer(faults=plan) as srv:
        results = _vlm(srv, concurrency=2).generate([_judge_request(f"q{n}") for n in range(4)])
        arrivals = [r.received_at for r in srv.requests]
    assert all(r.ok for r in results)
    # Requests 0 (the 429) and 1 go out together; every later one waits for the shared cool-down.
    assert len(arrivals) == 5 and all(later - arrivals[0] >= 0.4 for later in arrivals[2:])


def test_requests_per_minute_paces_the_requests() -> None:
    with FakeOpenAIServer() as srv:
        results = _vlm(srv, concurrency=8, requests_per_minute=1200).generate(
            [_judge_request(f"q{n}") for n in range(30)]
        )
        arrivals = sorted(r.received_at for r in srv.requests)
    assert all(r.ok for r in results)
    # 20 a second with a one-second burst: request k cannot start before (k - 20) / 20 s.
    assert all(arrivals[k] - arrivals[0] >= (k - 20) / 20 - 0.02 for k in range(20, 30))


def test_token_bucket_charges_estimates_and_is_corrected_by_reported_usage() -> None:
    limits = RateLimits(tokens_per_minute=6000)  # 100 tokens a second, a burst of 100
    assert limits.tokens.try_take(80) == 0.0
    assert 0.5 < limits.tokens.try_take(80) <= 0.6  # 20 left: 60 more needed at 100/s
    limits.settle(estimated_tokens=80, reported_tokens=30)  # the request used 50 tokens fewer
    assert limits.tokens.try_take(70) == 0.0
    # A request larger than the burst still goes once the bucket is full, then the debt is waited out.
    big = TokenBucket(per_minute=60)
    assert big.try_take(500) == 0.0 and big.try_take(1) > 400


def test_settings_that_cannot_work_are_rejected_up_front() -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        OpenAICompatibleVLM(base_url="localhost:8000/v1", model="m")
    with pytest.raises(ValueError, match="temperature"):
        OpenAICompatibleVLM(base_url="http://h/v1", model="m", temperature=-1)
    with pytest.raises(ValueError, match="positive"):
        OpenAICompatibleVLM(base_url="http://h/v1", model="m", requests_per_minute=-5)


# ---- first-token log-probabilities (VQAScore)


def _yes_no_request(top_logprobs: int = 3) -> VLMRequest:
    return VLMRequest(
        task="vqascore",
        prompt="Is there an arrow? Answer yes or no.",
        images=[_png(8, 8)],
        top_logprobs=top_logprobs,
    )


def test_a_request_for_logprobs_asks_for_one_token_and_returns_its_alternatives() -> None:
    scripted = FirstTokenDistribution({"Yes": 0.7, " yes": 0.1, "No": 0.15, "no": 0.05})
    with FakeOpenAIServer(responder=lambda request: scripted) as srv:
        [result] = _vlm(srv, max_tokens=300).generate([_yes_no_request(top_logprobs=3)])
        [sent] = srv.requests
    assert result.ok, result.failure
    assert "response_format" not in sent.body
    assert (sent.body["max_tokens"], sent.body["logprobs"], sent.body["top_logprobs"]) == (1, True, 3)
    assert result.output == {
        "answer": "Yes",
        "top_logprobs": [
            {"token": "Yes", "logprob": math.log(0.7)},
            {"token": "No", "logprob": math.log(0.15)},
            {"token": " yes", "logprob": math.log(0.1)},
        ],
    }
    assert result.raw == "Yes" and result.usage["completion_tokens"] == 1


def test_a_server_that_returns_no_logprobs_fails_the_request_saying_so() -> None:
    with FakeOpenAIServer(responder=_fixed("Yes")) as srv:  # a plain answer: no logprobs in the reply
        [result] = _vlm(srv, invalid_reply_retries=1).generate([_yes_no_request()])
        attempts = srv.stats.chat_requests
    assert result.output is None and attempts == 2 == result.usage["http_requests"]
    assert result.failure == (
        "invalid reply for task vqascore: the reply has no first-token log-probabilities "
        "(choices[0].logprobs.content[0].top_logprobs is missing or empty): the server may not support "
        "logprobs for this model"
    )  # and no hint about max_tokens: one token is what was asked for


def _logprob_reply(top_logprobs: Any, content: Any = "Yes") -> dict[str, Any]:
    first = {"token": "Yes", "logprob": -0.1, "top_logprobs": top_logprobs}
    return {"choices": [{"message": {"content": content}, "logprobs": {"content": [first]}}]}


def test_first_token_logprobs_reads_the_alternatives_and_rejects_what_is_not_one() -> None:
    alternatives = [{"token": "Yes", "logprob": -0.1, "bytes": [89]}, {"token": "No", "logprob": -2}]
    assert first_token_logprobs(_logprob_reply(alternatives, content=None)) == {
        "answer": "Yes",  # the generated token when the message has no content
        "top_logprobs": [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.0}],
    }
    for body in (_logprob_reply([]), {"choices": [{"message": {"content": "Yes"}, "logprobs": None}]}):
        with pytest.raises(InvalidReply, match="no first-token log-probabilities"):
            first_token_logprobs(body)
    with pytest.raises(InvalidReply, match="malformed first-token log-probability {'token': 'No'}"):
        first_token_logprobs(_logprob_reply([{"token": "Yes", "logprob": -0.1}, {"token": "No"}]))


def test_a_request_asks_for_a_json_object_or_logprobs_and_only_logprobs_change_its_key() -> None:
    with pytest.raises(ValidationError, match="not both"):
        VLMRequest(task="t", prompt="p", json_schema=JUDGE_SCHEMA, top_logprobs=5)
    with pytest.raises(ValidationError, match="less than or equal to 20"):
        VLMRequest(task="t", prompt="p", top_logprobs=21)
    plain = VLMRequest(task="t", prompt="p")
    assert "top_logprobs" not in plain.content_key()  # keys (and cached answers) of other requests stay
    assert VLMRequest(task="t", prompt="p", top_logprobs=5).content_key() == {
        **plain.content_key(),
        "top_logprobs": 5,
    }


def test_a_data_url_is_spliced_into_the_body_exactly_as_json_would_write_it() -> None:
    from sciir.backends.http.json_body import JSONText, json_body

    url = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 50).decode("ascii")
    plain = {"messages": [{"content": [{"type": "text", "text": 'say "hi"\n'}, {"image_url": {"url": url}}]}]}
    spliced = {
        "messages": [
            {"content": [plain["messages"][0]["content"][0], {"image_url": {"url": JSONText(url.encode())}}]}
        ]
    }
    assert json_body(spliced) == json.dumps(plain).encode()
    assert json.loads(json_body(spliced)) == plain
    with pytest.raises(ValueError, match="splice marker"):
        json_body({"text": "\x00sciir-json-text\x00", "url": JSONText(b"x")})
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_body({"value": object()})
