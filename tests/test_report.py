"""The HTML report: failed checks highlighted, images embedded, intervals, heatmap, missing images explained."""

from __future__ import annotations

import base64
import io

import pandas as pd
from lxml import html
from PIL import Image

from sciir.bootstrap import BootstrapConfig
from sciir.report import (
    coverage_table,
    heat_colour,
    heatmap,
    image_views,
    interval_text,
    leaderboard_table,
    missing_images,
    render_report,
)
from sciir.scoring import leaderboard, score_samples, score_table

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["s1"],
        "group": ["All_Three"],
        "setting": ["instruction_following"],
        "prompt": ["Draw <ATP>."],
        "tracks": ['["entity", "process", "law"]'],  # labelled entity, but no entity question: a defect
    }
)
CHECKLISTS = pd.DataFrame(
    {
        "sample_id": ["s1", "s1", "s1"],
        "question_id": ["q1", "q2", "q3"],
        "question": ['Is "ATP" spelled exactly?', "Does A point to B?", "Is the law respected?"],
        "expected_text": ["ATP", None, None],
        "kind": ["text", "relation", "law"],
        "polarity": ["positive", "negative", "positive"],
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


UNAVAILABLE = {"missing/s1": "no image from model missing for sample s1: OOM"}


def render() -> html.HtmlElement:
    scores = score_samples(VERDICTS, BENCHMARK, "exclude")
    table = score_table(scores, BootstrapConfig(n_boot=50))
    board = leaderboard(table)
    images = {"drawn/s1": lambda: Image.new("RGB", (1024, 512), "white")}
    views = image_views(VERDICTS, CHECKLISTS, scores, BENCHMARK, images, UNAVAILABLE, thumbnail_px=256)
    page = render_report(
        [leaderboard_table("Leaderboard", board), coverage_table("Coverage", board)],
        views,
        {"judge template": "t1"},
        heatmaps=[heatmap("Per group", table, "group")],
        missing=missing_images(UNAVAILABLE),
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


def test_interval_text():
    assert interval_text(0.8333, 0.7083, 0.9583) == "0.833 [0.708, 0.958]"
    assert interval_text(float("nan"), float("nan"), float("nan")) == "n/a"
    assert interval_text(0.5, float("nan"), float("nan")) == "0.500"


def test_leaderboard_shows_intervals_and_coverage_per_track():
    doc = render()
    tables = doc.xpath("//table[@class='summary']")
    header = [cell.text_content() for cell in tables[0].xpath(".//th")]
    assert header == [
        "model", "final", "text", "entity", "process", "law", "coverage", "role", "n_samples", "checklist_defects"
    ]  # fmt: skip
    drawn = [cell.text_content() for cell in tables[0].xpath(".//tr[td[1]='drawn']/td")]
    assert drawn[1:4] == ["0.000 [0.000, 0.000] n=1", "1.000 [1.000, 1.000] n=1", "n/a n=0"]
    missing = [cell.text_content() for cell in tables[0].xpath(".//tr[td[1]='missing']/td")]
    assert missing[1] == "n/a n=0"
    coverage = [cell.text_content() for cell in tables[1].xpath(".//tr[td[1]='drawn']/td")]
    assert coverage == ["drawn", "0.667", "1.000", "n/a", "1.000", "0.000"]


def test_group_heatmap_colours_cells_by_score():
    cells = render().xpath("//table[@class='heatmap']//td[@class='cell']")
    assert [cell.text_content() for cell in cells] == ["0.000", "n/a"]  # drawn, then missing
    assert (
        cells[0].get("style") == f"background: {heat_colour(0.0)}"
        and cells[0].get("title") == "0.000 [0.000, 0.000]"
    )
    assert (
        heat_colour(0.0) == "#f9c8c8"
        and heat_colour(1.0) == "#c8f0c8"
        and heat_colour(float("nan")) == "#eeeeee"
    )


def test_missing_images_listed_per_model_with_reasons():
    entry = render().xpath('//li[@id="missing-missing"]')[0]
    assert (
        "1 missing" in entry.text_content() and "s1" in entry.text_content() and "OOM" in entry.text_content()
    )


def test_images_are_marked_once_decoded_by_the_page_script():
    doc = render()
    assert doc.xpath("//img[@class='generated']")
    script = doc.xpath("//script")[0].text_content()
    assert 'querySelectorAll("img.generated")' in script and "dataset.loaded" in script


def test_a_labelled_track_without_questions_is_shown_as_a_checklist_defect():
    badges = [
        badge.text_content()
        for badge in render().xpath('//section[@id="drawn/s1"]//span[contains(@class, "badge")]')
    ]
    assert "entity: unjudged (no questions (checklist defect))" in badges
    assert "final: fail (a labelled track has no questions)" in badges  # the process "no" fails it anyway
    assert "text: pass" in badges


def test_each_check_says_what_it_checks_from_its_structured_fields():
    row = render().xpath('//section[@id="drawn/s1"]//tr[@data-question-id="q2"]/td')
    assert [cell.text_content() for cell in row[:3]] == ["q2", "process", "relation, negative"]
