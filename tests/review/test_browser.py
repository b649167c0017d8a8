"""The ratings page in a real browser (Debian's Chromium driven by Playwright) against the app on loopback: sign
in, answer with the keyboard, undo, zoom, reload, and the answer is in the store; the page's script and style
run under its Content-Security-Policy and a hostile prompt shows as text. Skipped without /usr/bin/chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Page, sync_playwright
from sqlalchemy import select

from sciir.review.models import Answer, Item, Rater
from sciir.review.store import open_store
from sciir.testing.browser_pages import LOADED_IMAGE_WIDTH
from sciir.testing.review_raters import ReviewServer

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
HOSTILE_PROMPT = '<script>alert("x")</script> & <b>bold</b> "quoted"'  # conftest's benchmark, sample s2

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
    ),
]


@pytest.fixture
def served(tmp_path: Path, images: Path, benchmark: Path) -> Iterator[tuple[ReviewServer, str]]:
    store = f"sqlite:///{tmp_path / 'review.sqlite'}"
    options = ["--store", store, "--images", str(images), "--benchmark", str(benchmark)]
    with ReviewServer(options, tmp_path / "server.log") as server:
        yield server, store


def _answers(store_url: str) -> list[tuple[str, str, int | None, bool]]:
    store = open_store(store_url)
    with store.reading() as session:
        rows = session.execute(
            select(Rater.name, Item.public_id, Answer.score, Answer.undone_at.is_(None))
            .join(Item, Item.id == Answer.item_id)
            .join(Rater, Rater.id == Answer.rater_id)
            .order_by(Answer.id)
        ).all()
    store.close()
    return [tuple(row) for row in rows]  # type: ignore[misc]


def _item(page: Page) -> str:
    return page.locator('#answer input[name="item"]').get_attribute("value") or ""


def test_rate_with_the_keyboard_undo_reload_and_the_answer_is_stored(
    served: tuple[ReviewServer, str],
) -> None:
    server, store = served
    problems: list[str] = []
    seen_hostile = False
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        page.on("console", lambda message: _note(problems, message))
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(f"{server.url}/ratings")
        assert page.url.endswith("/sign-in")
        page.fill('input[name="name"]', "ann")
        page.click('button[type="submit"]')
        page.click("#ratings-link")
        page.wait_for_selector("html[data-keys=ready]")  # the keyboard script has run
        first = _item(page)
        assert page.locator("#image").evaluate(LOADED_IMAGE_WIDTH) == 40  # decoded, served by its id

        with page.expect_navigation():
            page.keyboard.press("4")
        assert _item(page) != first and "You: 1 / 6" in page.inner_text("#mine")
        assert _answers(store) == [("ann", first, 4, True)]

        with page.expect_navigation():
            page.keyboard.press("u")
        assert _item(page) == first and "You: 0 / 6" in page.inner_text("#mine")
        assert _answers(store) == [("ann", first, 4, False)]

        page.keyboard.press("z")
        assert "zoomed" in (page.locator("#figure").get_attribute("class") or "")
        page.keyboard.press("z")
        assert "zoomed" not in (page.locator("#figure").get_attribute("class") or "")

        with page.expect_navigation():
            page.keyboard.press("2")
        page.reload()
        assert "You: 1 / 6" in page.inner_text("#mine")
        assert _answers(store) == [("ann", first, 4, False), ("ann", first, 2, True)]

        for _ in range(5):  # the rest, until the hostile prompt has been shown and the queue is done
            if HOSTILE_PROMPT in page.inner_text("#prompt"):
                assert page.locator("#prompt b").count() == 0  # shown as text, not markup
                seen_hostile = True
            with page.expect_navigation():
                page.keyboard.press("3")
        assert seen_hostile and page.locator("#done").is_visible()
        assert page.locator("#alpha").inner_text().startswith("Krippendorff's alpha (interval): not yet")
        browser.close()
    assert problems == []  # no script error and nothing refused by the page's Content-Security-Policy
    assert len(_answers(store)) == 7


def _note(problems: list[str], message: ConsoleMessage) -> None:
    if message.type in ("error", "warning"):
        problems.append(message.text)
