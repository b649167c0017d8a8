"""The whole embedded sample: counts, truth against images, captions, negative cases, OCR, determinism."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import Counter
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lxml import etree
from PIL import Image, ImageOps

from sciir.sample import write_embedded_sample
from sciir.sample.build import _remove_surplus_copies, sample_plan
from sciir.sample.jats_writer import XLINK_NS
from sciir.sample.panel_kinds import NATIVE_TRACKS
from sciir.sample.plan import plan_sample
from sciir.sample.prose import STATED_EDGE, fill, in_sentence
from sciir.sample.tracks import mentions_track
from sciir.tasks.annotation import TRACKS

SEED = 7
GROUPS = [{"entity", "process", "law"}, {"entity", "law"}, {"law", "process"}, {"entity", "process"}]
MIN_GUTTER = 24
COMBINED_KINDS = tuple(kind for kind, tracks in NATIVE_TRACKS.items() if len(tracks) >= 2)


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("sample")
    write_embedded_sample(folder, seed=SEED)
    return folder


@pytest.fixture(scope="module")
def manifest(sample_dir: Path) -> dict[str, Any]:
    return json.loads((sample_dir / "MANIFEST.json").read_text())


def _kept(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    return [figure for figure in manifest["figures"] if figure["expected"] == "kept"]


def _truth(sample_dir: Path, figure: dict[str, Any]) -> dict[str, Any]:
    return json.loads((sample_dir / figure["truth"]).read_text())


def _article(sample_dir: Path, article_id: str) -> etree._Element:
    return etree.parse(str(sample_dir / article_id / "article.xml")).getroot()


def _caption(sample_dir: Path, figure: dict[str, Any]) -> str:
    fig = _article(sample_dir, figure["article_id"]).find(f".//fig[@id='{figure['figure_id']}']")
    return fig.findtext("caption/p")


def _longest_white_run(blank: np.ndarray) -> int:
    """Longest run of True in a 1-D boolean array."""
    padded = np.concatenate([[False], blank, [False]]).astype(int)
    edges = np.flatnonzero(np.diff(padded))
    return int((edges[1::2] - edges[::2]).max(initial=0))


@pytest.mark.slow
def test_manifest_is_returned_and_written(sample_dir: Path, manifest: dict[str, Any]) -> None:
    again = write_embedded_sample(sample_dir, seed=SEED)
    assert again == manifest and manifest["seed"] == SEED


def test_counts_kinds_and_composites(manifest: dict[str, Any], sample_dir: Path) -> None:
    kept = _kept(manifest)
    assert len(kept) >= 24
    assert len({figure["article_id"] for figure in kept}) >= 8
    panel_kinds = Counter(panel["kind"] for figure in kept for panel in _truth(sample_dir, figure)["panels"])
    assert set(panel_kinds) == set(NATIVE_TRACKS)
    composites = [figure for figure in kept if figure["kind"] == "composite"]
    assert len(composites) >= 5
    assert all(2 <= figure["n_panels"] <= 4 for figure in composites)


def test_every_track_group_has_at_least_four_figures(manifest: dict[str, Any]) -> None:
    kept = _kept(manifest)
    assert all(len(figure["tracks"]) >= 2 for figure in kept)
    for group in GROUPS:
        assert sum(set(figure["tracks"]) == group for figure in kept) >= 4, group


def test_every_group_has_panels_that_draw_its_tracks_and_single_track_panels_remain(
    manifest: dict[str, Any], sample_dir: Path
) -> None:
    """bench_select groups by the tracks a panel's drawing shows (SciIR C.2): each group needs such panels."""
    panels = [panel for figure in _kept(manifest) for panel in _truth(sample_dir, figure)["panels"]]
    assert all(set(panel["shows"]) == set(NATIVE_TRACKS[panel["kind"]]) for panel in panels)
    assert all(views for panel in panels for views in panel["shows"].values())
    drawn = Counter(frozenset(panel["shows"]) for panel in panels)
    for group in GROUPS:
        assert drawn[frozenset(group)] >= 4, group
    assert sum(count for tracks, count in drawn.items() if len(tracks) == 1) >= 20


