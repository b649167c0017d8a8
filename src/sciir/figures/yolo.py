"""YOLO panel detectors (SciIR paper, appendix B.1): a user's Ultralytics model, as an ONNX export run by
OpenCV's dnn module, or as ``.pt`` weights run by the ultralytics package.

An ONNX export (``yolo export model=best.pt format=onnx``) needs neither ultralytics nor torchvision. The
figure is letterboxed as Ultralytics does (scaled to fit the export's square input, centred on grey
114, RGB 0-1 NCHW); the YOLOv8/YOLO11 detection output [1, 4 + classes, anchors] holds each anchor's
centre x, centre y, width and height in input pixels, then its class scores. An anchor's confidence is
its best class score; anchors below the threshold are dropped, overlapping ones suppressed whatever
their class (a panel is cropped once), and the boxes mapped back to the figure's pixels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from sciir.figures.panel_detector import DetectorParams
from sciir.figures.panel_split import Box

# Ultralytics pads the letterbox with this grey; the model was trained on such borders.
PAD_GREY = 114

YOLO_INSTALL_HINT = (
    'pip install ultralytics "torchvision==<the release matching your torch>" (for torch 2.13: '
    "torchvision==0.28.*, so torch is not replaced)"
)


@dataclass(frozen=True)
class Letterbox:
    """How a figure was placed in the model's input: scaled by ``scale``, then offset by the padding."""

    scale: float
    pad_x: int
    pad_y: int

    def to_figure(self, xyxy: np.ndarray) -> np.ndarray:
        """Boxes (x0, y0, x1, y1 rows) from input pixels to the figure's pixels."""
        offset = np.array([self.pad_x, self.pad_y, self.pad_x, self.pad_y], dtype=np.float32)
        return (xyxy - offset) / self.scale


def letterbox(image: Image.Image, size: int) -> tuple[np.ndarray, Letterbox]:
    """The figure as the model's input blob (1, 3, size, size), RGB in 0-1, and where it was placed."""
    rgb = np.asarray(image.convert("RGB"))
    height, width = rgb.shape[:2]
    scale = min(size / height, size / width)
    new_width, new_height = round(width * scale), round(height * scale)
    if (new_width, new_height) != (width, height):
        rgb = cv2.resize(rgb, (new_width, new_height), interpolation=cv2.INTER_LINEAR)
    # Ultralytics' split of an odd padding: the extra pixel goes right and below.
    pad_x, pad_y = round((size - new_width) / 2 - 0.1), round((size - new_height) / 2 - 0.1)
    canvas = np.full((size, size, 3), PAD_GREY, dtype=np.uint8)
    canvas[pad_y : pad_y + new_height, pad_x : pad_x + new_width] = rgb
    blob = canvas.transpose(2, 0, 1)[np.newaxis].astype(np.float32) / 255.0
    return blob, Letterbox(scale, pad_x, pad_y)


def decode_detections(output: np.ndarray, confidence: float, iou: float) -> np.ndarray:
    """Boxes (x0, y0, x1, y1 rows, input pixels) of a [1, 4 + classes, anchors] output, best first: at
    least ``confidence``, overlaps above ``iou`` suppressed."""
    # Anchors outnumber rows in every real export (8400 at imgsz 640); [1, 300, 6] is an end-to-end one.
    if output.ndim != 3 or output.shape[0] != 1 or not 5 <= output.shape[1] <= output.shape[2]:
        raise ValueError(
            f"output of shape {list(output.shape)} is not a YOLOv8/YOLO11 detection output "
            "[1, 4 + classes, anchors]; export a detection model with format=onnx, without nms or end2end"
        )
    anchors = output[0]
    scores = anchors[4:].max(axis=0)
    confident = scores >= confidence
    centre_x, centre_y, width, height = anchors[:4, confident]
    corner_boxes = np.stack([centre_x - width / 2, centre_y - height / 2, width, height], axis=1)
    picked = cv2.dnn.NMSBoxes(corner_boxes.tolist(), scores[confident].tolist(), confidence, iou)
    kept = np.asarray(picked, dtype=int).reshape(-1)
    x0, y0 = corner_boxes[kept, 0], corner_boxes[kept, 1]
    return np.stack([x0, y0, x0 + corner_boxes[kept, 2], y0 + corner_boxes[kept, 3]], axis=1)


