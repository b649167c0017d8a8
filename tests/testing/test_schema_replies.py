"""The loopback server's replies from a request's own JSON schema: valid for every annotation task (so a
load test exercises whole chains), answering every question of a judge request, and a log-normal latency
with the median and 95th percentile it is given."""

from __future__ import annotations

import json
import random
import statistics

import pandas as pd
from PIL import Image

from sciir.aibench.questions import QuestionSettings
from sciir.annotation.aibench_graphs import graphs_and_questions
from sciir.backends.base import VLMResult
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.images.payload import encode
from sciir.pipelines.annotate.nodes import annotate
from sciir.selection.benchmark import candidates
from sciir.tasks.judge import build_judge_request, parse_judge_reply
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan, lognormal_mean
from sciir.testing.figure_rows import kept_panels, white_images
from sciir.testing.schema_replies import answer_from_schema


def test_every_annotation_task_accepts_the_schema_replies_so_every_chain_runs_to_its_end():
    table = kept_panels(24)
    images = white_images(table["sample_id"])
    with FakeOpenAIServer(answer_from_schema) as server:
        annotator = OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm", concurrency=4)
        annotations, checklists, _ = annotate(table, images, annotator, {"tau": 7})
        sent = server.stats.chat_requests
    assert (annotations["status"] == "ok").all(), annotations["reason"].dropna().tolist()[:1]
    labelled = annotations["abstract_prompt"].notna().sum()
    assert labelled >= 1 and sent == 2 * 24 + 2 * labelled  # low-reasoning samples stop after two tasks
    assert set(checklists["sample_id"]) <= set(annotations["sample_id"]) and len(checklists) >= labelled
    # Nullable parts given by reference (the per-track terms) are answered too, so bench_select has
    # candidates to draw a benchmark from (benchmarks/bench_scale.py runs it after annotate).
    assert annotations["terms_entity"].notna().all()
    pool = candidates(annotations, checklists, require_text_checks=True)
    assert 0 < len(pool) <= labelled and pool["group"].nunique() >= 2  # not every figure shows every track


def test_a_judge_request_gets_a_verdict_for_each_of_its_questions():
    checklist = [
        {"id": f"q{n}", "question": f"Is label L{n} drawn?", "layer": 1, "track": "text", "kind": "text",
         "about": [f"L{n}"], "expected_text": f"L{n}", "polarity": "positive", "parent_ids": []}
        for n in range(5)
    ]  # fmt: skip
    request = build_judge_request("A diagram.", checklist, encode(Image.new("RGB", (8, 8)), "png"))
    payload = OpenAICompatibleVLM(base_url="http://127.0.0.1:9/v1", model="m").build_payload(request)
    reply = answer_from_schema(payload)
    assert reply == answer_from_schema(payload)  # the same request, the same reply
    parsed = parse_judge_reply(VLMResult(output=json.loads(reply)), checklist, "m", "s0")
    assert not parsed.ignored and [row["question_id"] for row in parsed.rows] == [f"q{n}" for n in range(5)]
    assert all(row["verdict"] == "yes" and row["status"] == "judged" for row in parsed.rows)


def test_log_normal_latency_has_the_median_and_95th_percentile_it_is_given():
    plan = FaultPlan(latency_lognormal=(2.0, 8.0))
    rng = random.Random(0)
    draws = sorted(plan.latency_for(rng) for _ in range(40_000))
    assert abs(statistics.median(draws) - 2.0) < 0.06
    assert abs(draws[int(0.95 * len(draws))] - 8.0) < 0.4
    assert abs(statistics.fmean(draws) - lognormal_mean(2.0, 8.0)) < 0.08


def test_logic_graph_replies_are_valid_so_every_sample_is_asked_its_questions():
    table = kept_panels(12)
    annotations = pd.DataFrame(
        {
            "sample_id": table["sample_id"],
            "status": "ok",
            "reason": None,
            "terms": json.dumps(["Glucose", "Pyruvate"]),
            "required_text": json.dumps(["Glucose"]),
            "sci_rcot": "Style: flow diagram.",
            "abstract_prompt": "A pathway.",
        }
    )
    with FakeOpenAIServer(answer_from_schema) as server:
        annotator = OpenAICompatibleVLM(base_url=server.base_url, model="fake-vlm", concurrency=4)
        graphs, _ = graphs_and_questions(annotations, table, annotator, QuestionSettings())
        sent = server.stats.chat_requests
    # Every graph is usable (the questions' replies name no graph component: a load test needs no more).
    assert not graphs["reason"].fillna("").str.contains("aibench_graph").any(), graphs["reason"].tolist()[:1]
    assert sent == 2 * 12  # a graph and its questions for every sample