def test_truth_matches_image_geometry(manifest: dict[str, Any], sample_dir: Path) -> None:
    for figure in _kept(manifest):
        truth = _truth(sample_dir, figure)
        image = Image.open(sample_dir / figure["file"])
        assert image.format == "PNG" and 500 <= image.width <= 1800, figure["file"]
        assert truth["figure_id"] == figure["figure_id"] and truth["kind"] == figure["kind"]
        panels = truth["panels"]
        assert [panel["panel_index"] for panel in panels] == list(range(figure["n_panels"]))
        grey = np.asarray(image.convert("L"))
        outside = np.ones(grey.shape, dtype=bool)
        for panel in panels:
            x0, y0, x1, y1 = panel["bbox"]
            assert 0 <= x0 < x1 <= image.width and 0 <= y0 < y1 <= image.height, figure["file"]
            width, height = x1 - x0, y1 - y0
            assert min(width, height) >= 200 and 0.4 <= width / height <= 2.5, figure["file"]
            outside[y0:y1, x0:x1] = False
            assert set(panel["required_text"]) <= set(panel["labels"])
        assert (grey[outside] == 255).all(), f"{figure['file']}: ink outside the panel boxes"


def test_composite_panels_are_apart_and_in_reading_order(manifest: dict[str, Any], sample_dir: Path) -> None:
    for figure in _kept(manifest):
        boxes = [panel["bbox"] for panel in _truth(sample_dir, figure)["panels"]]
        for first, second in combinations(boxes, 2):
            gap = max(second[0] - first[2], first[0] - second[2], second[1] - first[3], first[1] - second[3])
            assert gap >= MIN_GUTTER, figure["file"]
            same_row = first[1] < second[3] and second[1] < first[3]
            assert (same_row and second[0] >= first[2]) or second[1] >= first[3], figure["file"]


def test_no_panel_has_an_inner_white_band_as_wide_as_a_gutter(
    manifest: dict[str, Any], sample_dir: Path
) -> None:
    """Otherwise panel splitting would cut one panel in two."""
    for figure in _kept(manifest):
        ink = np.asarray(Image.open(sample_dir / figure["file"]).convert("L")) < 200
        for panel in _truth(sample_dir, figure)["panels"]:
            x0, y0, x1, y1 = panel["bbox"]
            region = ink[y0:y1, x0:x1]
            rows, columns = np.flatnonzero(region.any(axis=1)), np.flatnonzero(region.any(axis=0))
            drawn = region[rows[0] : rows[-1] + 1, columns[0] : columns[-1] + 1]
            longest = max(_longest_white_run(~drawn.any(axis=1)), _longest_white_run(~drawn.any(axis=0)))
            assert longest < MIN_GUTTER, f"{figure['file']} panel {panel['panel_index']}"
            # The truth box is tight: the drawing fills most of it.
            assert drawn.size / region.size >= 0.7, f"{figure['file']} panel {panel['panel_index']}"


def test_captions_carry_exactly_the_figure_tracks(manifest: dict[str, Any], sample_dir: Path) -> None:
    for figure in _kept(manifest):
        caption = _caption(sample_dir, figure)
        spoken = [track for track in TRACKS if mentions_track(caption, track)]
        assert sorted(spoken) == sorted(figure["tracks"]), f"{figure['file']}: {caption}"


def test_methods_name_every_drawing_and_narrate_workflows_in_varied_prose(
    manifest: dict[str, Any], sample_dir: Path
) -> None:
    edges, stated, phrasings = 0, 0, set()
    for figure in _kept(manifest):
        methods = _article(sample_dir, figure["article_id"]).findtext("body/sec[@sec-type='methods']/p")
        assert "leads to" not in methods
        for panel in _truth(sample_dir, figure)["panels"]:
            if not panel["relations"]:  # workflows, reactions and measurement stages are narrated
                assert all(label in methods for label in panel["required_text"]), panel["title"]
                continue
            assert in_sentence(panel["title"]) in methods
            for source, target in panel["relations"]:
                in_one_sentence = [t for t in STATED_EDGE if fill(t, source, target) in methods]
                edges, stated = edges + 1, stated + bool(in_one_sentence)
                phrasings.update(in_one_sentence)
    # Some edges are only implied across sentences or not written; those written vary in form.
    assert 0 < stated < edges and len(phrasings) >= 4


