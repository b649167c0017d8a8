"""The HTML report: a small summary page (intervals, heatmap, the plots beside their tables, missing
images, links to the models) and one page per model (links back to the summary and the plots, thumbnail
files loaded lazily, failed checks highlighted)."""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import replace
from pathlib import Path, PurePosixPath
from urllib.parse import urldefrag

import pandas as pd
import pytest
import yaml
from lxml import html
from PIL import Image

from sciir.evaluation.plots import PNG_SAVE_ARGS, plot_group_heatmap
from sciir.evaluation.report import (
    ReportFolder,
    coverage_table,
    heat_colour,
    heatmap,
    interval_text,
    leaderboard_table,
    missing_images,
    render_report,
)
from sciir.evaluation.report_and_plots import report_plots
from sciir.evaluation.report_views import ImageViews, image_views, model_page_path
from sciir.evaluation.scoring import leaderboard, score_samples, score_table
from sciir.evaluation.thumbnails import thumbnail_path
from sciir.images.payload import encode
from sciir.stats.bootstrap import BootstrapConfig

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


REPO = Path(__file__).resolve().parents[2]
UNAVAILABLE = {"missing/s1": "no image from model missing for sample s1: OOM"}


def drawn_image() -> Image.Image:
    return Image.new("RGB", (1024, 512), "white")


def render_folder(images: dict | None = None) -> ReportFolder:
    scores = score_samples(VERDICTS, BENCHMARK, "exclude")
    table = score_table(scores, BootstrapConfig(n_boot=50))
    board = leaderboard(table)
    images = {"drawn/s1": drawn_image} if images is None else images
    views = image_views(VERDICTS, CHECKLISTS, scores, BENCHMARK, images, UNAVAILABLE, thumbnail_px=256)
    track_bars, group_heatmap = report_plots(board, table, "sciir_veto")
    return render_report(
        [
            replace(leaderboard_table("Leaderboard", board), plot=track_bars),
            coverage_table("Coverage", board),
            replace(coverage_table("Per group", board), plot=group_heatmap),
        ],
        views,
        {"judge template": "t1"},
        heatmaps=[heatmap("Per group", table, "group")],
        missing=missing_images(UNAVAILABLE),
    )


def render(page: str = "index.html") -> html.HtmlElement:
    """One page of the report: the summary by default, or ``models/<model>.html``."""
    return html.fromstring(render_folder().pages[page])


def test_the_report_is_a_summary_and_one_page_per_model():
    folder = render_folder()
    assert list(folder.pages) == ["index.html", "models/drawn.html", "models/missing.html"]
    assert list(folder.plots) == ["plots/track_pass_rates.png", "plots/group_heatmap.png"]


def test_a_model_page_is_rendered_from_its_own_views_when_it_is_read(monkeypatch):
    # The summary's counts build each model's views once; a model page builds only its own model's again,
    # when the folder dataset reads it to write it, so no more than one model's views exist at a time.
    built: list[str] = []
    of_model = ImageViews.of_model

    def recording(self: ImageViews, model: str) -> list:
        built.append(model)
        return of_model(self, model)

    monkeypatch.setattr(ImageViews, "of_model", recording)
    folder = render_folder()
    assert built == ["drawn", "missing"]
    page = folder.pages["models/missing.html"]
    assert built == ["drawn", "missing", "missing"]
    assert "no image from model missing for sample s1: OOM" in page
    assert folder.pages["models/missing.html"] == page  # read again, rendered again, the same text


def folder_file(folder: ReportFolder, page: str, src: str) -> bytes:
    """The bytes of the report file that ``src``, written in ``page``, points to; fails when there is none."""
    path = PurePosixPath(page).parent.joinpath(src).as_posix()
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            assert parts, f"{src} in {page} climbs out of the report folder"
            parts.pop()
        elif part != ".":
            parts.append(part)
    relative = "/".join(parts)
    files = {**folder.plots, **{name: make() for name, make in folder.thumbnails.items()}}
    assert relative in files, f"{src} in {page} is no file of the report"
    return files[relative]


