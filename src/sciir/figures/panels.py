"""Panel detection (SciIR paper, appendix B.1): the classical splitter, and the choice between it and YOLO.

The classical splitter cuts a figure along whitespace gutters (sciir.figures.panel_split's recursive
XY-cut over projection profiles) and then merges small regions left over (panel letters, axis titles,
legend snippets) into the nearest panel. The YOLO backends (sciir.figures.yolo) run a user-supplied
Ultralytics model, exported to ONNX (OpenCV) or as .pt weights (ultralytics, imported only when such
weights are configured). Both answer the interface of sciir.figures.panel_detector.

The geometric rules (sciir.figures.geometry_rules: minimum side, aspect range, the 75-90% area rule)
apply to either detector's boxes.
"""

from __future__ import annotations

from PIL import Image

from sciir.figures.panel_detector import DetectorParams, PanelDetector
from sciir.figures.panel_split import Box, SplitSettings, split_panels
from sciir.figures.yolo import yolo_detector


def _gap(a: Box, b: Box) -> int:
    """Pixels between two boxes (0 when they touch or overlap)."""
    dx = max(0, max(a.x0, b.x0) - min(a.x1, b.x1))
    dy = max(0, max(a.y0, b.y0) - min(a.y1, b.y1))
    return max(dx, dy)


def _union(a: Box, b: Box) -> Box:
    return Box(min(a.x0, b.x0), min(a.y0, b.y0), max(a.x1, b.x1), max(a.y1, b.y1))


def merge_small_regions(boxes: list[Box], below_px: int, max_gap_px: int) -> list[Box]:
    """Each region with a short side below ``below_px`` joined to the nearest larger region within
    ``max_gap_px``; a small region with no such neighbour stays as it is (the geometric rules judge it)."""
    large = [box for box in boxes if min(box.width, box.height) >= below_px]
    if not large or below_px == 0:
        return list(boxes)
    grown = list(large)
    kept_small: list[Box] = []
    for box in boxes:
        if min(box.width, box.height) >= below_px:
            continue
        nearest = min(range(len(large)), key=lambda index: _gap(box, large[index]))
        if _gap(box, large[nearest]) <= max_gap_px:
            grown[nearest] = _union(grown[nearest], box)
        else:
            kept_small.append(box)
    by_origin = {box: grown[index] for index, box in enumerate(large)}
    merged = [by_origin.get(box, box) for box in boxes if box in by_origin or box in kept_small]
    return merged


class ClassicalSplitter:
    """Whitespace gutters and projection profiles (recursive XY-cut), small text regions merged."""

    def __init__(self, split: SplitSettings, detector: DetectorParams) -> None:
        self.split, self.detector = split, detector

    def detect(self, image: Image.Image) -> list[Box]:
        boxes = split_panels(image, self.split)
        return merge_small_regions(boxes, self.detector.merge_below_px, self.detector.merge_gap_px)


_YOLO_DETECTORS: dict[DetectorParams, PanelDetector] = {}


def detector_for(split: SplitSettings, detector: DetectorParams) -> PanelDetector:
    """YOLO when weights are configured, else the classical splitter; a YOLO model is loaded once per
    process."""
    if detector.yolo_weights is None:
        return ClassicalSplitter(split, detector)
    if detector not in _YOLO_DETECTORS:
        _YOLO_DETECTORS[detector] = yolo_detector(detector)
    return _YOLO_DETECTORS[detector]
