"""Leakage control between the benchmark and the train split: a planted leak of each kind is caught by keys
read from the curated table and the pixels, never from sample ids or from how the split was made."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw

from sciir.images.payload import ImageFile
from sciir.selection.leakage import (
    LeakageError,
    LeakSources,
    assert_no_leakage,
    curated_hashes,
    find_leaks,
    image_hashes,
    source_figure,
    source_figures,
)


def _plot(seed: int) -> Image.Image:
    """A drawn figure of its own: boxes and lines placed by ``seed``."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (256, 256), "white")
    drawing = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.integers(0, 200, 2)
        drawing.rectangle((int(x), int(y), int(x) + 50, int(y) + 40), outline="black", width=3)
        drawing.line((int(x), int(y), *map(int, rng.integers(0, 256, 2))), fill="navy", width=2)
    return image


def _jpeg_copy(image: Image.Image, side: int) -> Image.Image:
    buffer = io.BytesIO()
    image.resize((side, side), Image.Resampling.BILINEAR).save(buffer, "JPEG", quality=75)
    return Image.open(io.BytesIO(buffer.getvalue()))


CURATED = pd.DataFrame(
    {
        "sample_id": ["bench-1", "bench-2", "train-1", "train-2", "train-3", "train-4", "orphan"],
        "doi": [
            "10.7554/eLife.1",
            "10.1/x",
            "HTTPS://DOI.ORG/10.7554/ELIFE.1",
            "10.2/y",
            "10.3/z",
            None,
            None,
        ],
        "url": [None, None, None, None, None, "https://example.org/a", None],
        "figure_id": ["fig2", "fig1", "fig2", "fig1", "fig1", "fig1", "fig1"],
    }
)


@pytest.fixture
def sources() -> LeakSources:
    images = {
        "bench-1": _plot(1),
        "bench-2": _plot(2),
        "train-1": _plot(3),  # another panel of bench-1's figure (the DOI written another way)
        "train-2": _jpeg_copy(_plot(2), 180),  # bench-2 again, smaller, as JPEG, in another article
        "train-3": _plot(4),
        "train-4": _plot(5),
    }
    return LeakSources(source_figures(CURATED), image_hashes(images, list(images)), max_distance=3)


def test_a_source_figure_is_its_article_and_figure_id_however_the_doi_is_written():
    assert source_figure("https://doi.org/10.7554/ELIFE.1", None, "fig2") == "10.7554/elife.1#fig2"
    assert source_figure("doi:10.7554/eLife.1", "https://x", "fig2") == "10.7554/elife.1#fig2"
    assert source_figure(None, "https://example.org/a", "fig1") == "https://example.org/a#fig1"
    assert source_figure(None, None, "fig1") is None and source_figure("10.1/x", None, None) is None


def test_each_planted_leak_is_found_with_its_reason(sources):
    train = ["train-1", "train-2", "train-3", "train-4", "orphan", "bench-2"]
    leaks = find_leaks(train, ["bench-1", "bench-2"], sources).set_index("sample_id")
    assert sorted(leaks.index) == ["bench-2", "train-1", "train-2"]
    assert leaks.loc["bench-2", "reason"] == "same sample"
    assert tuple(leaks.loc["train-1", ["reason", "benchmark_sample_id"]]) == ("same source figure", "bench-1")
    assert tuple(leaks.loc["train-2", ["reason", "benchmark_sample_id"]]) == (
        "near-duplicate image",
        "bench-2",
    )
    assert leaks.loc["train-2", "detail"].endswith("of 64 bits apart")


def test_the_check_refuses_a_split_with_a_leak_and_passes_a_clean_one(sources):
    with pytest.raises(
        LeakageError, match=r"2 train samples leak .*train-1 \(same source figure as bench-1\)"
    ):
        assert_no_leakage(["train-1", "train-2", "train-3"], ["bench-1", "bench-2"], sources)
    assert_no_leakage(["train-3", "train-4", "orphan"], ["bench-1", "bench-2"], sources)


def test_an_unreadable_image_is_left_out_of_the_pixel_comparison_with_a_warning(caplog):
    images = {"good": _plot(1), "bad": ImageFile.of_bytes(b"not an image", name="bad.png")}
    hashes = image_hashes(images, ["good", "bad", "absent"])
    assert list(hashes) == ["good"]
    assert "bad.png" in caplog.text


def test_curates_own_hashes_are_used_and_images_hashed_only_where_there_is_none():
    curated = pd.DataFrame({"sample_id": ["a", "b", "c"], "phash": ["00000000000000ff", None, ""]})
    known = curated_hashes(curated)
    assert known == {"a": 0xFF}
    unreadable = ImageFile.of_bytes(b"never read", name="a.png")  # a's hash is known: not opened
    hashes = image_hashes({"a": unreadable, "b": _plot(7)}, ["a", "b", "c"], known)
    assert hashes["a"] == 0xFF and set(hashes) == {"a", "b"}
    assert curated_hashes(curated.drop(columns="phash")) == {}
