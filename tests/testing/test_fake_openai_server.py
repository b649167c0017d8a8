"""The fake OpenAI-compatible server, driven over real HTTP with httpx."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pandas as pd
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.aibench.params import QuestionSettings
from sciir.aibench.questions import qa_rows
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.offline import OfflineVLM
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.generation.best_of_n import build_score_request
from sciir.generation.planning import PlannerSettings, build_plan_request
from sciir.tasks.aesthetics import build_aesthetics_request
from sciir.tasks.aibench_graph import build_graph_request, parse_graph_reply
from sciir.tasks.aibench_qa import build_solver_request, solver_items
from sciir.tasks.aibench_questions import build_questions_request, parse_questions_reply
from sciir.tasks.judge import build_judge_request, checklist_items
from sciir.tasks.prompt_checklist import build_prompt_checklist_request
from sciir.tasks.registry import ANNOTATION_TASKS, rule_book
from sciir.tasks.registry import ANNOTATION_TASKS as TASKS
from sciir.tasks.registry import TASKS as REGISTERED
from sciir.tasks.screen import ScreenParams, screen_request
from sciir.testing.chat_answers import (
    FirstTokenDistribution,
    answer_checklist_yes,
    checklist_ids,
    checklist_responder,
)
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan, ServerFault

CHECKLIST = [
    {"id": "q1", "question": "Is there an arrow from A to B?"},
    {"id": "q2", "question": "Is 'ATP' spelled?"},
]
JUDGE_BODY = {
    "model": "judge-model",
    "messages": [
        {"role": "system", "content": "You are a strict judge."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Checklist:\n" + json.dumps(CHECKLIST)},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
    ],
}


def _post(srv: FakeOpenAIServer, body: object = JUDGE_BODY, timeout: float = 5.0) -> httpx.Response:
    return httpx.post(f"{srv.base_url}/chat/completions", json=body, timeout=timeout)


def test_models_endpoint_lists_the_served_model() -> None:
    with FakeOpenAIServer(model="qwen3-vl-fake") as srv:
        assert srv.base_url.startswith("http://127.0.0.1:") and srv.base_url.endswith("/v1")
        reply = httpx.get(f"{srv.base_url}/models")
    assert reply.status_code == 200
    assert [m["id"] for m in reply.json()["data"]] == ["qwen3-vl-fake"]


def test_default_responder_says_yes_to_every_checklist_question() -> None:
    with FakeOpenAIServer() as srv:
        reply = _post(srv)
        stats = srv.stats
    assert reply.status_code == 200
    envelope = reply.json()
    assert envelope["object"] == "chat.completion" and envelope["model"] == "judge-model"
    answers = json.loads(envelope["choices"][0]["message"]["content"])["answers"]
    assert [(a["id"], a["verdict"]) for a in answers] == [("q1", "yes"), ("q2", "yes")]
    assert envelope["usage"]["prompt_tokens"] > 256  # the image is billed as well as the words
    assert envelope["usage"]["completion_tokens"] > 0
    assert (stats.requests, stats.chat_requests, stats.faults) == (1, 1, {})


def test_checklist_ids_are_found_in_json_embedded_in_prose() -> None:
    text = 'Judge {"note": [1, 2]} then {"checklist": [{"id": "a", "question": "x"}, {"id": "b", "question": "y"}]}.'
    assert checklist_ids(text) == ["a", "b"]
    assert checklist_ids("no JSON here, only [brackets") == []


def test_a_request_without_checklist_gets_400_with_the_responders_reason() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Describe the image."}]}
    with FakeOpenAIServer(responder=answer_checklist_yes) as srv:
        reply = _post(srv, body)
    assert reply.status_code == 400
    assert "no JSON checklist" in reply.json()["error"]["message"]


def test_unknown_route_and_non_json_body_are_rejected() -> None:
    with FakeOpenAIServer() as srv:
        missing = httpx.get(f"{srv.base_url}/embeddings")
        garbled = httpx.post(f"{srv.base_url}/chat/completions", content=b"{not json")
    assert missing.status_code == 404
    assert garbled.status_code == 400 and "messages" in garbled.json()["error"]["message"]


@pytest.mark.parametrize(
    "fault, status", [("429", 429), ("500", 500), ("503", 503), ("400", 400), ("401", 401)]
)
def test_status_faults_answer_with_their_status_and_an_error_body(fault: str, status: int) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=[fault], retry_after_s=2.5)) as srv:
        reply = _post(srv)
        after = _post(srv)
    assert reply.status_code == status
    assert reply.json()["error"]["code"] == status
    assert (reply.headers.get("retry-after") == "2.5") is (status == 429)
    assert after.status_code == 200  # the script covers the first request only


def test_unauthorized_fault_echoes_the_presented_key_like_a_careless_server() -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["401"])) as srv:
        reply = httpx.post(
            f"{srv.base_url}/chat/completions",
            json=JUDGE_BODY,
            headers={"Authorization": "Bearer sk-visible"},
        )
    assert "sk-visible" in reply.json()["error"]["message"]


def test_malformed_and_schema_invalid_faults_reply_200_with_bad_content() -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["malformed_json", "schema_invalid"])) as srv:
        malformed = _post(srv)
        schema_invalid = _post(srv)
    assert malformed.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        malformed.json()
    content = json.loads(schema_invalid.json()["choices"][0]["message"]["content"])
    assert isinstance(content, dict) and "answers" not in content


@pytest.mark.parametrize("fault", ["drop", "truncated"])
def test_connection_faults_break_the_reply(fault: str) -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=[fault])) as srv:
        with pytest.raises(httpx.RemoteProtocolError):
            _post(srv)
        assert _post(srv).status_code == 200  # the server keeps serving new connections


def test_timeout_fault_hangs_past_the_client_timeout_and_stop_abandons_it() -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["timeout"], hang_s=30)) as srv:
        with pytest.raises(httpx.ReadTimeout):
            _post(srv, timeout=0.2)
        assert srv.stats.in_flight == 1  # still hanging when the server is stopped


def test_faults_follow_the_script_then_the_probabilities() -> None:
    plan = FaultPlan(script=["500", None], probabilities={"503": 1.0})
    with FakeOpenAIServer(faults=plan) as srv:
        statuses = [_post(srv).status_code for _ in range(4)]
        stats = srv.stats
        recorded = srv.requests
    assert statuses == [500, 200, 503, 503]
    assert stats.faults == {"500": 1, "503": 2}
    assert [r.fault for r in recorded] == [
        ServerFault.SERVER_ERROR,
        None,
        ServerFault.UNAVAILABLE,
        ServerFault.UNAVAILABLE,
    ]


def test_history_keeps_the_latest_bodies_and_headers() -> None:
    with FakeOpenAIServer(history_limit=2) as srv:
        for n in range(3):
            _post(srv, {**JUDGE_BODY, "seed": n})
        recorded = srv.requests
        stats = srv.stats
    assert [(r.index, r.body["seed"]) for r in recorded] == [(1, 1), (2, 2)]
    assert recorded[0].headers["content-type"] == "application/json"
    assert stats.chat_requests == 3 and stats.max_in_flight == 1


def test_fault_plan_rejects_unknown_faults_and_impossible_settings() -> None:
    with pytest.raises(ValueError, match="unknown fault 'teapot'.*truncated"):
        FaultPlan(script=["teapot"])
    with pytest.raises(ValueError, match="sum to at most 1"):
        FaultPlan(probabilities={"500": 0.7, "503": 0.7})
    with pytest.raises(ValueError, match="latency_s"):
        FaultPlan(latency_s=(0.5, 0.1))


def test_runs_as_a_module_on_a_chosen_port() -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    command = [sys.executable, "-m", "sciir.testing.fake_openai_server", "--port", "0", "--fault", "503=1"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as proc:
        try:
            base_url = proc.stdout.readline().split()[-1]
            models = httpx.get(f"{base_url}/models", timeout=5)
            chat = httpx.post(f"{base_url}/chat/completions", json=JUDGE_BODY, timeout=5)
        finally:
            proc.terminate()
    assert models.status_code == 200
    assert chat.status_code == 503


def test_stats_route_reports_the_counts_and_the_servers_cpu_time() -> None:
    with FakeOpenAIServer(faults=FaultPlan(script=["503"])) as srv:
        _post(srv)
        _post(srv)
        reply = httpx.get(srv.base_url.removesuffix("/v1") + "/stats")
    stats = reply.json()
    assert (stats["chat_requests"], stats["faults"], stats["max_in_flight"]) == (2, {"503": 1}, 1)
    assert stats["requests"] == 3 and stats["cpu_s"] > 0  # the stats request counts itself


def test_a_checklist_responder_answers_each_question_id_once_with_its_verdict() -> None:
    verdicts = {"q1": "no", "q2": None}
    doubled = {**JUDGE_BODY, "messages": [*JUDGE_BODY["messages"], JUDGE_BODY["messages"][1]]}
    with FakeOpenAIServer(responder=checklist_responder(verdicts.get, note="by id")) as srv:
        reply = _post(srv, doubled)
    answers = json.loads(reply.json()["choices"][0]["message"]["content"])["answers"]
    assert [(a["id"], a["verdict"], a["reasoning"]) for a in answers] == [
        ("q1", "no", "by id"),
        ("q2", None, "by id"),
    ]


YES_OR_NO = FirstTokenDistribution({"No": 0.15, "Yes": 0.6, " yes": 0.2, "YES": 0.05})


def test_a_request_for_logprobs_gets_the_scripted_first_token_distribution() -> None:
    body = {**JUDGE_BODY, "max_tokens": 1, "logprobs": True, "top_logprobs": 3}
    with FakeOpenAIServer(responder=lambda request: YES_OR_NO) as srv:
        choice = _post(srv, body).json()["choices"][0]
    assert choice["message"]["content"] == "Yes"  # greedy: the most likely token
    [first] = choice["logprobs"]["content"]
    assert (first["token"], first["logprob"]) == ("Yes", math.log(0.6))
    assert [(t["token"], t["logprob"]) for t in first["top_logprobs"]] == [
        ("Yes", math.log(0.6)),
        (" yes", math.log(0.2)),
        ("No", math.log(0.15)),
    ]
    assert first["top_logprobs"][1]["bytes"] == list(b" yes")


def test_logprobs_are_sent_only_when_asked_for_and_scripted() -> None:
    asked = {**JUDGE_BODY, "logprobs": True, "top_logprobs": 2}
    with FakeOpenAIServer(responder=lambda request: YES_OR_NO) as srv:
        not_asked = _post(srv).json()["choices"][0]
    with FakeOpenAIServer(responder=lambda request: "Yes") as srv:
        unscripted = _post(srv, asked).json()["choices"][0]
    assert not_asked["message"]["content"] == "Yes" and "logprobs" not in not_asked
    # A plain answer stands for a server that ignores logprobs.
    assert unscripted["message"]["content"] == "Yes" and "logprobs" not in unscripted


@pytest.mark.parametrize("probabilities", [{}, {"Yes": 0.0}, {"Yes": 0.7, "No": 0.4}, {"Yes": 1.5}])
def test_a_distribution_that_is_not_one_is_rejected(probabilities: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="lie in \\(0, 1\\] and sum to at most 1"):
        FirstTokenDistribution(probabilities)


# ---- strict structured outputs: the server refuses what the hosted API refuses

OPEN_SCHEMA = {"type": "object", "properties": {"answers": {"type": "array", "items": {"type": "string"}}}}


def _with_response_format(strict: bool) -> dict:
    schema_format = {"name": "judge", "schema": OPEN_SCHEMA, "strict": strict}
    return {**JUDGE_BODY, "response_format": {"type": "json_schema", "json_schema": schema_format}}


def test_a_strict_request_with_a_non_strict_schema_is_refused_with_every_problem() -> None:
    with FakeOpenAIServer() as srv:
        refused = _post(srv, _with_response_format(strict=True))
        lenient = _post(srv, _with_response_format(strict=False))
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == (
        "Invalid schema for response_format 'judge': $: 'additionalProperties' must be false; "
        "$: every property must be required; not in 'required': ['answers']"
    )
    assert lenient.status_code == 200  # without strict, a schema is only a hint


def _figure_png() -> bytes:
    """Two labelled boxes joined by a line: enough for OCR to read labels and every task to answer."""
    image = Image.new("RGB", (640, 320), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=36)
    for left, label in ((30, "Glucose"), (400, "Pyruvate")):
        draw.rectangle((left, 120, left + 210, 200), outline="black", width=3)
        draw.text((left + 20, 140), label, fill="black", font=font)
    draw.line((240, 160, 400, 160), fill="black", width=3)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _answered(backend: OfflineVLM, request: VLMRequest, answers: dict[str, tuple[VLMRequest, dict]]) -> dict:
    """The offline backend's answer to ``request``, kept in ``answers`` by task."""
    [result] = backend.generate([request])
    assert result.ok, result.failure
    answers[request.task] = (request, result.output)
    return result.output


