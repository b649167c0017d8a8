"""Panel review end to end in a real browser (Debian's Chromium driven by Playwright): ingest and curate run by
Kedro's runner on an article of two figures, the app served on loopback over what curate wrote, every panel
decided with the keyboard (a note typed, undo, both zooms, a reload), the answers in the store; then curate's
next run reads them from the store through the catalog and the spot check's false-positive rate is updated.
Skipped without /usr/bin/chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from kedro.config import OmegaConfigLoader
from kedro.runner import SequentialRunner
from playwright.sync_api import ConsoleMessage, Page, sync_playwright
from sqlalchemy import select

from sciir.pipelines.curate import create_pipeline as create_curate
from sciir.pipelines.ingest import create_pipeline as create_ingest
from sciir.review.models import Answer, Item, Rater
from sciir.review.store import open_store
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.testing.browser_pages import LOADED_IMAGE_WIDTH
from sciir.testing.review_raters import ReviewServer
from sciir.testing.stage_runs import HOSTILE_CAPTION, curate_parameters, stage_catalog, two_figure_article

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
REPO = Path(__file__).resolve().parents[2]
LOADER = OmegaConfigLoader(conf_source=str(REPO / "conf"), **CONFIG_LOADER_ARGS)  # type: ignore[arg-type]
STORE = "sqlite:///data/review/review.sqlite"  # the catalog's review_store, relative to the project

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
    ),
]


@pytest.fixture
def curated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict]:
    """A project folder where ingest and curate have run; the test runs from it (the app's and the catalog's
    relative paths are the project's). Yields curate's parameters."""
    monkeypatch.chdir(tmp_path)
    params = curate_parameters(tmp_path, two_figure_article(tmp_path / "articles" / "a1").parent, LOADER)
    pipeline = create_ingest() + create_curate()
    SequentialRunner().run(pipeline, stage_catalog(pipeline, tmp_path, LOADER, params))
    yield params["params:curate"]


def _answers() -> list[tuple[str, str, str | None, bool]]:
    store = open_store(STORE)
    with store.reading() as session:
        rows = session.execute(
            select(
                Rater.name, Item.context["figure_id"].as_string(), Answer.detail, Answer.undone_at.is_(None)
            )
            .join(Item, Item.id == Answer.item_id)
            .join(Rater, Rater.id == Answer.rater_id)
            .order_by(Answer.id)
        ).all()
    store.close()
    return [tuple(row) for row in rows]  # type: ignore[misc]


def _zoomed(page: Page, selector: str) -> bool:
    return "zoomed" in (page.locator(selector).get_attribute("class") or "")


def test_review_panels_with_the_keyboard_and_curate_reads_the_decisions(
    curated: dict, tmp_path: Path
) -> None:
    problems: list[str] = []
    with ReviewServer(["--store", STORE], tmp_path / "server.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.on("console", lambda message: _note(problems, message))
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}/panels")
        page.fill('input[name="name"]', "ann")
        page.click('button[type="submit"]')
        page.click("#panels-link")
        page.wait_for_selector("html[data-keys=ready]")
        assert "You: 0 / 2" in page.inner_text("#mine")
        first = page.inner_text("#figure-id")
        assert page.locator("#image").evaluate(LOADED_IMAGE_WIDTH) == 64  # curate's standardised panel
        assert page.locator("#figure-image").evaluate(LOADED_IMAGE_WIDTH) in (400, 360)  # its figure

        page.keyboard.press("n")  # the note field, typed into, left with Enter; then r rejects
        page.keyboard.type("wrong panel")
        page.keyboard.press("Enter")
        with page.expect_navigation():
            page.keyboard.press("r")
        assert page.inner_text("#figure-id") != first and "You: 1 / 2" in page.inner_text("#mine")
        assert _answers() == [("ann", first, '{"decision": "REJECT", "note": "wrong panel"}', True)]

        with page.expect_navigation():
            page.keyboard.press("u")
        assert page.inner_text("#figure-id") == first and "You: 0 / 2" in page.inner_text("#mine")
        assert [live for *_, live in _answers()] == [False]

        for key, selector in (("z", "#figure"), ("f", "#source-figure")):
            page.keyboard.press(key)
            assert _zoomed(page, selector)
            page.keyboard.press(key)
            assert not _zoomed(page, selector)

        for _ in range(2):  # the spot check (fig1) rejected with a note, the unsure panel (fig2) kept
            shown = page.inner_text("#figure-id")
            if shown == "fig2":
                assert HOSTILE_CAPTION in page.inner_text("#caption")  # the markup as text
                assert page.locator("#caption b, #caption script").count() == 0
            else:
                page.keyboard.press("n")
                page.keyboard.type("a chart of nothing")
                page.keyboard.press("Escape")
            with page.expect_navigation():
                page.keyboard.press("k" if shown == "fig2" else "r")
            page.reload()
        assert page.locator("#done").is_visible() and "You: 2 / 2" in page.inner_text("#mine")
        browser.close()
    assert problems == []
    live = {figure: json.loads(detail or "{}") for _, figure, detail, alive in _answers() if alive}
    assert live == {
        "fig1": {"decision": "REJECT", "note": "a chart of nothing"},
        "fig2": {"decision": "KEEP", "note": ""},
    }

    # curate's next run reads the decisions from the store: nothing exported by hand
    SequentialRunner().run(
        create_curate(), stage_catalog(create_curate(), tmp_path, LOADER, {"params:curate": curated})
    )
    status = pd.read_parquet(tmp_path / "data" / "03_primary" / "curated.parquet").set_index("figure_id")[
        "status"
    ]
    assert status.to_dict() == {"fig1": "rejected", "fig2": "kept"}
    screen = json.loads((tmp_path / "data" / "08_reporting" / "metrics" / "curate_screen.json").read_text())
    assert screen["spot_check_false_positive_rate"] == 1.0 and screen["spot_check_flagged"] == 1


def _note(problems: list[str], message: ConsoleMessage) -> None:
    if message.type in ("error", "warning"):
        problems.append(message.text)
