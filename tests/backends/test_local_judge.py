"""The judge path on a local model: judge requests for a folder of images, decoded by the ``transformers``
backend (a tiny random Qwen2.5-VL built here) under their JSON schema, parsed into verdicts.

The whole path first, as a user configures it: the judge node over a folder of images with the backend
loaded from its catalog entry, the judge's own reply schema (question ids as an enum, at most one answer
per question) and free text bounded by the backend's ``max_string_chars``. Random weights pick any
allowed token, so they may leave a question out or answer one twice; every reply is still schema-valid
JSON that ends, and is read.

Then a schema pinned to the checklist (the answers in checklist order, each with its question's id, a
yes/no verdict): every reply is a verdict for every question, whatever the weights.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image, ImageDraw

from sciir.backends.transformers_vlm import TransformersVLM
from sciir.catalog.backend_dataset import BackendDataset
from sciir.pipelines.evaluate.nodes import judge_generations
from sciir.tasks.judge import JUDGE_REPLY_SCHEMA, build_judge_request, checklist_items, parse_judge_reply
from sciir.testing.tiny_vlm import save_tiny_vlm

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
BENCHMARK = pd.DataFrame(
    {
        "sample_id": list(PROMPTS),
        "group": ["All_Three"] * 2,
        "setting": ["instruction_following"] * 2,
        "prompt": list(PROMPTS.values()),
    }
)
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
def model_folder(tmp_path_factory) -> Path:
    return save_tiny_vlm(tmp_path_factory.mktemp("judge") / "model", seed=0)


@pytest.fixture(scope="module")
def judge(model_folder) -> TransformersVLM:
    return TransformersVLM(model_path=str(model_folder), batch_size=2, max_new_tokens=256)


def _image_folder(root: Path) -> dict[str, Path]:
    images = root / MODEL
    images.mkdir(parents=True)
    return {"s1": _diagram(images / "s1.png", "ATP"), "s2": _diagram(images / "s2.png", "Na+")}


# What a reply may leave unjudged: a question it left out or answered twice. Never "not JSON", never cut.
ANSWER_COUNT_REASONS = ("omitted question", "times")


@pytest.mark.slow
def test_the_judge_node_reads_a_folder_with_a_local_judge_from_its_catalog_entry(tmp_path, model_folder):
    _image_folder(tmp_path / "images")
    config = {"model_path": str(model_folder), "batch_size": 2, "max_new_tokens": 256, "max_string_chars": 6}
    judge = BackendDataset(kind="vlm", backend="transformers", config=config).load()
    checklists = CHECKLISTS.assign(parent_ids="[]")
    params = {
        "images_dir": str(tmp_path / "images"),
        "window": 2,
        "blank": {"enabled": False},
    }  # the folder only

    verdicts, summary = judge_generations(BENCHMARK, checklists, {}, pd.DataFrame(), judge, params)

    assert summary["failed_requests"] == 0 and summary["unavailable"] == {}
    assert len(verdicts) == len(CHECKLISTS) and set(verdicts["model"]) == {MODEL}
    read = verdicts[verdicts["status"].isin(["judged", "abstained"])]
    assert len(read) >= 1
    assert read["verdict"].isin(["yes", "no"]).eq(read["status"].eq("judged")).all()
    assert all(len(text) <= 6 for text in [*read["evidence"].dropna(), *read["reasoning"].dropna()])
    for reason in verdicts.loc[verdicts["status"] == "failed", "reason"]:
        assert any(part in reason for part in ANSWER_COUNT_REASONS), reason


@pytest.mark.slow
def test_a_local_judge_returns_a_parsed_verdict_for_every_question(tmp_path, judge):
    files = _image_folder(tmp_path / "images")
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