def _context(task: str, known: dict) -> dict:
    """The context keys ``task`` reads, taken from what earlier stages produced."""
    return {key: known[key] for key in TASKS[task].context_keys}


def _every_task_with_an_offline_answer() -> dict[str, tuple[VLMRequest, dict]]:
    """One real request of every task the project sends a model, each built by the project's own
    builder from the previous stage's answer (as the pipelines chain them), with the offline answer."""
    png, backend, answers = _figure_png(), OfflineVLM(rule_book("offline")), {}
    texts = {
        "caption": "Glycolysis: Glucose is converted to Pyruvate.",
        "methods_text": "Glucose leads to Pyruvate.",
    }
    _answered(backend, ANNOTATION_TASKS["track_scores"].build(texts, png), answers)
    reasoning = _answered(backend, ANNOTATION_TASKS["reasoning"].build(texts, png), answers)
    known = {**texts, **reasoning, "tracks": ["process"]}
    abstract = _answered(
        backend, ANNOTATION_TASKS["abstract_prompt"].build(_context("abstract_prompt", known)), answers
    )
    plan = _context("checklist", known)
    checklist = ANNOTATION_TASKS["checklist"].parse_output(
        VLMResult(output=_answered(backend, ANNOTATION_TASKS["checklist"].build(plan), answers))
    )
    rows = pd.DataFrame(
        {
            "question_id": q.id,
            "question": q.question,
            "layer": q.layer,
            "track": q.track,
            "expected_text": q.expected_text,
        }
        for q in checklist.questions
    )
    _answered(backend, build_judge_request("a glycolysis diagram", checklist_items(rows), png), answers)
    graph_reply = _answered(
        backend, build_graph_request(texts["methods_text"], texts["caption"], reasoning["terms"]), answers
    )
    graph = parse_graph_reply(VLMResult(output=graph_reply))
    asked = build_questions_request("s1", graph, ["Lactate"], QuestionSettings())
    written = parse_questions_reply(VLMResult(output=_answered(backend, asked, answers)), graph, ["Lactate"])
    questions = pd.DataFrame(qa_rows("s1", written))
    _answered(backend, build_solver_request(solver_items(questions), png), answers)
    _answered(backend, build_aesthetics_request(png), answers)
    _answered(backend, screen_request(png, texts["caption"], ScreenParams()), answers)
    _answered(backend, build_score_request('Draw "Glucose" -> "Pyruvate".', png), answers)
    _answered(
        backend, build_prompt_checklist_request('A flow diagram from "Glucose" to "Pyruvate".'), answers
    )
    # No rule writes a plan (it takes a language model's knowledge): a plan as a planner model writes one.
    plan = 'Style: flow diagram on white. Required text: "Glucose", "Pyruvate". "Glucose" -> "Pyruvate".'
    answers["planner"] = (build_plan_request(abstract["prompt"], PlannerSettings()), {"plan": plan})
    return answers


