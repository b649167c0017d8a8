"""Standardisation's libvips path (sciir.images.vips_resize) against the Pillow Lanczos it replaces: same geometry,
same padding colour, pixels within a fraction of a level on varied images; pyvips imported only when used."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from functools import partial

import numpy as np
import pyarrow
import pytest
from PIL import Image, ImageDraw, ImageFilter

from sciir.figures.standardisation import fitted_size, standardise
from sciir.images.edge_colour import border_pixels, padding_colour
from sciir.images.vips_resize import shrink_and_pad

SIZE, TOLERANCE, SHARE = 1024, 24, 0.55
# Mean |libvips - Pillow| per pixel and channel, in levels of 255: measured 0.01-0.26 on these images
# (0.4 after a 6x shrink of noise, where the box pre-shrinks split differently).
MAX_MEAN_DIFFERENCE = 0.5
# Share of values more than 2 levels apart: single pixels at sharp edges, where the two round and clip
# between their horizontal and vertical passes (measured at most 0.002; libvips' bicubic kernel gives
# 0.014-0.04 on the drawn figures, so this tells Lanczos-3 from a lesser kernel).
MAX_FAR_SHARE = 0.005


def _pillow_standardised(image: Image.Image) -> Image.Image:
    """The Pillow path libvips replaces: Lanczos (reducing gap 3), paste centred on the edge colour."""
    fill = padding_colour(border_pixels(image), TOLERANCE, SHARE)
    new_size = fitted_size(image.size, SIZE)
    canvas = Image.new(image.mode, (SIZE, SIZE), fill[0] if image.mode == "L" else fill)
    resized = image.resize(new_size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    canvas.paste(resized, ((SIZE - new_size[0]) // 2, (SIZE - new_size[1]) // 2))
    return canvas.convert("RGB")


def _figure(size: tuple[int, int], seed: int) -> Image.Image:
    """A plot: frames, a thick line, bars, dots and text on a light grey page."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", size, (245, 245, 245))
    draw = ImageDraw.Draw(image)
    width, height = size
    draw.rectangle((width // 10, height // 10, width * 9 // 10, height * 9 // 10), outline=(0, 0, 0), width=3)
    points = [(x, int(height * (0.2 + 0.6 * rng.random()))) for x in range(width // 10, width * 9 // 10, 25)]
    draw.line(points, fill=(200, 30, 30), width=4)
    for x in range(width // 5, width * 4 // 5, max(40, width // 12)):
        draw.rectangle(
            (x, int(height * (0.3 + 0.5 * rng.random())), x + 18, height * 9 // 10), fill=(30, 90, 200)
        )
    for _ in range(200):
        px, py = int(rng.integers(0, width)), int(rng.integers(0, height))
        draw.ellipse((px - 3, py - 3, px + 3, py + 3), fill=(20, 160, 40))
    draw.text((width // 8, height // 8), "Signal (a.u.) vs time (s)", fill=(0, 0, 0))
    return image


def _micrograph(size: tuple[int, int], seed: int, mode: str = "RGB") -> Image.Image:
    """Smooth structure plus noise."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (size[1] // 16 + 1, size[0] // 16 + 1, 3), dtype=np.uint8)
    smooth = (
        Image.fromarray(coarse).resize(size, Image.Resampling.BICUBIC).filter(ImageFilter.GaussianBlur(2))
    )
    noisy = np.asarray(smooth, dtype=np.int16) + rng.normal(0, 8, (size[1], size[0], 3)).astype(np.int16)
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).convert(mode)


# Built by the test that uses each (not at import: every worker collects this module).
VARIED: dict[str, Callable[[], Image.Image]] = {
    "figure 1.8 Mpx": partial(_figure, (1600, 1130), 1),
    "tall figure": partial(_figure, (1100, 1900), 2),
    "micrograph": partial(_micrograph, (1500, 1400), 3),
    "grey micrograph": partial(_micrograph, (1300, 1700), 4, "L"),
    "grey figure": lambda: _figure((1400, 1000), 5).convert("L"),
    "wide strip": partial(_figure, (3000, 300), 6),
    "6x shrink (box pre-shrink)": partial(_micrograph, (6100, 3000), 7),
    "one pixel over": partial(_micrograph, (1025, 700), 8),
}


@pytest.mark.parametrize("name", VARIED)
def test_libvips_matches_pillow_lanczos(name: str) -> None:
    image = VARIED[name]()
    ours, theirs = standardise(image, SIZE, TOLERANCE, SHARE), _pillow_standardised(image)
    assert ours.size == theirs.size == (SIZE, SIZE) and ours.mode == theirs.mode == "RGB"
    ours_px, theirs_px = np.asarray(ours, dtype=np.int16), np.asarray(theirs, dtype=np.int16)
    # Geometry and padding: outside the content box both are exactly the edge colour.
    new_size = fitted_size(image.size, SIZE)
    left, top = (SIZE - new_size[0]) // 2, (SIZE - new_size[1]) // 2
    padding = np.ones((SIZE, SIZE), dtype=bool)
    padding[top : top + new_size[1], left : left + new_size[0]] = False
    np.testing.assert_array_equal(ours_px[padding], theirs_px[padding])
    difference = np.abs(ours_px - theirs_px)
    assert difference.mean() < MAX_MEAN_DIFFERENCE, difference.mean()
    assert (difference > 2).mean() < MAX_FAR_SHARE, (difference > 2).mean()


def test_padding_colour_is_exact_on_a_dominant_and_a_mean_edge() -> None:
    dominant = _figure((2000, 900), 9)  # light grey page: the dominant edge colour
    out = np.asarray(standardise(dominant, SIZE, TOLERANCE, SHARE))
    assert tuple(out[0, 0]) == tuple(out[-1, -1]) == (245, 245, 245)
    halves = Image.new("RGB", (2000, 900), (255, 0, 0))
    ImageDraw.Draw(halves).rectangle((0, 450, 1999, 899), fill=(0, 0, 255))  # no colour dominates
    out = np.asarray(standardise(halves, SIZE, TOLERANCE, SHARE))
    assert tuple(out[0, 0]) == (128, 0, 128)


@pytest.mark.slow
def test_an_image_in_several_memory_blocks_is_copied_and_matches() -> None:
    image = _micrograph((2600, 2400), 10)  # 25 MB as RGBX: over Pillow's 16 MB block
    with pytest.raises(ValueError):
        pyarrow.array(image)  # so the copying branch is the one tested
    ours = np.asarray(standardise(image, SIZE, TOLERANCE, SHARE), dtype=np.int16)
    theirs = np.asarray(_pillow_standardised(image), dtype=np.int16)
    assert np.abs(ours - theirs).mean() < MAX_MEAN_DIFFERENCE


def test_enlarging_stays_with_pillow_lanczos() -> None:
    image = _figure((600, 400), 11)
    np.testing.assert_array_equal(
        np.asarray(standardise(image, SIZE, TOLERANCE, SHARE)), np.asarray(_pillow_standardised(image))
    )


@pytest.mark.parametrize("mode", ["L", "RGB"])
def test_shrink_and_pad_gives_the_images_bands_on_the_fill(mode: str) -> None:
    image = _micrograph((300, 150), 12, mode)
    fill = (7,) if mode == "L" else (7, 8, 9)
    padded = shrink_and_pad(image, (100, 50), 128, fill, 3.0)
    assert padded.dtype == np.uint8 and padded.shape == ((128, 128) if mode == "L" else (128, 128, 3))
    assert (padded[:39] == fill).all() and (padded[89:] == fill).all()  # 50 rows centred: 39 above
    assert not (padded[39:89] == fill).all()


def test_shrink_and_pad_refuses_what_it_cannot_do() -> None:
    image = Image.new("RGB", (100, 80), "white")
    with pytest.raises(ValueError, match="cannot be shrunk"):
        shrink_and_pad(image, (120, 96), 128, (255, 255, 255), 3.0)
    with pytest.raises(ValueError, match="fill of 1 values"):
        shrink_and_pad(image, (50, 40), 64, (255,), 3.0)
    with pytest.raises(ValueError, match="L or RGB"):
        shrink_and_pad(image.convert("RGBA"), (50, 40), 64, (255, 255, 255), 3.0)


@pytest.mark.slow
def test_pyvips_is_imported_only_by_standardising() -> None:
    code = (
        "import sys\n"
        "import sciir.figures.standardisation, sciir.pipelines.evaluate.pipeline, sciir.figures.figure_work\n"
        "assert 'pyvips' not in sys.modules, 'pyvips imported on import'\n"
        "from PIL import Image\n"
        "sciir.figures.standardisation.standardise(Image.new('RGB', (300, 200), 'white'), 128, 24, 0.55)\n"
        "assert 'pyvips' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