@pytest.mark.parametrize("page", ["index.html", "models/drawn.html", "models/missing.html"])
def test_every_image_of_a_page_is_a_png_file_of_the_folder_that_decodes(page):
    folder = render_folder()
    for img in html.fromstring(folder.pages[page]).xpath("//img"):
        assert img.get("alt"), f"an image of {page} has no alt text"
        picture = Image.open(io.BytesIO(folder_file(folder, page, img.get("src"))))
        picture.load()  # decodes every pixel: a truncated or broken file fails here
        assert picture.format == "PNG" and min(picture.size) > 0


def test_the_summary_shows_each_plot_beside_its_table():
    folder = render_folder()
    doc = html.fromstring(folder.pages["index.html"])
    beside = {
        box.xpath("preceding-sibling::h2[1]")[0].text_content(): box.xpath(".//figure/img/@src")
        for box in doc.xpath("//div[@class='beside'][table[@class='summary']]")
    }
    assert beside == {
        "Leaderboard": ["plots/track_pass_rates.png"],
        "Coverage": [],
        "Per group": ["plots/group_heatmap.png"],
    }
    heatmap_png = Image.open(io.BytesIO(folder.plots["plots/group_heatmap.png"]))
    assert heatmap_png.size[0] > 300 and heatmap_png.size[1] > 150  # a drawn figure, not a placeholder


def test_each_model_page_links_back_to_the_summary_and_its_plots():
    folder = render_folder()
    summary = html.fromstring(folder.pages["index.html"])
    for page in ("models/drawn.html", "models/missing.html"):
        doc = html.fromstring(folder.pages[page])
        assert doc.xpath("//a[@class='summary-page']/@href") == ["../index.html"]
        links = [urldefrag(href) for href in doc.xpath("//a[@class='plot-link']/@href")]
        assert [target for target, _ in links] == ["../index.html"] * 2
        shown = [summary.xpath(f'//figure[@id="{anchor}"]/img/@src') for _, anchor in links]
        assert shown == [["plots/track_pass_rates.png"], ["plots/group_heatmap.png"]]


def test_the_report_draws_its_plots_as_the_catalog_saves_the_run_s_own():
    for name in ("catalog.yml", "catalog_evaluate.yml"):
        entries = yaml.safe_load((REPO / "conf" / "base" / name).read_text())
        for entry in ("evaluate_plot_tracks", "evaluate_plot_groups"):
            if entry in entries:
                assert entries[entry]["dataset"]["save_args"] == PNG_SAVE_ARGS, entry


def test_failed_check_is_highlighted_with_evidence():
    doc = render("models/drawn.html")
    failed = doc.xpath('//section[@id="drawn/s1"]//tr[contains(concat(" ", @class, " "), " fail ")]')
    assert len(failed) == 1
    assert failed[0].get("data-question-id") == "q2"
    assert "arrow from B to A" in failed[0].text_content()
    passed = doc.xpath('//tr[@data-question-id="q1" and contains(@class, "pass")]')
    assert len(passed) == 1


def test_abstention_shown_as_unjudged():
    row = render("models/drawn.html").xpath('//section[@id="drawn/s1"]//tr[@data-question-id="q3"]')[0]
    assert "unjudged" in row.get("class") and "fail" not in row.get("class").split()
    assert "judge abstained on question q3" in row.text_content()


def test_image_is_a_lazily_loaded_thumbnail_file_named_by_its_content():
    site = render_folder()
    images = html.fromstring(site.pages["models/drawn.html"]).xpath('//section[@id="drawn/s1"]//img')
    assert len(images) == 1 and images[0].get("loading") == "lazy"
    source_sha256 = hashlib.sha256(encode(drawn_image(), "PNG")).hexdigest()
    path = thumbnail_path(source_sha256, 256)
    assert images[0].get("src") == f"../{path}"  # relative to models/, so it works from a copied folder
    assert list(site.thumbnails) == [path]
    thumbnail = Image.open(io.BytesIO(site.thumbnails[path]()))
    assert thumbnail.format == "PNG" and thumbnail.size == (256, 128)


