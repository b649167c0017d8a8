"""The HTML report: failed checks highlighted, images embedded, missing images explained."""

from __future__ import annotations

import base64
import io

import pandas as pd
from lxml import html
from PIL import Image

from sciir.report import image_views, render_report, table_from_frame
from sciir.scoring import leaderboard, score_samples

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["s1"],
        "group": ["All_Three"],
        "setting": ["instruction_following"],
        "prompt": ["Draw <ATP>."],
    }
)
CHECKLISTS = pd.DataFrame(
    {
        "sample_id": ["s1", "s1", "s1"],
        "question_id": ["q1", "q2", "q3"],
        "question": ['Is "ATP" spelled exactly?', "Does A point to B?", "Is the law respected?"],
        "expected_text": ["ATP", None, None],
    }
)
VERDICTS = pd.DataFrame(
    {
        "model": ["drawn"] * 3 + ["missing"] * 3,
        "sample_id": ["s1"] * 6,
        "question_id": ["q1", "q2", "q3"] * 2,
        "layer": [1, 2, 2] * 2,
        "track": ["text", "process", "law"] * 2,
        "verdict": ["yes", "no", None, None, None, None],
        "status": ["judged", "judged", "abstained", "failed", "failed", "failed"],
        "evidence": ["ATP top left", "arrow from B to A", None, None, None, None],
        "reasoning": ["Spelled exactly.", "Direction reversed.", "Cannot tell.", None, None, None],
        "reason": [None, None, "judge abstained on question q3"]
        + ["no image from model missing for sample s1: OOM"] * 3,
    }
)


def render() -> html.HtmlElement:
    scores = score_samples(VERDICTS, BENCHMARK, "exclude")
    images = {"drawn/s1": lambda: Image.new("RGB", (1024, 512), "white")}
    unavailable = {"missing/s1": "no image from model missing for sample s1: OOM"}
    views = image_views(VERDICTS, CHECKLISTS, scores, BENCHMARK, images, unavailable, thumbnail_px=256)
    page = render_report(
        [table_from_frame("Leaderboard", leaderboard(scores))], views, {"judge template": "t1"}
    )
    return html.fromstring(page)


def test_failed_check_is_highlighted_with_evidence():
    doc = render()
    failed = doc.xpath('//section[@id="drawn/s1"]//tr[contains(concat(" ", @class, " "), " fail ")]')
    assert len(failed) == 1
    assert failed[0].get("data-question-id") == "q2"
    assert "arrow from B to A" in failed[0].text_content()
    passed = doc.xpath('//tr[@data-question-id="q1" and contains(@class, "pass")]')
    assert len(passed) == 1


def test_abstention_shown_as_unjudged():
    row = render().xpath('//section[@id="drawn/s1"]//tr[@data-question-id="q3"]')[0]
    assert "unjudged" in row.get("class") and "fail" not in row.get("class").split()
    assert "judge abstained on question q3" in row.text_content()


def test_image_embedded_as_downscaled_png():
    images = render().xpath('//section[@id="drawn/s1"]//img')
    assert len(images) == 1
    src = images[0].get("src")
    assert src.startswith("data:image/png;base64,")
    thumbnail = Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1])))
    assert thumbnail.format == "PNG" and thumbnail.size == (256, 128)


def test_missing_image_explained_and_prompt_escaped():
    doc = render()
    missing = doc.xpath('//section[@id="missing/s1"]')[0]
    assert not missing.xpath(".//img")
    assert "OOM" in missing.xpath('.//p[@class="missing"]')[0].text_content()
    assert "Draw <ATP>." in doc.xpath('//section[@id="drawn/s1"]//details/p')[0].text_content()
    leaderboard_cells = [cell.text_content() for cell in doc.xpath("//table[@class='summary']//td")]
    assert "drawn" in leaderboard_cells and "n/a" in leaderboard_cells
