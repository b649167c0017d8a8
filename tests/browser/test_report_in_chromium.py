"""The evaluation report folder rendered by headless Chromium from disk: the summary page renders, shows
its plots (each image file decoded by the browser) and links the model pages; a model page links back to
the summary and to each plot, its lazily loaded thumbnail file decodes, and its failed check is visible
with its highlight. Skipped when /usr/bin/chromium is absent."""

from __future__ import annotations

import io
import subprocess
from dataclasses import replace
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pandas as pd
import pytest
from lxml import html
from PIL import Image

from sciir.catalog.report_dataset import ReportFolderDataset
from sciir.evaluation.report import breakdown_intervals, leaderboard_table, missing_images, render_report
from sciir.evaluation.report_and_plots import report_plots
from sciir.evaluation.report_views import image_views
from sciir.evaluation.scoring import leaderboard, score_samples, score_table
from sciir.stats.bootstrap import BootstrapConfig

CHROMIUM = Path("/usr/bin/chromium")
FAIL_HIGHLIGHT = (0xF9, 0xD6, 0xD5)  # `.fail` background in sciir/evaluation/templates/report_base.html

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="headless Chromium (/usr/bin/chromium) is not installed"
    ),
]

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
    """A report folder of one drawn image (one check passes, one fails) and one missing image, with the
    track plot beside the leaderboard and the group heatmap beside the groups' table, written by the
    catalog's dataset; the folder."""
    scores = score_samples(VERDICTS, BENCHMARK, "exclude")
    table = score_table(scores, BootstrapConfig(n_boot=50))
    board = leaderboard(table)
    unavailable = {"lost/s1": "no image from model lost for sample s1: OOM"}
    images = {"drawn/s1": lambda: Image.new("RGB", (640, 480), "lightsteelblue")}
    views = image_views(VERDICTS, CHECKLISTS, scores, BENCHMARK, images, unavailable, thumbnail_px=200)
    track_bars, group_heatmap = report_plots(board, table, "sciir_veto")
    report = render_report(
        [
            replace(leaderboard_table("Leaderboard", board), plot=track_bars),
            replace(breakdown_intervals("Per group", table, "group"), plot=group_heatmap),
        ],
        views,
        {"judge": "scripted"},
        [],
        missing_images(unavailable),
    )
    ReportFolderDataset(path=str(folder / "report")).save(report)
    return folder / "report"


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
    summary, drawn = report / "index.html", report / "models" / "drawn.html"
    # A page is opened as a file, as a user opens the folder: its links and thumbnail are relative paths.
    pages = {page: chromium(folder, "--dump-dom", page.as_uri()).stdout for page in (summary, drawn)}
    screenshot = folder / "drawn.png"
    # A window far taller than the page (about 1,200 px here), so the failed row is on the screenshot
    # whatever the fonts of the machine make of the layout above it.
    chromium(
        folder, f"--screenshot={screenshot}", "--window-size=1200,4000", "--hide-scrollbars", drawn.as_uri()
    )
    return {
        "summary": html.fromstring(pages[summary], base_url=summary.as_uri()),
        "drawn": html.fromstring(pages[drawn], base_url=drawn.as_uri()),
        "summary_path": summary,
        "screenshot": screenshot,
    }


def on_disk(doc: html.HtmlElement, href: str) -> Path:
    """The file a relative link of a page opened from disk points to."""
    return Path(urlparse(urljoin(doc.base_url, href)).path)


def test_summary_renders_and_links_the_model_pages(rendered):
    doc = rendered["summary"]
    assert doc.xpath("//h1")[0].text_content() == "SciIR-Bench evaluation report"
    assert not doc.xpath("//section") and not doc.xpath("//img[@class='generated']")  # on model pages
    links = [on_disk(doc, href) for href in doc.xpath("//a[@class='model-page']/@href")]
    assert [link.name for link in links] == ["drawn.html", "lost.html"] and all(
        link.is_file() for link in links
    )


def test_summary_shows_its_plots_decoded_by_the_browser(rendered):
    images = rendered["summary"].xpath("//figure[@class='plot']/img")
    assert [on_disk(rendered["summary"], img.get("src")).name for img in images] == [
        "track_pass_rates.png",
        "group_heatmap.png",
    ]
    for img in images:  # marked by the page's own script once the browser has decoded the file
        assert img.get("data-loaded") == "true" and int(img.get("data-natural-width")) > 300, img.get("src")
    every = rendered["summary"].xpath("//img")
    assert len(every) == 2 and all(img.get("data-loaded") == "true" for img in every)


def test_model_page_renders_with_links_back_to_the_summary_and_its_plots(rendered):
    doc = rendered["drawn"]
    assert doc.xpath("//h1")[0].text_content() == "Model drawn" and doc.xpath('//section[@id="drawn/s1"]')
    back = on_disk(doc, doc.xpath("//a[@class='summary-page']/@href")[0])
    assert back == rendered["summary_path"] and back.is_file()
    links = [urlparse(urljoin(doc.base_url, href)) for href in doc.xpath("//a[@class='plot-link']/@href")]
    assert [Path(link.path) for link in links] == [rendered["summary_path"]] * 2
    shown = [rendered["summary"].xpath(f'//figure[@id="{link.fragment}"]/img/@src') for link in links]
    assert shown == [["plots/track_pass_rates.png"], ["plots/group_heatmap.png"]]


def test_thumbnail_file_is_loaded_lazily_and_decoded_by_the_browser(rendered):
    images = rendered["drawn"].xpath("//img[@class='generated']")
    assert len(images) == 1 and images[0].get("loading") == "lazy"
    assert images[0].get("src").startswith("../thumbnails/")  # a file beside the pages, not a data URI
    assert images[0].get("data-loaded") == "true"  # set by the page's own script once decoded
    assert images[0].get("data-natural-width") == "200"  # the 640 px image scaled to the 200 px thumbnail


def test_failed_check_is_in_the_dom_and_visibly_highlighted(rendered):
    failed = rendered["drawn"].xpath(
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