def test_kept_articles_carry_doi_licence_and_their_figures(
    manifest: dict[str, Any], sample_dir: Path
) -> None:
    for article in manifest["articles"]:
        if article["reason_kind"] == "malformed_xml":
            continue
        root = _article(sample_dir, article["article_id"])
        assert root.findtext(".//article-id[@pub-id-type='doi']") == article["doi"]
        assert re.fullmatch(r"10\.5555/sciir\.sample\.\d{3}", article["doi"])
        licence_url = root.find(".//permissions/license").get(f"{{{XLINK_NS}}}href")
        expected_url = {
            "CC BY 4.0": "https://creativecommons.org/licenses/by/4.0/",
            "CC BY-NC 4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
        }[article["licence"]]
        assert licence_url == expected_url
        hrefs = [graphic.get(f"{{{XLINK_NS}}}href") for graphic in root.iter("graphic")]
        listed = [
            figure["file"] for figure in manifest["figures"] if figure["article_id"] == article["article_id"]
        ]
        assert [f"{article['article_id']}/{href}" for href in hrefs] == listed
        assert all((sample_dir / path).is_file() for path in listed)


def test_negative_cases_are_planted_as_the_manifest_says(manifest: dict[str, Any], sample_dir: Path) -> None:
    articles = {article["reason_kind"]: article for article in manifest["articles"] if article["reason_kind"]}
    assert articles["licence"]["licence"] == "CC BY-NC 4.0" and articles["licence"]["expected"] == "rejected"
    with pytest.raises(etree.XMLSyntaxError):
        etree.parse(str(sample_dir / articles["malformed_xml"]["file"]))

    figures = {
        figure["reason_kind"]: figure for figure in manifest["figures"] if figure["reason_kind"] != "licence"
    }
    assert {"corrupt_image", "third_party", "too_small"} <= set(figures)
    assert all(figure["expected"] == "rejected" for figure in figures.values() if figure["reason_kind"])
    kept_articles = {
        article["article_id"] for article in manifest["articles"] if article["expected"] == "kept"
    }
    corrupt = figures["corrupt_image"]
    assert corrupt["article_id"] in kept_articles
    with pytest.raises(OSError):
        Image.open(sample_dir / corrupt["file"]).load()
    assert _caption(sample_dir, figures["third_party"]).endswith("Reproduced from [12] with permission.")
    assert Image.open(sample_dir / figures["too_small"]["file"]).size == (90, 90)
    non_commercial = [figure for figure in manifest["figures"] if figure["reason_kind"] == "licence"]
    assert non_commercial and all(
        figure["article_id"] == articles["licence"]["article_id"] for figure in non_commercial
    )


_CONFUSABLE = str.maketrans({"l": "1", "i": "1", "|": "1", "!": "1", "o": "0"})


def _normalise(text: str) -> str:
    """Lower case, glyphs Tesseract confuses folded together (l/i/1, o/0), punctuation dropped."""
    folded = text.lower().translate(_CONFUSABLE)
    return " ".join(re.sub(r"[^a-z0-9()%]+", " ", folded).split())


def _glyph_ink(image: Image.Image, max_glyph_px: int = 48) -> Image.Image:
    """Only ink shapes no bigger than a glyph: bonds, wires and axes are set aside before reading."""
    from scipy import ndimage

    ink = np.asarray(image.convert("L")) < 128
    labels, _ = ndimage.label(ink)
    kept = np.zeros_like(ink)
    for index, box in enumerate(ndimage.find_objects(labels), start=1):
        if box[0].stop - box[0].start <= max_glyph_px and box[1].stop - box[1].start <= max_glyph_px:
            kept[box] |= labels[box] == index
    return ImageOps.expand(Image.fromarray(np.where(kept, 0, 255).astype(np.uint8)), 30, fill=255)


