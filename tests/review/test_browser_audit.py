"""Judge audit end to end in a real browser (Debian's Chromium driven by Playwright): evaluate run by Kedro's
runner on the project's catalog (a benchmark file, a folder of images, the offline judge), the app served on
loopback over that run's verdicts, every sampled verdict answered with the keyboard (right, wrong, undo, zoom, a
reload), the answers in the store; then evaluate again reads them from the store through the catalog and reports
the judge's accuracy and Cohen's kappa against people per question kind. A screenshot of the page is taken as
docs/images/review_audit.png was (there on a default run's verdicts). Skipped without /usr/bin/chromium."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest
from PIL import Image
from playwright.sync_api import ConsoleMessage, Page, sync_playwright
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import select

from sciir.review.models import Answer, Item
from sciir.review.store import open_store
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.testing.browser_pages import LOADED_IMAGE_WIDTH
from sciir.testing.review_raters import ReviewServer
from sciir.testing.stage_runs import evaluate_file, label_benchmark, label_images

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
STORE = "sqlite:///data/review/review.sqlite"  # the catalog's review_store, relative to the project
LABELS = {"pulley": "Tension", "prism": "Refraction", "cell": "Anode"}
# m1 writes every label, m2 none: the offline judge says yes to m1 and no to m2. The rater calls every verdict
# right but one (m2's cell), so the judge's accuracy against people is 5/6.
DRAWN = {"m1": dict(LABELS), "m2": dict.fromkeys(LABELS, "")}
WRONG = "m2/cell/q1"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
    ),
]


def _store_rows() -> tuple[dict[str, str], list[tuple[str, str | None, bool]]]:
    """The queue's items (public id -> key) and every answer (key, detail, live) in the order given."""
    store = open_store(STORE)
    with store.reading() as session:
        items = dict(session.execute(select(Item.public_id, Item.key)).tuples().all())
        answers = session.execute(
            select(Item.key, Answer.detail, Answer.undone_at.is_(None)).join(Item).order_by(Answer.id)
        ).all()
    store.close()
    return items, [(key, detail, live) for key, detail, live in answers]


def _shown(page: Page, items: dict[str, str]) -> str:
    """The key of the verdict on the page, from its image's address (the item's id: nothing else names it)."""
    public_id = (page.locator("#image").get_attribute("src") or "").rsplit("/", 1)[-1]
    return items[public_id]


def _people(key: str) -> str:
    return "w" if key == WRONG else "r"


def test_audit_the_judge_with_the_keyboard_then_evaluate_reports_it(tmp_path: Path, mlflow_run) -> None:
    benchmark = label_benchmark(tmp_path / "labels.jsonl", LABELS)
    images = tmp_path / "images"
    for sample in LABELS:
        label_images(images, sample, {model: drawn[sample] for model, drawn in DRAWN.items()})
    results = evaluate_file(tmp_path, benchmark, images, CONFIG_LOADER_ARGS)
    assert pd.read_csv(results / "judge_audit.csv").empty and not (tmp_path / "data" / "review").exists()

    options = ["--store", STORE, "--audit-verdicts", str(results / "verdicts.parquet")]
    options += ["--audit-checklists", str(benchmark), "--audit-images", str(images)]
    problems: list[str] = []
    with ReviewServer(options, tmp_path / "server.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 640})
        page.on("console", lambda message: _note(problems, message))
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}/sign-in")
        page.fill('input[name="name"]', "ann")
        page.click('button[type="submit"]')
        page.click("#audit-link")
        page.wait_for_selector("html[data-keys=ready]")
        items, _ = _store_rows()
        assert sorted(items.values()) == sorted(f"{m}/{s}/q1" for m in DRAWN for s in LABELS)
        assert "You: 0 / 6" in page.inner_text("#mine")
        for model in DRAWN:  # blind: no model's name in the page
            assert model not in page.inner_text("body") and f"/{model}/" not in page.content()

        first = _shown(page, items)
        assert page.inner_text("#question") == f'Is "{LABELS[first.split("/")[1]]}" spelled exactly?'
        verdict = "yes" if first.startswith("m1/") else "no"
        assert f"The judge answered {verdict}" in page.inner_text("#verdict")
        assert page.locator("#evidence").count() == 1
        with page.expect_navigation():
            page.keyboard.press("w" if _people(first) == "r" else "r")  # the wrong answer, then taken back
        assert "You: 1 / 6" in page.inner_text("#mine") and _store_rows()[1][-1][2]
        with page.expect_navigation():
            page.keyboard.press("u")
        assert _shown(page, items) == first and "You: 0 / 6" in page.inner_text("#mine")
        assert [live for *_, live in _store_rows()[1]] == [False]

        page.keyboard.press("z")
        assert "zoomed" in (page.locator("#figure").get_attribute("class") or "")
        assert page.locator("#image").evaluate(LOADED_IMAGE_WIDTH) == 320  # the image as judged
        page.keyboard.press("z")
        while page.locator("#image").count():
            if _shown(page, items).startswith("m1/") and not (tmp_path / "review_audit.png").exists():
                page.screenshot(path=str(tmp_path / "review_audit.png"))  # a verdict on a drawn label
            with page.expect_navigation():
                page.keyboard.press(_people(_shown(page, items)))
            page.reload()
        assert page.locator("#done").is_visible() and "You: 6 / 6" in page.inner_text("#mine")
        browser.close()
    assert problems == []
    live = {key: detail for key, detail, alive in _store_rows()[1] if alive}
    assert live == {key: "wrong" if key == WRONG else "right" for key in items.values()}

    # evaluate's next run reads the audit from the store through the catalog: nothing exported by hand
    with mlflow.start_run(nested=True) as second:
        evaluate_file(tmp_path, benchmark, images, CONFIG_LOADER_ARGS)
    audit = pd.read_csv(results / "judge_audit.csv").set_index("question_kind")
    truth, judge = ["yes"] * 3 + ["no", "no", "yes"], ["yes"] * 3 + ["no"] * 3  # m1's three, then m2's
    assert audit.loc["text", ["n_audited", "n_agree"]].tolist() == [6, 5]
    assert audit.loc["text", "accuracy"] == pytest.approx(5 / 6)
    assert audit.loc["text", "cohen_kappa"] == pytest.approx(cohen_kappa_score(truth, judge))
    assert mlflow.get_run(second.info.run_id).data.metrics[
        "evaluate.judge_audit.text.accuracy"
    ] == pytest.approx(5 / 6)
    with Image.open(tmp_path / "review_audit.png") as shot:
        assert shot.size == (1100, 640)


def _note(problems: list[str], message: ConsoleMessage) -> None:
    if message.type in ("error", "warning"):
        problems.append(message.text)