def test_one_request_of_every_task_is_accepted_in_strict_mode_and_its_reply_parsed() -> None:
    answers = _every_task_with_an_offline_answer()
    # Every registered task with a JSON reply: not VQAScore (log-probabilities), nor the AIBench
    # illustration (a generation prompt, answered by an image).
    assert set(answers) == {name for name, task in REGISTERED.items() if task.reply_schema is not None}
    assert set(REGISTERED) - set(answers) == {"vqascore", "aibench_illustration"}
    requests = [request for request, _ in answers.values()]

    def offline_answer(body: dict) -> str:
        return json.dumps(answers[body["response_format"]["json_schema"]["name"]][1])

    with FakeOpenAIServer(responder=offline_answer) as srv:
        vlm = OpenAICompatibleVLM(
            base_url=srv.base_url, model="fake-vlm", max_retries=0, invalid_reply_retries=0
        )
        results = vlm.generate(requests)
        sent = srv.requests
    assert [r.failure for r in results] == [None] * len(requests)
    assert [r.output for r in results] == [output for _, output in answers.values()]
    assert all(body.body["response_format"]["json_schema"]["strict"] is True for body in sent)
    for request, result in zip(requests, results, strict=True):
        if request.task in TASKS:
            ANNOTATION_TASKS[request.task].parse_output(
                result
            )  # and each annotation reply parses into its output model


def test_a_request_with_a_non_strict_schema_fails_with_the_servers_reason_and_is_not_retried() -> None:
    request = VLMRequest(
        task="checklist",
        prompt="Write the checklist.",
        json_schema=TASKS["checklist"].reply_schema.model_json_schema(),
    )
    with FakeOpenAIServer() as srv:
        [result] = OpenAICompatibleVLM(base_url=srv.base_url, model="fake-vlm", max_retries=3).generate(
            [request]
        )
        stats = srv.stats
    assert not result.ok and result.output is None and stats.chat_requests == 1
    assert "returned HTTP 400 (not retried)" in result.failure
    assert (
        "Invalid schema for response_format 'checklist': $: 'additionalProperties' must be false"
        in result.failure
    )