def test_another_image_gets_another_thumbnail():
    black = render_folder({"drawn/s1": lambda: Image.new("RGB", (1024, 512), "black")})
    assert set(black.thumbnails).isdisjoint(render_folder().thumbnails)


def test_the_summary_links_each_model_page_with_its_counts_and_shows_no_thumbnail():
    doc = render()
    assert doc.xpath("//img/@class") == ["plot", "plot"] and not doc.xpath("//table[@class='checklist']")
    rows = [
        [cell.text_content() for cell in row.xpath("td")]
        for row in doc.xpath("//table[@class='models']//tr[td]")
    ]
    assert rows == [["drawn", "1", "1", "1", "1"], ["missing", "1", "0", "0", "3"]]
    links = [link.get("href") for link in doc.xpath("//a[@class='model-page']")]
    assert links == ["models/drawn.html", "models/missing.html"]
    back = render("models/drawn.html").xpath("//a[@class='summary-page']")[0]
    assert back.get("href") == "../index.html"


@pytest.mark.slow
def test_missing_image_explained_and_prompt_escaped():
    page = render("models/missing.html")
    missing = page.xpath('//section[@id="missing/s1"]')[0]
    assert not missing.xpath(".//img")
    assert "OOM" in missing.xpath('.//p[@class="missing"]')[0].text_content()
    drawn = render("models/drawn.html")
    assert "Draw <ATP>." in drawn.xpath('//section[@id="drawn/s1"]//details/p')[0].text_content()
    leaderboard_cells = [cell.text_content() for cell in render().xpath("//table[@class='summary']//td")]
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


def test_a_run_with_no_group_scored_says_so_in_its_heatmap_without_a_warning():
    empty = pd.DataFrame({"model": pd.Series(dtype=str)})  # breakdown_table of a run that scored no group
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warned of singular limits on an empty image
        figure = plot_group_heatmap(empty, "Final pass rate per group")
    axes = figure.axes[0]
    assert not axes.images and [text.get_text() for text in axes.texts] == ["nothing scored per group"]
    assert axes.get_title() == "Final pass rate per group"


def test_missing_images_listed_per_model_with_reasons():
    entry = render().xpath('//li[@id="missing-missing"]')[0]
    assert (
        "1 missing" in entry.text_content() and "s1" in entry.text_content() and "OOM" in entry.text_content()
    )
    assert entry.xpath(".//a")[0].get("href") == "models/missing.html#missing/s1"  # the sample's section


def test_model_pages_have_plain_distinct_file_names():
    assert model_page_path("sd-1.5_lora") == "models/sd-1.5_lora.html"
    unusual = [model_page_path(name) for name in ("a b", "a_b", "../up", ".hidden", "")]
    assert len(set(unusual)) == 5 and unusual[1] == "models/a_b.html"
    for path in unusual:
        name = path.removeprefix("models/")
        assert "/" not in name and not name.startswith(".") and name.endswith(".html")


@pytest.mark.parametrize("page", ["index.html", "models/drawn.html"])
def test_images_are_marked_once_decoded_by_the_page_script(page):
    doc = render(page)
    assert doc.xpath("//img")
    script = doc.xpath("//script")[0].text_content()
    assert 'querySelectorAll("img")' in script and "dataset.loaded" in script


def test_a_labelled_track_without_questions_is_shown_as_a_checklist_defect():
    badges = [
        badge.text_content()
        for badge in render("models/drawn.html").xpath(
            '//section[@id="drawn/s1"]//span[contains(@class, "badge")]'
        )
    ]
    assert "entity: unjudged (no questions (checklist defect))" in badges
    assert "final: fail (a labelled track has no questions)" in badges  # the process "no" fails it anyway
    assert "text: pass" in badges


def test_each_check_says_what_it_checks_from_its_structured_fields():
    row = render("models/drawn.html").xpath('//section[@id="drawn/s1"]//tr[@data-question-id="q2"]/td')
    assert [cell.text_content() for cell in row[:3]] == ["q2", "process", "relation, negative"]
