"""The YOLO backend on an ONNX export, run by OpenCV: a tiny ONNX model with the YOLOv8/YOLO11 output
layout, written here byte by byte (the ``onnx`` package is not installed, and torch's exporter needs it),
whose anchors score the yellow under them, so the boxes it finds depend on the figure's pixels reaching
it letterboxed, in RGB and in 0-1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from sciir.figures.figure_work import FigureTask, curate_figure_file
from sciir.figures.panel_detector import DetectorParams
from sciir.figures.panel_split import Box, SplitSettings
from sciir.figures.panels import detector_for
from sciir.figures.params import CurateParams, StandardiseParams
from sciir.figures.privacy import PrivacyParams
from sciir.figures.yolo import decode_detections

IMGSZ = 128
# A 400x200 figure letterboxes into 128x128 at scale 0.32, 32 px of grey above and below.
FIGURE_SIZE = (400, 200)
YELLOW_PANELS = {"a": (20, 20, 180, 180), "b": (220, 20, 380, 180), "small": (190, 60, 210, 80)}
# Anchors (x0, y0, x1, y1 in input pixels), listed out of reading order.
ANCHORS = {
    "b": (72, 40, 120, 88),  # inside panel b: confidence 1
    "a": (8, 40, 56, 88),  # inside panel a: confidence 1
    "a shifted": (4, 40, 52, 88),  # 2.4 of 48 px on white: about 0.95, overlaps "a" at IoU 0.85
    "gap": (56, 70, 72, 88),  # 3.2 of 16 px on yellow: about 0.2
    "small": (61, 52, 67, 57),  # inside the small yellow square: confidence 1
    "empty 1": (0, 0, 8, 8),  # on the grey padding: about 0.55, but only to give the layout
    "empty 2": (120, 0, 128, 8),  # more anchors than rows, as every real export has
}
OTHER_CLASS_SCORE = 0.05
# The anchors' boxes in the figure's pixels (input pixels / 0.32, less the 32 px padding above).
EXPECTED = {"a": Box(25, 25, 175, 175), "b": Box(225, 25, 375, 175), "small": Box(190, 62, 209, 78)}


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # protobuf writes negative int64 as ten bytes
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _int_field(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes_field(field: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _tensor(name: str, array: np.ndarray) -> bytes:
    """An onnx.TensorProto: dims, data_type (1 float, 7 int64), name, raw_data."""
    kind = {np.dtype(np.float32): 1, np.dtype(np.int64): 7}[array.dtype]
    dims = b"".join(_int_field(1, dim) for dim in array.shape)
    return dims + _int_field(2, kind) + _bytes_field(8, name) + _bytes_field(9, array.tobytes())


def _float_input(name: str, shape: tuple[int, ...]) -> bytes:
    """An onnx.ValueInfoProto of a float tensor of this shape."""
    dims = b"".join(_bytes_field(1, _int_field(1, dim)) for dim in shape)
    tensor_type = _int_field(1, 1) + _bytes_field(2, dims)
    return _bytes_field(1, name) + _bytes_field(2, _bytes_field(1, tensor_type))


def _node(op: str, inputs: list[str], outputs: list[str], **int_attributes: int) -> bytes:
    """An onnx.NodeProto with integer attributes (AttributeProto type 2)."""
    attributes = b"".join(
        _bytes_field(5, _bytes_field(1, name) + _int_field(20, 2) + _int_field(3, value))
        for name, value in int_attributes.items()
    )
    wiring = b"".join(_bytes_field(1, name) for name in inputs) + b"".join(
        _bytes_field(2, n) for n in outputs
    )
    return wiring + _bytes_field(4, op) + attributes


def yellow_scoring_yolo(imgsz: int = IMGSZ) -> bytes:
    """An ONNX model (opset 13): output [1, 4 + 2 classes, anchors]; class 0 scores the mean yellowness
    (1 - blue, with RGB in 0-1) under each anchor, class 1 is a constant low score."""
    masks = np.zeros((imgsz, imgsz, len(ANCHORS)), np.float32)
    for index, (x0, y0, x1, y1) in enumerate(ANCHORS.values()):
        masks[y0:y1, x0:x1, index] = 1 / ((x1 - x0) * (y1 - y0))
    corners = np.array(list(ANCHORS.values()), np.float32).T
    centre_boxes = np.stack(
        [(corners[0] + corners[2]) / 2, (corners[1] + corners[3]) / 2, *corners[2:] - corners[:2]]
    )
    initializers = [
        _tensor("blue_to_yellowness", np.array([0, 0, -1], np.float32).reshape(1, 3, 1, 1)),
        _tensor("one", np.array([1], np.float32)),
        _tensor("flat", np.array([1, -1], np.int64)),
        _tensor("masks", masks.reshape(imgsz * imgsz, len(ANCHORS))),
        _tensor("boxes", np.ascontiguousarray(centre_boxes, np.float32)),
        _tensor("other_class", np.full((1, len(ANCHORS)), OTHER_CLASS_SCORE, np.float32)),
        _tensor("output_shape", np.array([1, 6, len(ANCHORS)], np.int64)),
    ]
    nodes = [
        _node("Conv", ["images", "blue_to_yellowness", "one"], ["yellowness"]),
        _node("Reshape", ["yellowness", "flat"], ["pixels"]),
        _node("MatMul", ["pixels", "masks"], ["scores"]),
        _node("Concat", ["boxes", "scores", "other_class"], ["rows"], axis=0),
        _node("Reshape", ["rows", "output_shape"], ["output0"]),
    ]
    graph = (
        b"".join(_bytes_field(1, node) for node in nodes)
        + _bytes_field(2, "yellow_scoring_yolo")
        + b"".join(_bytes_field(5, tensor) for tensor in initializers)
        + _bytes_field(11, _float_input("images", (1, 3, imgsz, imgsz)))
        + _bytes_field(12, _float_input("output0", (1, 6, len(ANCHORS))))
    )
    opset = _bytes_field(1, "") + _int_field(2, 13)
    return _int_field(1, 8) + _bytes_field(8, opset) + _bytes_field(7, graph)  # ir_version 8


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "panels.onnx"
    path.write_bytes(yellow_scoring_yolo())
    return path


def _figure() -> Image.Image:
    pixels = np.full((FIGURE_SIZE[1], FIGURE_SIZE[0], 3), 255, np.uint8)
    for x0, y0, x1, y1 in YELLOW_PANELS.values():
        pixels[y0:y1, x0:x1] = (255, 255, 0)
    return Image.fromarray(pixels)


def _detect(model: Path, **settings: float) -> list[Box]:
    params = DetectorParams(yolo_weights=str(model), yolo_imgsz=IMGSZ, **settings)
    return detector_for(SplitSettings(), params).detect(_figure())


def _near(found: Box, expected: Box) -> bool:
    pairs = [
        (found.x0, expected.x0),
        (found.y0, expected.y0),
        (found.x1, expected.x1),
        (found.y1, expected.y1),
    ]
    return all(abs(a - b) <= 1 for a, b in pairs)


def test_onnx_yolo_finds_the_panels_in_reading_order_without_weak_or_overlapping_boxes(model: Path) -> None:
    boxes = _detect(model)
    assert len(boxes) == 3, boxes
    for found, name in zip(boxes, ["a", "b", "small"], strict=True):
        assert _near(found, EXPECTED[name]), (name, found)


def test_the_weak_and_the_overlapping_box_are_there_to_drop(model: Path) -> None:
    """The model does score them: a lower threshold keeps the weak box, a looser NMS the shifted one."""
    assert len(_detect(model, yolo_confidence=0.1)) == 4
    with_overlap = _detect(model, yolo_iou=0.9)
    assert len(with_overlap) == 4
    assert any(_near(box, Box(12, 25, 162, 175)) for box in with_overlap)  # "a shifted", mapped back


def test_curate_applies_the_geometric_rules_to_the_onnx_boxes(model: Path, tmp_path: Path) -> None:
    figure = tmp_path / "figure.png"
    _figure().save(figure)
    settings = CurateParams(
        detector=DetectorParams(yolo_weights=str(model), yolo_imgsz=IMGSZ),
        standardise=StandardiseParams(size_px=64),
        privacy=PrivacyParams(ocr_ids=False),
    )
    outcome = curate_figure_file(FigureTask(str(figure), settings))
    assert outcome.problem is None
    assert [panel.problem is None for panel in outcome.panels] == [True, True, False]
    assert "short side below 128 px" in str(outcome.panels[2].problem)
    assert all(panel.png for panel in outcome.panels[:2])


def test_a_corrupt_onnx_file_is_named(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(yellow_scoring_yolo()[:300])
    with pytest.raises(ValueError, match=r"yolo_weights: .*corrupt\.onnx is not a readable ONNX model"):
        detector_for(SplitSettings(), DetectorParams(yolo_weights=str(corrupt)))


def test_an_input_size_other_than_the_exports_says_which_setting(model: Path) -> None:
    detector = detector_for(SplitSettings(), DetectorParams(yolo_weights=str(model), yolo_imgsz=160))
    with pytest.raises(RuntimeError, match=r"panels\.onnx failed on a 160x160 input.*yolo_imgsz"):
        detector.detect(_figure())


def test_decoding_finds_nothing_below_the_threshold_and_refuses_an_end_to_end_layout() -> None:
    assert decode_detections(np.full((1, 6, 8), 0.2, np.float32), 0.25, 0.7).shape == (0, 4)
    with pytest.raises(ValueError, match=r"\[1, 300, 6\] is not a YOLOv8/YOLO11 detection output"):
        decode_detections(np.zeros((1, 300, 6), np.float32), 0.25, 0.7)  # YOLO26's NMS-free export
