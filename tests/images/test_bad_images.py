"""A corpus of bad and odd figure files, built here, curated in one run: each is standardised correctly
(checked by pixel statistics) or rejected with its reason, and the run goes on.

Most files draw the same figure: a white page with a block of four coloured quadrants (red, green,
blue, yellow), stored in some odd way (format, depth, colour model, orientation, transparency). After
curation the block must come back as one panel with its quadrants in place and in their colours.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageCms

from sciir.pipelines.curate.nodes import curate_figures
from sciir.testing.figure_rows import kept_figure_row

REPO = Path(__file__).resolve().parents[2]
EXTERNAL_ARTICLES = REPO / ".." / "shared" / "external" / "articles"
DOI = "10.1234/odd-files"
OUT = 64  # standardised side, small to keep the test quick
MAX_PIXELS = 4_000_000

HEIGHT, WIDTH = 180, 240
BLOCK = (20, 20, 220, 160)  # x0, y0, x1, y1 of the quadrant block
QUADRANTS = {"tl": (200, 30, 30), "tr": (30, 160, 60), "bl": (30, 60, 200), "br": (230, 200, 40)}
GREYS = {"tl": 40, "tr": 100, "bl": 160, "br": 215}


def _figure(colours: dict[str, Any], background: Any) -> np.ndarray:
    """The figure as an array: ``background`` page, the quadrant block in ``colours``."""
    channels = () if np.ndim(background) == 0 else (len(background),)
    page = np.empty((HEIGHT, WIDTH, *channels), dtype=np.float64)
    page[...] = background
    x0, y0, x1, y1 = BLOCK
    xm, ym = (x0 + x1) // 2, (y0 + y1) // 2
    for key, (xs, ys) in {
        "tl": ((x0, xm), (y0, ym)),
        "tr": ((xm, x1), (y0, ym)),
        "bl": ((x0, xm), (ym, y1)),
        "br": ((xm, x1), (ym, y1)),
    }.items():
        page[ys[0] : ys[1], xs[0] : xs[1]] = colours[key]
    return page


RGB = _figure(QUADRANTS, (255, 255, 255)).astype(np.uint8)
GREY = _figure(GREYS, 255).astype(np.uint8)


def _rgb_image() -> Image.Image:
    return Image.fromarray(RGB)


def _saved(image: Image.Image, image_format: str, **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=image_format, **options)
    return buffer.getvalue()


def _opencv(array: np.ndarray, suffix: str) -> bytes:
    """Encoded by OpenCV (which writes 16-bit and float colour); ``array`` is RGB(A)."""
    order = [2, 1, 0, 3][: array.shape[2]]
    ok, encoded = cv2.imencode(suffix, np.ascontiguousarray(array[..., order]))
    assert ok
    return encoded.tobytes()


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


# The stored image whose display after applying orientation N is the figure.
_STORED_FOR = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_90,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_270,
}


def _oriented_jpeg(orientation: int) -> bytes:
    stored = _rgb_image().transpose(_STORED_FOR[orientation])
    return _saved(stored, "JPEG", quality=95, exif=_exif(orientation))


def _xmp_oriented_jpeg() -> bytes:
    xmp = (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        b'<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="6"/>'
        b"</rdf:RDF></x:xmpmeta>"
    )
    return _saved(_rgb_image().transpose(_STORED_FOR[6]), "JPEG", quality=95, xmp=xmp)


def _transparent_background(alpha_type: type = np.uint8) -> np.ndarray:
    """RGBA: the quadrants opaque, the page fully transparent (its colour black, as a plotter writes it)."""
    top = np.iinfo(alpha_type).max
    rgba = np.zeros((HEIGHT, WIDTH, 4), dtype=np.float64)
    rgba[..., :3] = _figure(QUADRANTS, (0, 0, 0))
    rgba[..., 3] = _figure(dict.fromkeys(QUADRANTS, top), 0)
    rgba[..., :3] *= top / 255
    return np.rint(rgba).astype(alpha_type)


def _white_text_on_transparency() -> bytes:
    """White lines of 'text' (4 px strokes every 10 px over the block) on a fully transparent page."""
    rgba = np.zeros((HEIGHT, WIDTH, 4), dtype=np.uint8)
    rgba[..., :3] = 255
    x0, y0, x1, y1 = BLOCK
    for top in range(y0, y1, 10):
        rgba[top : top + 4, x0:x1, 3] = 255
    return _saved(Image.fromarray(rgba), "PNG")


def _palette_with_transparent_page() -> bytes:
    image = _rgb_image().quantize(8)
    page_index = image.getpixel((0, 0))
    return _saved(image, "PNG", transparency=page_index)


def _lab_tiff() -> bytes:
    to_lab = ImageCms.buildTransform(
        ImageCms.createProfile("sRGB"), ImageCms.createProfile("LAB"), "RGB", "LAB"
    )
    return _saved(ImageCms.applyTransform(_rgb_image(), to_lab), "TIFF")


def _with_srgb_profile(image_format: str) -> bytes:
    profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    return _saved(_rgb_image(), image_format, icc_profile=profile)


def _deep_grey(top: int) -> Image.Image:
    """The grey figure at integer depth with maximum ``top`` (65535: 16-bit, 4095: 12-bit in 16)."""
    return Image.fromarray(np.rint(GREY.astype(np.float64) * top / 255).astype(np.uint16))


def _deep_rgb(top: int) -> np.ndarray:
    return np.rint(RGB.astype(np.float64) * top / 255).astype(np.uint16)


def _float_grey_wide() -> bytes:
    """Float samples in an arbitrary range (-1000 .. 3000): stretched, so the order of greys is kept."""
    values = (GREY.astype(np.float32) / 255) * 4000 - 1000
    return _saved(Image.fromarray(values), "TIFF")


def _animated_gif() -> bytes:
    first = _rgb_image().quantize(8)
    second = Image.new("RGB", (WIDTH, HEIGHT), "black").quantize(8)
    return _saved(first, "GIF", save_all=True, append_images=[second], duration=100)


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flipped_idat_byte() -> bytes:
    data = bytearray(_saved(_rgb_image(), "PNG"))
    start = data.index(b"IDAT") + 20
    data[start] ^= 0xFF
    return bytes(data)


def _bomb_png(width: int, height: int) -> bytes:
    """A tiny PNG whose header declares ``width`` x ``height`` pixels (all zero, highly compressible)."""
    return _saved(Image.new("1", (width, height)), "PNG")


def _declared_size_png(width: int, height: int) -> bytes:
    """A valid 1x1 PNG with its IHDR edited to declare another size (a decompression bomb's header)."""
    import struct
    import zlib

    data = bytearray(_saved(Image.new("L", (1, 1)), "PNG"))
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])))
    return bytes(data)


