"""The evaluation report rendered by headless Chromium: it renders, its images decode, and a failed
check is visible with its highlight. Skipped when /usr/bin/chromium is absent."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from lxml import html
from PIL import Image

from sciir.bootstrap import BootstrapConfig
from sciir.report import image_views, leaderboard_table, missing_images, render_report
from sciir.scoring import leaderboard, score_samples, score_table

CHROMIUM = Path("/usr/bin/chromium")
FAIL_HIGHLIGHT = (0xF9, 0xD6, 0xD5)  # `.fail` background in sciir/templates/report.html

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
)

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["s1"],
        "group": ["All_Three"],
        "setting": ["instruction_following"],
        "prompt": ["Draw ATP."],
    }
)
CHECKLISTS = pd.DataFrame(
    {
        "sample_id": ["s1", "s1"],
        "question_id": ["q1", "q2"],
        "question": ['Is "ATP" spelled exactly?', "Does A point to B?"],
        "expected_text": ["ATP", None],
    }
)
VERDICTS = pd.DataFrame(
    {
        "model": ["drawn", "drawn", "lost", "lost"],
        "sample_id": ["s1"] * 4,
        "question_id": ["q1", "q2"] * 2,
        "layer": [1, 2] * 2,
        "track": ["text", "process"] * 2,
        "verdict": ["yes", "no", None, None],
        "status": ["judged", "judged", "failed", "failed"],
        "evidence": ["ATP top left", "arrow from B to A", None, None],
        "reasoning": ["Spelled exactly.", "Direction reversed.", None, None],
        "reason": [
            None,
            None,
            "no image from model lost for sample s1: OOM",
            "no image from model lost for sample s1: OOM",
        ],
    }
)


def write_report(folder: Path) -> Path:
    """A report of one drawn image (one check passes, one fails) and one missing image."""
    scores = score_samples(VERDICTS, BENCHMARK, "exclude")
    board = leaderboard(score_table(scores, BootstrapConfig(n_boot=50)))
    unavailable = {"lost/s1": "no image from model lost for sample s1: OOM"}
    images = {"drawn/s1": lambda: Image.new("RGB", (640, 480), "lightsteelblue")}
    views = image_views(VERDICTS, CHECKLISTS, scores, BENCHMARK, images, unavailable, thumbnail_px=200)
    page = render_report(
        [leaderboard_table("Leaderboard", board)],
        views,
        {"judge": "scripted"},
        [],
        missing_images(unavailable),
    )
    path = folder / "report.html"
    path.write_text(page)
    return path


def chromium(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium offline with a throwaway profile."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={folder / 'profile'}",
    ]
    return subprocess.run(
        [str(CHROMIUM), *flags, *args], capture_output=True, text=True, timeout=120, check=True, cwd=folder
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("chromium")
    report = write_report(folder)
    dom = chromium(folder, "--dump-dom", report.as_uri()).stdout
    screenshot = folder / "report.png"
    # A window far taller than the page (about 1,200 px here), so the failed row is on the screenshot
    # whatever the fonts of the machine make of the layout above it.
    chromium(
        folder, f"--screenshot={screenshot}", "--window-size=1200,4000", "--hide-scrollbars", report.as_uri()
    )
    return {"dom": html.fromstring(dom), "screenshot": screenshot}


def test_report_renders(rendered):
    doc = rendered["dom"]
    assert doc.xpath("//h1")[0].text_content() == "SciIR-Bench evaluation report"
    assert doc.xpath('//section[@id="drawn/s1"]') and doc.xpath('//section[@id="lost/s1"]')


def test_images_are_decoded_by_the_browser(rendered):
    images = rendered["dom"].xpath("//img[@class='generated']")
    assert len(images) == 1
    assert images[0].get("data-loaded") == "true"  # set by the page's own script once decoded
    assert images[0].get("data-natural-width") == "200"  # the 640 px image scaled to the 200 px thumbnail


def test_failed_check_is_in_the_dom_and_visibly_highlighted(rendered):
    failed = rendered["dom"].xpath(
        '//section[@id="drawn/s1"]//tr[contains(concat(" ", @class, " "), " fail ")]'
    )
    assert [row.get("data-question-id") for row in failed] == ["q2"]
    assert "arrow from B to A" in failed[0].text_content()
    screenshot = Image.open(io.BytesIO(rendered["screenshot"].read_bytes())).convert("RGB")
    highlighted = sum(
        count for count, colour in screenshot.getcolors(maxcolors=1 << 20) if colour == FAIL_HIGHLIGHT
    )
    # The two fail badges paint about 2,300 px of that colour; the failed check's row about 13,000 more.
    assert highlighted > 8000
