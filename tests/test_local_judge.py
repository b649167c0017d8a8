"""The judge path on a local model: judge requests for a folder of images, decoded by the ``transformers``
backend (a tiny random Qwen2.5-VL built here) under their JSON schema, parsed into one verdict per question.

Random weights copy no question id from the prompt and never end an unbounded string, so the requests carry
the judge's reply schema pinned to their checklist: the answers in checklist order, each with its question's
id, evidence and reasoning of a few characters, and a verdict of yes or no (no abstention). Every reply is
then a verdict for every question, whatever the weights: what a grammar-constrained local judge guarantees.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image, ImageDraw

from sciir.backends.transformers_vlm import TransformersVLM
from sciir.judging import JUDGE_REPLY_SCHEMA, build_judge_request, checklist_items, parse_judge_reply
from sciir.tiny_vlm import save_tiny_vlm

MODEL = "tiny_local"
CHECKLISTS = pd.DataFrame(
    {
        "sample_id": ["s1", "s1", "s2"],
        "question_id": ["q1", "q2", "q1"],
        "question": ['Is the label "ATP" written?', "Does an arrow go from ADP to ATP?", 'Is "Na+" written?'],
        "layer": [1, 2, 1],
        "track": ["text", "process", "text"],
        "expected_text": ["ATP", None, "Na+"],
    }
)
PROMPTS = {"s1": "ATP synthase turning ADP into ATP.", "s2": "The sodium pump in a cell membrane."}
# Text fields of at most 4 characters: an answer stays within about 100 tokens (one token a byte).
TEXT_BOUND = 4


def pinned_schema(checklist: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge's reply schema, its answers pinned to ``checklist``: one per question, in order, with the
    question's id, evidence and reasoning of at most ``TEXT_BOUND`` characters, and a yes/no verdict."""
    schema = copy.deepcopy(JUDGE_REPLY_SCHEMA)
    answers = schema["properties"]["answers"]
    item = answers["items"]
    text = {"type": "string", "maxLength": TEXT_BOUND}

    def answer(question_id: str) -> dict[str, Any]:
        pinned = {
            "id": {"const": question_id},
            "evidence": text,
            "reasoning": text,
            "verdict": {"enum": ["yes", "no"]},
        }
        return {**item, "properties": {**item["properties"], **pinned}}

    answers["prefixItems"] = [answer(question["id"]) for question in checklist]
    answers["minItems"] = answers["maxItems"] = len(checklist)
    return schema


def _diagram(path: Path, label: str) -> Path:
    image = Image.new("RGB", (96, 64), "white")
    drawing = ImageDraw.Draw(image)
    drawing.rectangle((8, 8, 40, 40), outline="black", width=2)
    drawing.line((44, 24, 88, 24), fill="black", width=2)
    drawing.text((10, 44), label, fill="black")
    image.save(path)
    return path


@pytest.fixture(scope="module")
def judge(tmp_path_factory) -> TransformersVLM:
    folder = save_tiny_vlm(tmp_path_factory.mktemp("judge") / "model", seed=0)
    return TransformersVLM(model_path=str(folder), batch_size=2, max_new_tokens=256)


def test_a_local_judge_returns_a_parsed_verdict_for_every_question(tmp_path, judge):
    images = tmp_path / "images" / MODEL
    images.mkdir(parents=True)
    files = {"s1": _diagram(images / "s1.png", "ATP"), "s2": _diagram(images / "s2.png", "Na+")}
    checklists = {sid: checklist_items(rows) for sid, rows in CHECKLISTS.groupby("sample_id")}
    requests = [
        build_judge_request(PROMPTS[sid], checklist, files[sid].read_bytes()).model_copy(
            update={"json_schema": pinned_schema(checklist)}
        )
        for sid, checklist in checklists.items()
    ]
    results = judge.generate(requests)

    for (sid, checklist), result in zip(checklists.items(), results, strict=True):
        assert result.ok, result.failure
        parsed = parse_judge_reply(result, checklist, MODEL, sid)
        assert parsed.ignored == []
        assert [row["question_id"] for row in parsed.rows] == [question["id"] for question in checklist]
        for row in parsed.rows:
            assert row["status"] == "judged", row["reason"]
            assert row["verdict"] in ("yes", "no") and row["reason"] is None
            assert len(row["evidence"]) <= TEXT_BOUND and len(row["reasoning"]) <= TEXT_BOUND
