"""Panel detection (SciIR paper, appendix B.1): a detector interface, a classical splitter and a YOLO backend.

The classical splitter cuts a figure along whitespace gutters (sciir.figures.imaging's recursive XY-cut over
projection profiles) and then merges small regions left over (panel letters, axis titles, legend
snippets) into the nearest panel. The YOLO backends (sciir.figures.yolo) run a user-supplied Ultralytics model,
exported to ONNX (OpenCV) or as .pt weights (ultralytics); they are used, and imported, only when
weights are configured.

The geometric rules (minimum side, aspect range, the 75-90% area rule) apply to either detector's
boxes; the minimum side can be scaled to the resolution of the source.
"""

from __future__ import annotations

from typing import Protocol

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.figures.imaging import Box, GeometryRules, SplitSettings, split_panels


class PanelDetector(Protocol):
    """Finds panel boxes in an 8-bit RGB figure, in reading order."""

    def detect(self, image: Image.Image) -> list[Box]: ...


class DetectorParams(BaseModel):
    """Which detector: the classical splitter, or YOLO when ``yolo_weights`` names a model file (an ONNX
    export, run by OpenCV, or ``.pt`` weights, run by ultralytics)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    yolo_weights: str | None = None
    yolo_confidence: float = Field(default=0.25, gt=0, lt=1)
    # Boxes overlapping a more confident one by more than this IoU are suppressed (Ultralytics' default).
    yolo_iou: float = Field(default=0.7, gt=0, le=1)
    # The square input size the model was trained and exported at (Ultralytics' default 640).
    yolo_imgsz: int = Field(default=640, ge=32)
    # A region whose short side is below this (a panel letter, an axis title) is merged into the
    # nearest larger region within merge_gap_px; 0 disables the merge.
    merge_below_px: int = Field(default=48, ge=0)
    merge_gap_px: int = Field(default=40, ge=0)


class GeometryParams(GeometryRules):
    """The geometric rules, with the minimum side scaled to the source resolution.

    ``min_side_px`` holds for a figure ``reference_width_px`` wide; a figure rendered narrower (a
    publisher's web rendition) gets a proportionally smaller minimum, never below ``min_side_floor_px``.
    None keeps ``min_side_px`` in source pixels.
    """

    reference_width_px: int | None = Field(default=None, gt=0)
    min_side_floor_px: int = Field(default=32, ge=1)

    def for_figure(self, width_px: int) -> GeometryRules:
        """The rules for a figure of this width."""
        if self.reference_width_px is None:
            return GeometryRules(
                min_side_px=self.min_side_px,
                aspect_range=self.aspect_range,
                layout_misfire_area=self.layout_misfire_area,
            )
        scaled = round(self.min_side_px * min(1.0, width_px / self.reference_width_px))
        return GeometryRules(
            min_side_px=max(self.min_side_floor_px, scaled),
            aspect_range=self.aspect_range,
            layout_misfire_area=self.layout_misfire_area,
        )


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
        from sciir.figures.yolo import (
            yolo_detector,  # OpenCV's dnn or ultralytics, only when YOLO is configured
        )

        _YOLO_DETECTORS[detector] = yolo_detector(detector)
    return _YOLO_DETECTORS[detector]