def _tiff_with_float_strip_offsets() -> bytes:
    """A TIFF whose StripOffsets tag is typed DOUBLE: Pillow's decoder raises TypeError, not OSError."""
    data = bytearray(_saved(_rgb_image(), "TIFF"))
    ifd = int.from_bytes(data[4:8], "little")
    count = int.from_bytes(data[ifd : ifd + 2], "little")
    for entry in range(ifd + 2, ifd + 2 + 12 * count, 12):
        if int.from_bytes(data[entry : entry + 2], "little") == 273:
            data[entry + 2 : entry + 4] = (12).to_bytes(2, "little")
    return bytes(data)


def _bad_icc_png() -> bytes:
    return _saved(_rgb_image(), "PNG", icc_profile=b"this is not an ICC profile at all" * 4)


def _lab_profile_on_rgb() -> bytes:
    return _saved(
        _rgb_image(), "PNG", icc_profile=ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    )


# ---- what is expected


def _centre_colours(out: np.ndarray) -> dict[str, np.ndarray]:
    """Colours at the centres of the four quadrants of the standardised block (200x140 -> 64x45, centred)."""
    height = round((BLOCK[3] - BLOCK[1]) * OUT / (BLOCK[2] - BLOCK[0]))
    top = (OUT - height) // 2
    rows = {"t": top + height // 4, "b": top + 3 * height // 4}
    cols = {"l": OUT // 4, "r": 3 * OUT // 4}
    return {key: out[rows[key[0]], cols[key[1]]].astype(int) for key in QUADRANTS}


def quadrants(tolerance: int = 24, greys: bool = False) -> Callable[[np.ndarray], None]:
    def check(out: np.ndarray) -> None:
        for key, found in _centre_colours(out).items():
            expected = np.array((GREYS[key],) * 3 if greys else QUADRANTS[key])
            assert np.abs(found - expected).max() <= tolerance, (key, found, expected)

    return check


def ordered_greys(out: np.ndarray) -> None:
    """Stretched greys keep their order and span most of the range."""
    found = [int(colour.mean()) for colour in _centre_colours(out).values()]
    assert found == sorted(found) and found[-1] - found[0] > 150, found


def light_on_dark(out: np.ndarray) -> None:
    """White strokes stay visible: composited onto black, the block is white lines on black (onto white
    it would be one white square)."""
    grey = out.mean(axis=2)
    assert (grey > 200).mean() > 0.2 and (grey < 55).mean() > 0.2, grey.mean()


def dark_centre(out: np.ndarray) -> None:
    assert out[OUT // 2, OUT // 2].max() < 30


@dataclass(frozen=True)
class Case:
    name: str
    data: Callable[[], bytes] | None  # None: no file at all
    check: Callable[[np.ndarray], None] | None = None  # set: standardised and checked
    reason: str | None = None  # set: rejected with these words
    changes: tuple[str, ...] = ()  # among the kept panel's changes


def _rgb_png() -> bytes:
    return _saved(_rgb_image(), "PNG")


def _rgb_jpeg() -> bytes:
    return _saved(_rgb_image(), "JPEG", quality=95)


CASES = [
    # ---- standardised
    Case("plain.png", _rgb_png, quadrants()),
    Case("plain.jpg", _rgb_jpeg, quadrants()),
    Case("progressive.jpg", lambda: _saved(_rgb_image(), "JPEG", quality=95, progressive=True), quadrants()),
    Case("lzw.tif", lambda: _saved(_rgb_image(), "TIFF", compression="tiff_lzw"), quadrants()),
    Case("deflate.tif", lambda: _saved(_rgb_image(), "TIFF", compression="tiff_adobe_deflate"), quadrants()),
    Case("plain.bmp", lambda: _saved(_rgb_image(), "BMP"), quadrants()),
    Case("palette.gif", lambda: _saved(_rgb_image().quantize(8), "GIF"), quadrants(), changes=("converted",)),
    Case("animated.gif", _animated_gif, quadrants(), changes=("first frame",)),
    Case("lossless.webp", lambda: _saved(_rgb_image(), "WEBP", lossless=True), quadrants()),
    Case("lossy.webp", lambda: _saved(_rgb_image(), "WEBP", quality=95), quadrants(tolerance=30)),
    Case("plain.jp2", lambda: _saved(_rgb_image(), "JPEG2000"), quadrants()),
    Case("palette.png", lambda: _saved(_rgb_image().quantize(8), "PNG"), quadrants(), changes=("converted",)),
    Case(
        "palette-transparent.png",
        _palette_with_transparent_page,
        quadrants(),
        changes=("composited on white",),
    ),
    Case(
        "rgba.png",
        lambda: _saved(Image.fromarray(_transparent_background()), "PNG"),
        quadrants(),
        changes=("composited on white",),
    ),
    Case(
        "rgba16.png",
        lambda: _opencv(_transparent_background(np.uint16), ".png"),
        quadrants(),
        changes=("converted", "composited on white"),
    ),
    Case(
        "white-text-transparent.png",
        _white_text_on_transparency,
        light_on_dark,
        changes=("composited on black",),
    ),
    Case("grey.png", lambda: _saved(Image.fromarray(GREY), "PNG"), quadrants(greys=True)),
    Case(
        "grey-alpha.png",
        lambda: _saved(Image.fromarray(GREY).convert("LA"), "PNG"),
        quadrants(greys=True),
    ),
    Case(
        "bilevel.png",
        lambda: _saved(Image.fromarray(GREY).point(lambda v: 255 * (v > 250)).convert("1"), "PNG"),
        dark_centre,
    ),
    Case(
        "grey16.png",
        lambda: _saved(_deep_grey(65535), "PNG"),
        quadrants(greys=True, tolerance=2),
        changes=("converted",),
    ),
    Case(
        "grey12in16.png",
        lambda: _saved(_deep_grey(4095), "PNG"),
        quadrants(greys=True, tolerance=2),
        changes=("converted",),
    ),
    Case("grey16.tif", lambda: _saved(_deep_grey(65535), "TIFF"), quadrants(greys=True, tolerance=2)),
    Case("grey12in16.tif", lambda: _saved(_deep_grey(4095), "TIFF"), quadrants(greys=True, tolerance=2)),
    Case(
        "float01.tif",
        lambda: _saved(Image.fromarray(GREY.astype(np.float32) / 255), "TIFF"),
        quadrants(greys=True, tolerance=2),
        changes=("converted",),
    ),
    Case("float-wide.tif", _float_grey_wide, ordered_greys),
    Case(
        "rgb16.png", lambda: _opencv(_deep_rgb(65535), ".png"), quadrants(tolerance=2), changes=("converted",)
    ),
    Case(
        "rgb12in16.png",
        lambda: _opencv(_deep_rgb(4095), ".png"),
        quadrants(tolerance=2),
        changes=("converted",),
    ),
    Case("rgb16.tif", lambda: _opencv(_deep_rgb(65535), ".tif"), quadrants(tolerance=2)),
    Case("rgb12in16.tif", lambda: _opencv(_deep_rgb(4095), ".tif"), quadrants(tolerance=2)),
    Case("rgb-float.tif", lambda: _opencv(RGB.astype(np.float32) / 255, ".tif"), quadrants(tolerance=2)),
    Case(
        "cmyk.jpg",
        lambda: _saved(_rgb_image().convert("CMYK"), "JPEG", quality=95),
        quadrants(),
        changes=("colour-converted",),
    ),
    Case(
        "cmyk.tif",
        lambda: _saved(_rgb_image().convert("CMYK"), "TIFF"),
        quadrants(),
        changes=("colour-converted",),
    ),
    Case("lab.tif", _lab_tiff, quadrants(tolerance=10), changes=("colour-converted",)),
    Case("srgb-profile.jpg", lambda: _with_srgb_profile("JPEG"), quadrants()),
    Case("srgb-profile.tif", lambda: _with_srgb_profile("TIFF"), quadrants(tolerance=1)),
    *[
        Case(f"exif-orientation-{n}.jpg", lambda n=n: _oriented_jpeg(n), quadrants(), changes=("rotated",))
        for n in (2, 3, 4, 5, 6, 7, 8)
    ],
    Case("xmp-orientation-6.jpg", _xmp_oriented_jpeg, quadrants(), changes=("rotated",)),
    Case(
        "exif-orientation-6.png",
        lambda: _saved(_rgb_image().transpose(_STORED_FOR[6]), "PNG", exif=_exif(6)),
        quadrants(),
        changes=("rotated",),
    ),
    Case(
        "tiff-orientation-8.tif",
        lambda: _saved(_rgb_image().transpose(_STORED_FOR[8]), "TIFF", tiffinfo={274: 8}),
        quadrants(),
        changes=("rotated",),
    ),
    Case("png-named.jpg", _rgb_png, quadrants()),
    Case("jpeg-named.tif", _rgb_jpeg, quadrants()),
    Case("no-suffix", _rgb_png, quadrants()),
    # ---- rejected
    Case("empty.png", lambda: b"", reason="the file is empty (0 bytes)"),
    Case("missing.png", None, reason="the file cannot be read"),
    Case("half.png", lambda: _truncated(_rgb_png()), reason="truncated or corrupt"),
    Case("half.jpg", lambda: _truncated(_rgb_jpeg()), reason="truncated or corrupt"),
    Case("half.tif", lambda: _truncated(_saved(_rgb_image(), "TIFF")), reason="truncated or corrupt"),
    Case(
        "half.gif", lambda: _truncated(_saved(_rgb_image().quantize(8), "GIF")), reason="truncated or corrupt"
    ),
    Case(
        "half-rgb16.png", lambda: _truncated(_opencv(_deep_rgb(65535), ".png")), reason="truncated or corrupt"
    ),
    Case("bad-crc.png", _flipped_idat_byte, reason="truncated or corrupt"),
    Case("bomb-header.png", lambda: _declared_size_png(100_000, 100_000), reason="decompression bomb"),
    Case("bomb-real.png", lambda: _bomb_png(4000, 3000), reason="over the limit of 4,000,000"),
    Case("typeerror.tif", _tiff_with_float_strip_offsets, reason="TypeError"),
    Case("text.png", lambda: b"this is not an image", reason="not an image in a supported format"),
    Case("error-page.jpg", lambda: b"<html><body>403 Forbidden</body></html>", reason="not an image"),
    Case(
        "figure.pdf",
        lambda: b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n",
        reason="PDF is a vector format",
    ),
    Case(
        "figure.eps",
        lambda: b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\n",
        reason="EPS is a vector format",
    ),
    Case(
        "figure.svg",
        lambda: b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>',
        reason="SVG is a vector format",
    ),
    Case(
        "layers.psd",
        lambda: b"8BPS\x00\x01" + bytes(40),
        reason="Photoshop PSD is not a supported image format",
    ),
    Case(
        "photo.heic", lambda: b"\x00\x00\x00\x18ftypheic" + bytes(40), reason="HEIF/AVIF is not a supported"
    ),
    Case("big.tif", lambda: b"II+\x00\x08\x00\x00\x00" + bytes(40), reason="BigTIFF is not a supported"),
    Case("bad-icc.png", _bad_icc_png, reason="ICC profile cannot convert"),
    Case("lab-profile-on-rgb.png", _lab_profile_on_rgb, reason="cannot convert a RGB image to sRGB"),
    Case(
        "blank.png",
        lambda: _saved(Image.new("RGB", (WIDTH, HEIGHT), "white"), "PNG"),
        reason="only background",
    ),
]


def _figure_row(name: str, path: Path) -> dict[str, Any]:
    return kept_figure_row(DOI, "odd", name, path)


def _curate(
    tmp_path: Path, cases: list[Case], curate_params: Callable[..., dict[str, Any]]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    rows = []
    for case in cases:
        path = tmp_path / case.name
        if case.data is not None:
            path.write_bytes(case.data())
        rows.append(_figure_row(case.name, path))
    articles = pd.DataFrame([{"article_id": "odd", "methods_text": None}])
    params = curate_params(
        standardise={"size_px": OUT},
        decode={"max_pixels": MAX_PIXELS, "max_file_mb": 8},
        workers={"count": 2, "timeout_s": 60, "memory_mb": 2048},
        shards={"folder": str(tmp_path / "curate_shards")},
    )
    return curate_figures(pd.DataFrame(rows), articles, params)


@pytest.fixture(scope="module")
def corpus_run(
    tmp_path_factory: pytest.TempPathFactory, curate_params: Callable[..., dict[str, Any]]
) -> tuple[pd.DataFrame, dict[str, Any]]:
    return _curate(tmp_path_factory.mktemp("corpus"), CASES, curate_params)


def test_the_corpus_is_large_and_covers_both_outcomes() -> None:
    assert len(CASES) >= 40
    assert len({case.name for case in CASES}) == len(CASES)
    assert (
        sum(case.check is not None for case in CASES) >= 20
        and sum(case.reason is not None for case in CASES) >= 20
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", [case for case in CASES if case.check], ids=lambda case: case.name)
def test_odd_file_is_standardised(case: Case, corpus_run: tuple[pd.DataFrame, dict[str, Any]]) -> None:
    curated, images = corpus_run
    rows = curated[curated["figure_id"] == case.name]
    assert rows["status"].tolist() == ["kept"], rows["reason"].tolist()
    row = rows.iloc[0]
    image = images[row["sample_id"]].image()
    assert image.mode in ("L", "RGB")  # a grey figure stays one band (standardised_png)
    out = np.asarray(image.convert("RGB"))
    assert out.shape == (OUT, OUT, 3)
    case.check(out)
    changes = json.loads(row["changes"])
    assert set(case.changes) <= set(changes), changes
    assert {"cropped", "resized", "padded"} <= set(changes)


@pytest.mark.parametrize("case", [case for case in CASES if case.reason], ids=lambda case: case.name)
def test_bad_file_is_rejected_with_its_reason(
    case: Case, corpus_run: tuple[pd.DataFrame, dict[str, Any]]
) -> None:
    curated, _ = corpus_run
    rows = curated[curated["figure_id"] == case.name]
    assert rows["status"].tolist() == ["rejected"]
    reason = rows.iloc[0]["reason"]
    # A person can act on it: which figure of which article, which file, and what is wrong.
    assert reason.startswith(f"figure {case.name} in {DOI}: image file ") and case.name in reason
    assert case.reason in reason, reason


def test_a_decoder_failure_keeps_the_decoders_own_message(
    corpus_run: tuple[pd.DataFrame, dict[str, Any]],
) -> None:
    curated, _ = corpus_run
    reason = curated.set_index("figure_id").loc["typeerror.tif", "reason"]
    assert "the decoder failed on this file (decoder: TypeError: " in reason


@pytest.mark.slow
def test_a_files_outcome_does_not_depend_on_the_others(
    tmp_path: Path,
    corpus_run: tuple[pd.DataFrame, dict[str, Any]],
    curate_params: Callable[..., dict[str, Any]],
) -> None:
    """The same files curated alone give the same bytes and reasons as within the corpus."""
    curated, images = corpus_run
    alone_cases = [case for case in CASES if case.name in ("png-named.jpg", "cmyk.jpg", "half.tif")]
    alone, alone_images = _curate(tmp_path, alone_cases, curate_params)
    for case in alone_cases:
        ours = alone[alone["figure_id"] == case.name].iloc[0]
        theirs = curated[curated["figure_id"] == case.name].iloc[0]
        assert ours["status"] == theirs["status"]
        if ours["status"] == "kept":
            assert alone_images[ours["sample_id"]].read() == images[theirs["sample_id"]].read()
        else:
            assert (
                ours["reason"].split(": image file ")[1].split(": ", 1)[1]
                == theirs["reason"].split(": image file ")[1].split(": ", 1)[1]
            )


@pytest.fixture
def ijm_tiffs() -> list[Path]:
    folder = EXTERNAL_ARTICLES / "ijm-00202"
    if not folder.is_dir():
        pytest.skip("shared/external/articles is not present")
    return sorted(folder.glob("*.tif"))


def test_ijm_tiffs_with_icc_profiles_are_standardised_in_srgb(ijm_tiffs: list[Path]) -> None:
    """The real IJM figures carry sRGB ICC profiles: each is standardised, its colours those the profile
    gives (lcms applied to the source directly), and no panel is lost to the conversion."""
    from sciir.images.colour import normalise
    from sciir.images.decode import decode_file

    for path in ijm_tiffs:
        decoded = decode_file(path)
        assert decoded.icc_profile, path
        ours = np.asarray(normalise(decoded).image.convert("RGB"), dtype=int)
        with Image.open(path) as source:
            profile = ImageCms.ImageCmsProfile(io.BytesIO(source.info["icc_profile"]))
            reference = ImageCms.profileToProfile(
                source.convert("RGB"), profile, ImageCms.createProfile("sRGB")
            )
        assert ours.shape == np.asarray(reference).shape
        assert np.abs(ours - np.asarray(reference, dtype=int)).mean() < 1.0, path
