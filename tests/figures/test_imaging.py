"""Imaging: decoding checks, XY-cut panel splitting, geometric rules, sRGB conversion, standardisation."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image, ImageCms, ImageDraw

from sciir.figures.geometry_rules import GeometryRules, panel_rejections
from sciir.figures.panel_split import Box, SplitSettings, split_panels
from sciir.figures.standardisation import encoded_png, png_bytes, standardise, standardised_png
from sciir.images.colour import normalise, to_srgb
from sciir.images.decode import UnreadableImageError, decode_file
from sciir.sample.annotation_quality import box_iou

REPO = Path(__file__).resolve().parents[2]
EXTERNAL_ARTICLES = REPO / ".." / "shared" / "external" / "articles"
NO_MERGE = SplitSettings(min_gutter_px=12, background_tolerance=24, min_part_px=0)


def _composite(
    size: tuple[int, int], boxes: list[Box], background: tuple[int, int, int] = (255, 255, 255)
) -> Image.Image:
    """A figure with a drawn 'plot' (frame, diagonal, dots) in each box on a plain background."""
    image = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(image)
    rng = np.random.default_rng(0)
    for box in boxes:
        draw.rectangle((box.x0, box.y0, box.x1 - 1, box.y1 - 1), outline=(20, 20, 120), width=2)
        draw.line((box.x0, box.y1 - 1, box.x1 - 1, box.y0), fill=(200, 30, 30), width=3)
        for _ in range(20):
            x = int(rng.integers(box.x0 + 5, box.x1 - 5))
            y = int(rng.integers(box.y0 + 5, box.y1 - 5))
            draw.ellipse((x - 2, y - 2, x + 2, y + 2), fill=(30, 150, 30))
    return image


def _assert_boxes_close(found: list[Box], expected: list[Box], tolerance_px: int = 2) -> None:
    assert len(found) == len(expected), found
    for got, want in zip(found, expected, strict=True):
        assert np.abs(np.subtract(
            (got.x0, got.y0, got.x1, got.y1), (want.x0, want.y0, want.x1, want.y1)
        )).max() <= tolerance_px, (got, want)  # fmt: skip


def test_grid_composite_is_split_row_major() -> None:
    expected = [
        Box(10, 10, 190, 140),
        Box(210, 10, 390, 140),
        Box(10, 160, 190, 290),
        Box(210, 160, 390, 290),
    ]
    _assert_boxes_close(split_panels(_composite((400, 300), expected), NO_MERGE), expected)


def test_tall_left_panel_then_stacked_right_panels() -> None:
    expected = [Box(5, 5, 150, 295), Box(175, 5, 395, 140), Box(175, 165, 395, 295)]
    _assert_boxes_close(split_panels(_composite((400, 300), expected), NO_MERGE), expected)


def test_coloured_background_and_single_panel() -> None:
    grey = (235, 235, 240)
    expected = [Box(30, 20, 170, 130)]
    _assert_boxes_close(split_panels(_composite((200, 150), expected, background=grey), NO_MERGE), expected)


def test_gutter_narrower_than_minimum_keeps_one_panel() -> None:
    image = _composite((300, 150), [Box(10, 10, 145, 140), Box(153, 10, 290, 140)])
    _assert_boxes_close(split_panels(image, NO_MERGE), [Box(10, 10, 290, 140)])


def test_blank_figure_has_no_panels() -> None:
    assert split_panels(Image.new("RGB", (64, 64), "white"), NO_MERGE) == []


def test_thin_label_stays_with_its_panel_only_when_merging() -> None:
    panel = Box(20, 40, 380, 290)
    image = _composite((400, 300), [panel])
    ImageDraw.Draw(image).rectangle((20, 10, 29, 22), fill="black")  # a panel letter 18 px above
    assert len(split_panels(image, NO_MERGE)) == 2
    merged = split_panels(image, SplitSettings(min_gutter_px=12, background_tolerance=24, min_part_px=96))
    _assert_boxes_close(merged, [Box(20, 10, 380, 290)])


def test_titles_aligned_across_columns_stay_with_their_panels() -> None:
    panels = [Box(10, 50, 190, 290), Box(230, 50, 390, 290)]
    image = _composite((400, 300), panels)
    for panel in panels:  # a title 14 px high, 20 px above each panel
        ImageDraw.Draw(image).rectangle((panel.x0 + 30, 16, panel.x0 + 120, 29), fill="black")
    assert len(split_panels(image, NO_MERGE)) == 4
    merged = split_panels(image, SplitSettings(min_gutter_px=12, background_tolerance=24, min_part_px=96))
    _assert_boxes_close(merged, [Box(10, 16, 190, 290), Box(230, 16, 390, 290)])


def test_shape_rules_name_the_problem() -> None:
    reasons = panel_rejections(
        [Box(0, 0, 90, 300), Box(0, 0, 400, 100), Box(0, 0, 200, 200)], (1000, 1000), GeometryRules()
    )
    assert reasons == [
        "90x300 px, short side below 128 px",
        "400x100 px, short side below 128 px",
        None,
    ]
    wide = panel_rejections([Box(0, 0, 700, 200)], (1000, 1000), GeometryRules())
    assert wide == ["700x200 px, aspect ratio 3.50 outside [0.33, 3.0]"]


def test_layout_area_rule_applies_only_to_a_real_multi_panel_split() -> None:
    big, small, fragment = Box(0, 0, 900, 900), Box(0, 0, 300, 300), Box(0, 0, 20, 20)
    figure = (1000, 1000)
    with_second_panel = panel_rejections([big, small], figure, GeometryRules())
    assert with_second_panel[0] is not None and "covers 81% of the figure" in with_second_panel[0]
    assert with_second_panel[1] is None
    assert panel_rejections([big, fragment], figure, GeometryRules())[0] is None
    assert panel_rejections([big, small], figure, GeometryRules(layout_misfire_area=None)) == [None, None]


def test_decode_file_rejects_truncated_and_non_image_files(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    _composite((64, 64), [Box(4, 4, 60, 60)]).save(buffer, format="PNG")
    truncated = tmp_path / "truncated.png"
    truncated.write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    text = tmp_path / "text.png"
    text.write_text("not an image", encoding="utf-8")
    for path in (truncated, text):
        with pytest.raises(UnreadableImageError):
            decode_file(path)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (Image.new("RGBA", (4, 4), (255, 0, 0, 0)), (255, 255, 255)),
        (Image.new("LA", (4, 4), (0, 0)), (255, 255, 255)),
        (Image.new("L", (4, 4), 100), (100, 100, 100)),
        (Image.new("CMYK", (4, 4), (0, 255, 255, 0)), (255, 0, 0)),
        (Image.new("I;16", (4, 4), 65535), (255, 255, 255)),
    ],
    ids=["transparent-rgba", "transparent-la", "grey", "cmyk", "16-bit"],
)
def test_to_srgb_handles_modes(image: Image.Image, expected: tuple[int, int, int]) -> None:
    converted = to_srgb(image)
    assert converted.mode == "RGB"
    assert converted.getpixel((0, 0)) == expected


def test_to_srgb_applies_the_embedded_profile() -> None:
    lab_profile = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    buffer = io.BytesIO()
    Image.new("LAB", (4, 4), (128, 128, 128)).save(buffer, format="TIFF", icc_profile=lab_profile)
    converted = to_srgb(Image.open(buffer))
    # L* = 50, a* = b* = 0 is sRGB mid grey 119; read without the profile it would be nonsense.
    assert converted.mode == "RGB"
    assert np.abs(np.subtract(converted.getpixel((0, 0)), (119, 119, 119))).max() <= 2
    assert "icc_profile" not in converted.info


def test_to_srgb_reports_a_profile_that_does_not_fit() -> None:
    image = Image.new("RGB", (4, 4), "white")
    image.info["icc_profile"] = ImageCms.ImageCmsProfile(ImageCms.createProfile("LAB")).tobytes()
    with pytest.raises(UnreadableImageError, match="sRGB"):
        to_srgb(image)


def test_standardise_size_mode_and_aspect() -> None:
    image = Image.new("RGB", (200, 100), (255, 255, 255))
    ImageDraw.Draw(image).rectangle((0, 0, 199, 99), outline=(0, 0, 0), width=1)
    ImageDraw.Draw(image).rectangle((40, 30, 160, 70), fill=(0, 0, 255))
    out = standardise(image, size=64, tolerance=24, dominant_share=0.55)
    assert out.size == (64, 64) and out.mode == "RGB"
    rgb = np.asarray(out)
    content_rows = np.flatnonzero((rgb != rgb[0, 0]).any(axis=(1, 2)))
    assert 30 <= content_rows.size <= 34  # 200x100 fits as 64x32, centred


def test_padding_uses_dominant_edge_colour_above_the_share() -> None:
    image = Image.new("RGB", (40, 20), (250, 250, 250))
    ImageDraw.Draw(image).rectangle((0, 0, 5, 19), fill=(0, 0, 0))  # black on 32 of 120 edge pixels
    out = standardise(image, size=32, tolerance=24, dominant_share=0.55)
    assert out.getpixel((16, 0)) == (250, 250, 250)


def test_padding_uses_mean_edge_colour_without_a_dominant_one() -> None:
    image = Image.new("RGB", (40, 20), (255, 0, 0))
    ImageDraw.Draw(image).rectangle((0, 10, 39, 19), fill=(0, 0, 255))  # edges: half red, half blue
    out = standardise(image, size=32, tolerance=24, dominant_share=0.55)
    assert out.getpixel((16, 0)) == (128, 0, 128)


@pytest.mark.parametrize("size", [(300, 200), (40, 60)], ids=["shrunk by libvips", "enlarged by Pillow"])
@pytest.mark.parametrize("mode", ["L", "RGB"])
def test_standardised_png_is_standardise_in_the_images_own_bands(mode: str, size: tuple[int, int]) -> None:
    image = _composite(size, [Box(5, 5, size[0] - 5, size[1] - 5)], background=(240, 240, 240)).convert(mode)
    png = standardised_png(image, 128, 24, 0.55)
    with Image.open(io.BytesIO(png)) as written:
        assert written.format == "PNG" and written.mode == mode and written.size == (128, 128)
        np.testing.assert_array_equal(
            np.asarray(written.convert("RGB")), np.asarray(standardise(image, 128, 24, 0.55))
        )


def test_an_rgb_image_with_equal_bands_is_written_grey_and_one_colour_pixel_keeps_it_rgb() -> None:
    grey = _composite((300, 200), [Box(5, 5, 295, 195)]).convert("L").convert("RGB")
    with Image.open(io.BytesIO(standardised_png(grey, 128, 24, 0.55))) as written:
        assert written.mode == "L"
        np.testing.assert_array_equal(
            np.asarray(written.convert("RGB")), np.asarray(standardise(grey, 128, 24, 0.55))
        )
    tinted = grey.copy()
    tinted.putpixel((150, 110), (90, 90, 200))  # standardised rows 67-68: the sampled rows miss it
    with Image.open(io.BytesIO(standardised_png(tinted, 128, 24, 0.55))) as written:
        assert written.mode == "RGB"


def test_png_encoders_take_only_eight_bit_grey_or_rgb() -> None:
    rgb = np.zeros((8, 8, 3), np.uint8)
    rgb[2:5, 3:6] = (250, 10, 30)
    with Image.open(io.BytesIO(encoded_png(rgb))) as written:
        np.testing.assert_array_equal(np.asarray(written), rgb)  # channels in RGB order, not OpenCV's BGR
    with pytest.raises(ValueError, match="uint8"):
        encoded_png(np.zeros((8, 8, 4), np.uint8))
    with pytest.raises(ValueError, match="uint8"):
        encoded_png(np.zeros((8, 8), np.float32))
    with pytest.raises(ValueError, match="L or RGB"):
        png_bytes(Image.new("RGBA", (8, 8)))


@pytest.fixture
def external_articles() -> Path:
    if not EXTERNAL_ARTICLES.is_dir():
        pytest.skip("shared/external/articles is not present")
    return EXTERNAL_ARTICLES


def test_ijm_tiff_with_icc_profile_converts_to_srgb(external_articles: Path) -> None:
    original = decode_file(external_articles / "ijm-00202" / "ijm-00202-fig003.tif").pixels
    assert isinstance(original, Image.Image) and original.info.get("icc_profile")
    converted = to_srgb(original)
    assert converted.mode == "RGB" and converted.size == original.size
    assert "icc_profile" not in converted.info
    # The embedded profile is sRGB itself, so the conversion must leave colours (nearly) unchanged.
    difference = np.abs(np.asarray(converted, dtype=int) - np.asarray(original.convert("RGB"), dtype=int))
    assert difference.mean() < 1.0


def test_nature_communications_panels_match_exsclaim_reference(external_articles: Path) -> None:
    """Loose regression against another tool's predicted boxes (not ground truth)."""
    folder = external_articles / "natcommun-s41467-018-06211-3"
    reference = json.loads((folder / "exsclaim_expected_panels.json").read_text(encoding="utf-8"))
    params = yaml.safe_load((REPO / "conf" / "base" / "parameters_curate.yml").read_text(encoding="utf-8"))
    settings = SplitSettings(**params["curate"]["split"])
    matched = total = 0
    for file_name, figure in reference.items():
        found = [
            (b.x0, b.y0, b.x1, b.y1)
            for b in split_panels(normalise(decode_file(folder / file_name)).image, settings)
        ]
        for panel in figure["master_images"]:
            xs = [point["x"] for point in panel["geometry"]]
            ys = [point["y"] for point in panel["geometry"]]
            expected = (min(xs), min(ys), max(xs), max(ys))
            total += 1
            matched += max((box_iou(expected, box) for box in found), default=0.0) >= 0.5
    assert total == 27
    assert matched / total >= 0.8
