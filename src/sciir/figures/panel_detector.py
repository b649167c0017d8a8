"""The panel detector interface, and the settings that choose and tune a detector (``curate.detector``)."""

from __future__ import annotations

from typing import Protocol

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.figures.panel_split import Box


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
