"""Panel detection: the classical splitter on drawn multi-panel figures of known boxes, small text merged
into its panel, the geometric rules scaled to the source resolution, and the YOLO backend's interface
(the ONNX export it runs: tests/figures/test_yolo_onnx.py)."""

from __future__ import annotations

import importlib.util
from dataclasses import astuple
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.figures.geometry_rules import GeometryParams, panel_rejections
from sciir.figures.panel_detector import DetectorParams
from sciir.figures.panel_split import Box, SplitSettings
from sciir.figures.panels import ClassicalSplitter, detector_for, merge_small_regions
from sciir.sample.annotation_quality import box_iou

FONT = ImageFont.load_default(size=22)


def iou(a: Box, b: Box) -> float:
    return box_iou(astuple(a), astuple(b))


def _figure_with_letters() -> tuple[Image.Image, list[Box]]:
    """Four plots in a 2x2 grid, each with a panel letter above its top-left corner and an axis title
    below it; the expected boxes hold the plot, its letter and its title."""
    image = Image.new("RGB", (820, 700), "white")
    draw = ImageDraw.Draw(image)
    expected = []
    for row in range(2):
        for col in range(2):
            x0, y0 = 40 + col * 400, 60 + row * 340
            draw.rectangle((x0, y0, x0 + 330, y0 + 230), outline="black", width=3)
            draw.line((x0 + 10, y0 + 200, x0 + 320, y0 + 30), fill=(200, 30, 30), width=4)
            letter = draw.textbbox((x0 - 30, y0 - 45), "abcd"[2 * row + col], font=FONT)
            title = draw.textbbox((x0 + 110, y0 + 245), "Time (s)", font=FONT)
            draw.text((x0 - 30, y0 - 45), "abcd"[2 * row + col], fill="black", font=FONT)
            draw.text((x0 + 110, y0 + 245), "Time (s)", fill="black", font=FONT)
            expected.append(Box(letter[0], letter[1], x0 + 331, title[3]))
    return image, expected


def test_classical_splitter_finds_each_panel_with_its_letter_and_title() -> None:
    image, expected = _figure_with_letters()
    boxes = ClassicalSplitter(SplitSettings(), DetectorParams()).detect(image)
    assert len(boxes) == 4
    for found, truth in zip(boxes, expected, strict=True):  # reading order
        assert iou(found, truth) >= 0.9, (found, truth)
        assert abs(found.x0 - truth.x0) <= 2 and abs(found.y0 - truth.y0) <= 2  # the letter is inside
        assert abs(found.y1 - truth.y1) <= 2  # so is the axis title


def test_without_the_merges_letters_and_titles_are_cut_off() -> None:
    """The same figure with every cut kept: the letters and titles come out as fragments (the test
    above would catch a splitter that stops merging them)."""
    image, expected = _figure_with_letters()
    split = SplitSettings(min_part_px=0)
    boxes = ClassicalSplitter(split, DetectorParams(merge_below_px=0)).detect(image)
    assert len(boxes) > 4
    assert min(min(box.width, box.height) for box in boxes) < 48


def test_small_regions_join_the_nearest_panel_within_the_gap() -> None:
    panel, letter, far_label = Box(100, 100, 400, 300), Box(70, 60, 90, 90), Box(700, 700, 720, 720)
    merged = merge_small_regions([letter, panel, far_label], below_px=48, max_gap_px=40)
    assert merged == [Box(70, 60, 400, 300), far_label]
    assert merge_small_regions([letter, panel], below_px=0, max_gap_px=40) == [letter, panel]


def test_minimum_side_scales_with_the_source_width() -> None:
    rules = GeometryParams(min_side_px=128, reference_width_px=2048, min_side_floor_px=32)
    assert rules.for_figure(2048).min_side_px == 128
    assert rules.for_figure(4096).min_side_px == 128  # never above the paper's 128
    assert rules.for_figure(685).min_side_px == 43
    assert rules.for_figure(100).min_side_px == 32
    assert GeometryParams().for_figure(685).min_side_px == 128  # unscaled by default


def test_geometric_rules_size_aspect_and_layout_area() -> None:
    rules = GeometryParams(min_side_px=100, reference_width_px=1000).for_figure(500)  # min side 50
    figure = (500, 400)
    boxes = [Box(0, 0, 60, 60), Box(0, 0, 40, 60), Box(0, 0, 400, 60), Box(0, 0, 420, 360)]
    reasons = panel_rejections(boxes, figure, rules)
    assert reasons[0] is None
    assert "short side below 50 px" in str(reasons[1])
    assert "aspect ratio 6.67 outside [0.33, 3.0]" in str(reasons[2])
    assert "covers 76% of the figure" in str(reasons[3])


def test_yolo_weights_must_be_a_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="yolo_weights: .*missing.pt is not a file"):
        detector_for(SplitSettings(), DetectorParams(yolo_weights=str(tmp_path / "missing.pt")))


@pytest.mark.skipif(importlib.util.find_spec("ultralytics") is not None, reason="ultralytics is installed")
def test_yolo_weights_without_ultralytics_name_the_package_and_the_way_back(tmp_path: Path) -> None:
    weights = tmp_path / "panels.pt"
    weights.write_bytes(b"weights")
    with pytest.raises(
        RuntimeError, match="ultralytics package is not installed.*torchvision==0.28"
    ) as error:
        detector_for(SplitSettings(), DetectorParams(yolo_weights=str(weights)))
    assert "yolo_weights to null" in str(error.value) and "format=onnx" in str(error.value)
