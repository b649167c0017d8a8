"""Checklist review end to end in a real browser (Debian's Chromium driven by Playwright): the app served on
loopback over a benchmark file, a question deleted with its number key, one added with n, one edited by typing,
each checklist saved with s, undo (the checklist comes back as left), zoom, a reload, the answers in the store;
then the review saved as a new versioned benchmark file and evaluate, run by Kedro's runner on the project's
catalog, judges its questions and records its sha256. Skipped without /usr/bin/chromium."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from playwright.sync_api import ConsoleMessage, Page, sync_playwright
from sqlalchemy import select

from sciir.review.models import Answer, Item
from sciir.review.store import open_store
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.testing.review_raters import ReviewServer
from sciir.testing.stage_runs import evaluate_file, label_images

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
SAMPLES = [
    {
        "sample_id": "lever",
        "prompt": "Draw a lever with the label Effort.",
        "questions": [
            {"id": "q1", "text": 'Is "Effort" spelled exactly?', "expected_text": "Effort"},
            {"id": "q2", "text": "Is the lever drawn in 3D?", "category": "style"},
        ],
    },
    {
        "sample_id": "circuit",
        "prompt": "Draw a resistor labelled R1.",
        "questions": [{"id": "q1", "text": 'Is "R1" spelled exactly?', "expected_text": "R1"}],
    },
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
    ),
]


def _answers(store_url: str) -> list[tuple[str, dict, bool]]:
    store = open_store(store_url)
    with store.reading() as session:
        rows = session.execute(
            select(Item.key, Answer.detail, Answer.undone_at.is_(None)).join(Item).order_by(Answer.id)
        ).all()
    store.close()
    return [(key, json.loads(detail or "{}"), live) for key, detail, live in rows]


def _sample(page: Page) -> str:
    return page.inner_text("#sample")


def _question_ids(answer: dict) -> list[str]:
    return [question["id"] for question in answer["questions"]]


def test_review_checklists_with_the_keyboard_then_evaluate_the_saved_file(tmp_path: Path, mlflow_run) -> None:
    benchmark = tmp_path / "physics.jsonl"
    benchmark.write_text("".join(json.dumps(sample) + "\n" for sample in SAMPLES))
    (tmp_path / "refs").mkdir()
    label_images(tmp_path / "refs", "lever", {"reference": "Effort"})
    store = f"sqlite:///{tmp_path / 'review.sqlite'}"
    options = [
        "--store",
        store,
        "--checklists",
        str(benchmark),
        "--checklist-images",
        str(tmp_path / "refs" / "reference"),
    ]
    problems: list[str] = []
    with ReviewServer(options, tmp_path / "server.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.on("console", lambda message: _note(problems, message))
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}/sign-in")
        page.fill('input[name="name"]', "ann")
        page.click('button[type="submit"]')
        page.click("#checklists-link")
        page.wait_for_selector("html[data-keys=ready]")
        assert "You: 0 / 2" in page.inner_text("#mine")
        if _sample(page) == "circuit":  # saved as it is, to reach the lever
            with page.expect_navigation():
                page.keyboard.press("s")
        assert _sample(page) == "lever"

        page.keyboard.press("2")  # question 2 deleted
        assert page.locator('input[name="q1_delete"]').is_checked()
        page.keyboard.press("n")  # a new question: its text typed, then Escape leaves the field
        page.keyboard.type("Is an arrow drawn at the effort?")
        page.keyboard.press("Escape")
        page.locator('textarea[name="q0_text"]').fill('Is "Effort" written exactly?')
        page.keyboard.press("Escape")
        with page.expect_navigation():
            page.keyboard.press("s")
        lever = [answer for key, answer, live in _answers(store) if key == "lever" and live]
        assert [_question_ids(answer) for answer in lever] == [["q1", "new1"]]
        assert lever[0]["questions"][0]["text"] == 'Is "Effort" written exactly?'

        with page.expect_navigation():
            page.keyboard.press("u")  # the lever again, as it was left
        assert _sample(page) == "lever" and page.locator('input[name="q1_delete"]').is_checked()
        assert page.locator('textarea[name="q2_text"]').input_value() == "Is an arrow drawn at the effort?"
        page.keyboard.press("z")
        assert "zoomed" in (page.locator("#figure").get_attribute("class") or "")
        page.keyboard.press("z")
        page.keyboard.press("2")  # question 2 kept after all
        with page.expect_navigation():
            page.keyboard.press("s")
        page.reload()
        while page.locator("#sample").count():
            with page.expect_navigation():
                page.keyboard.press("s")
        assert page.locator("#done").is_visible() and "You: 2 / 2" in page.inner_text("#mine")
        browser.close()
    assert problems == []
    live = {key: _question_ids(answer) for key, answer, alive in _answers(store) if alive}
    assert live == {"lever": ["q1", "q2", "new1"], "circuit": ["q1"]}

    saved = subprocess.run(
        [
            sys.executable,
            "-m",
            "sciir.review",
            "--store",
            store,
            "--checklists",
            str(benchmark),
            "--save-benchmark",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert saved.returncode == 0, saved.stderr[-2000:]
    reviewed = tmp_path / "physics-v1.jsonl"
    sha256 = hashlib.sha256(reviewed.read_bytes()).hexdigest()
    assert f"sha256 {sha256}" in saved.stdout

    images = label_images(tmp_path / "images", "lever", {"m1": "Effort", "m2": ""})
    label_images(images, "circuit", {"m1": "R1", "m2": "R1"})
    results = evaluate_file(tmp_path, reviewed, images, CONFIG_LOADER_ARGS)
    assert mlflow.get_run(mlflow_run.info.run_id).data.tags["sciir.benchmark.sha256"] == sha256
    verdicts = pd.read_parquet(results / "verdicts.parquet")
    lever = verdicts[(verdicts["sample_id"] == "lever") & (verdicts["model"] == "m1")]
    assert set(lever["question_id"]) == {"q1", "q2", "new1"}


def _note(problems: list[str], message: ConsoleMessage) -> None:
    if message.type in ("error", "warning"):
        problems.append(message.text)