def figure_boxes(xyxy: np.ndarray | list[list[float]], size: tuple[int, int]) -> list[Box]:
    """Boxes in the figure's pixels, clipped to it, empty ones dropped, in reading order: rows of boxes
    top to bottom, left to right within a row."""
    width, height = size
    boxes = []
    for x0, y0, x1, y1 in np.asarray(xyxy, dtype=np.float64).reshape(-1, 4).tolist():
        box = Box(max(0, int(x0)), max(0, int(y0)), min(width, round(x1)), min(height, round(y1)))
        if box.width > 0 and box.height > 0:
            boxes.append(box)
    return sorted(boxes, key=lambda box: (box.y0 // max(1, height // 20), box.x0))


def _opencv_message(error: cv2.error) -> str:
    return " ".join(str(error).split())


class OnnxYoloDetector:
    """An Ultralytics YOLO detection model exported to ONNX, run by OpenCV's dnn module."""

    def __init__(self, weights: Path, settings: DetectorParams) -> None:
        self.weights, self.settings = weights, settings
        try:
            self._net = cv2.dnn.readNetFromONNX(str(weights))
        except cv2.error as error:
            raise ValueError(
                f"curate.detector.yolo_weights: {weights} is not a readable ONNX model "
                f"({_opencv_message(error)})"
            ) from error

    def detect(self, image: Image.Image) -> list[Box]:
        size = self.settings.yolo_imgsz
        blob, placement = letterbox(image, size)
        self._net.setInput(blob)
        try:
            output = self._net.forward()
        except cv2.error as error:
            raise RuntimeError(
                f"curate.detector.yolo_weights: {self.weights} failed on a {size}x{size} input; is "
                f"curate.detector.yolo_imgsz the imgsz it was exported with? ({_opencv_message(error)})"
            ) from error
        try:
            found = decode_detections(output, self.settings.yolo_confidence, self.settings.yolo_iou)
        except ValueError as error:
            raise ValueError(f"curate.detector.yolo_weights: {self.weights}: {error}") from error
        return figure_boxes(placement.to_figure(found), image.size)


class UltralyticsYoloDetector:
    """Ultralytics ``.pt`` weights (a panel detector such as the paper's fine-tuned YOLO11-Nano), run by
    the ultralytics package, which the user installs."""

    def __init__(self, weights: Path, settings: DetectorParams) -> None:
        try:
            from ultralytics import YOLO
        except ImportError as error:
            raise RuntimeError(
                f"curate.detector.yolo_weights is set ({weights}) but the ultralytics package is not "
                f"installed ({error}); install it with: {YOLO_INSTALL_HINT}, export the model to ONNX "
                "(format=onnx) to run it without ultralytics, or set yolo_weights to null for the "
                "classical splitter"
            ) from error
        self._model: Any = YOLO(str(weights))
        self.settings = settings

    def detect(self, image: Image.Image) -> list[Box]:
        results = self._model.predict(
            image.convert("RGB"),
            conf=self.settings.yolo_confidence,
            iou=self.settings.yolo_iou,
            imgsz=self.settings.yolo_imgsz,
            agnostic_nms=True,
            verbose=False,
        )
        return figure_boxes(results[0].boxes.xyxy.tolist(), image.size)


def yolo_detector(settings: DetectorParams) -> OnnxYoloDetector | UltralyticsYoloDetector:
    """The detector for ``settings.yolo_weights``: an ``.onnx`` file through OpenCV, anything else through
    ultralytics."""
    path = Path(str(settings.yolo_weights))
    if not path.is_file():
        raise ValueError(f"curate.detector.yolo_weights: {settings.yolo_weights} is not a file")
    if path.suffix.lower() == ".onnx":
        return OnnxYoloDetector(path, settings)
    return UltralyticsYoloDetector(path, settings)