def test_required_text_is_read_by_tesseract(manifest: dict[str, Any], sample_dir: Path) -> None:
    if shutil.which("tesseract") is None:
        pytest.skip("the tesseract binary is not installed")
    import pytesseract

    kept = _kept(manifest)
    chosen = [
        next(figure for figure in kept if figure["kind"] == kind)
        for kind in ("process", "molecule", "circuit", "plot", "composite", *COMBINED_KINDS)
    ]
    for figure in chosen:
        image = Image.open(sample_dir / figure["file"])
        for panel in _truth(sample_dir, figure)["panels"]:
            read = _normalise(
                pytesseract.image_to_string(_glyph_ink(image.crop(panel["bbox"])), config="--psm 11")
            )
            for text in panel["required_text"]:
                # Spacing around the symbols of an equation ("P V = constant") is read either way.
                expected = _normalise(text).replace(" ", "") if "=" in text else _normalise(text)
                found = read.replace(" ", "") if "=" in text else read
                assert expected in found, f"{figure['file']}: {text!r} not in {read!r}"


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.mark.slow
def test_same_seed_writes_identical_bytes_even_over_another_seed(sample_dir: Path, tmp_path: Path) -> None:
    write_embedded_sample(tmp_path, seed=SEED + 1)
    write_embedded_sample(tmp_path, seed=SEED)  # stale figures of the other seed must go
    assert _files(tmp_path) == _files(sample_dir)


def test_the_first_articles_are_the_whole_samples_own_files(sample_dir: Path, tmp_path: Path) -> None:
    first = write_embedded_sample(tmp_path, seed=SEED, first_articles=3)
    ids = [article.article_id for article in sample_plan(SEED)[:3]]
    assert [article["article_id"] for article in first["articles"]] == ids
    written = {name: data for name, data in _files(tmp_path).items() if name != "MANIFEST.json"}
    assert {name.split("/")[0] for name in written} == set(ids)
    whole = _files(sample_dir)
    assert all(whole[name] == data for name, data in written.items())  # the same bytes as in the whole sample


def test_another_seed_changes_the_choices() -> None:
    def choices(seed: int) -> list[list[str]]:
        return [
            [topic.title for figure in article.figures for topic in figure.topics]
            for article in plan_sample(random.Random(seed))
        ]

    assert choices(SEED) == choices(SEED)
    assert choices(SEED) != choices(SEED + 1)


@pytest.mark.slow
def test_copies_scale_the_sample_with_distinct_drawings_and_shrink_back(
    sample_dir: Path, manifest: dict[str, Any], tmp_path: Path
) -> None:
    scaled = write_embedded_sample(tmp_path, seed=SEED, copies=2, processes=2)
    assert scaled["copies"] == 2 and "copies" not in manifest
    assert len(scaled["articles"]) == 2 * len(manifest["articles"])
    assert len(scaled["figures"]) == 2 * len(manifest["figures"])
    first = len(manifest["articles"])
    assert scaled["articles"][:first] == manifest["articles"]  # the first copy is the sample itself
    second = scaled["articles"][first:]
    assert all(re.fullmatch(r"sample-0001-\d{3}", article["article_id"]) for article in second)
    assert len({article["doi"] for article in scaled["articles"]}) == len(scaled["articles"])
    drawn = [figure["file"] for figure in scaled["figures"] if figure["truth"]]  # not the fixed icon
    figures = {(tmp_path / file).read_bytes() for file in drawn if not file.startswith("sample-0001-")}
    copied = {(tmp_path / file).read_bytes() for file in drawn if file.startswith("sample-0001-")}
    assert len(copied) == len(drawn) // 2 and not copied & figures  # no two files the same
    for figure in scaled["figures"][len(manifest["figures"]) :]:  # boxes scaled with their figure
        if figure["truth"] and figure["reason_kind"] != "corrupt_image":
            width, height = Image.open(tmp_path / figure["file"]).size
            truth = json.loads((tmp_path / figure["truth"]).read_text())
            assert all(0 <= x0 < x1 <= width and 0 <= y0 < y1 <= height for x0, y0, x1, y1 in
                       (panel["bbox"] for panel in truth["panels"]))  # fmt: skip
    _remove_surplus_copies(tmp_path, 1)  # what writing one copy over two does after drawing it
    assert _files(tmp_path) == _files(sample_dir) | {
        "MANIFEST.json": (tmp_path / "MANIFEST.json").read_bytes()
    }
