"""Viola-Jones face detection with OpenCV's trained Haar cascades, evaluated in NumPy.

OpenCV 5 dropped ``CascadeClassifier`` from its main module, and its DNN face detector needs model
weights that nothing here ships; the trained cascades themselves are plain XML files (Debian's
``opencv-data`` installs them under /usr/share/opencv4/haarcascades). This module reads a stump-based
cascade in OpenCV's XML format and evaluates it as OpenCV does: an image pyramid, windows of the
cascade's size, each window's features normalised by its standard deviation, a stage passed when the
sum of its stumps' leaf values reaches the stage threshold, and raw hits grouped (a face needs
``min_neighbours`` overlapping hits, as in ``detectMultiScale``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from PIL import Image

DEFAULT_CASCADE = Path("/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml")
# A Haar feature has two or three rectangles; fewer are padded with rectangles of weight 0.
_MAX_RECTS = 3
# Stumps evaluated at once are bounded so that their rectangle sums (stumps x windows) stay small.
_CELLS_AT_ONCE = 1 << 20


@dataclass(frozen=True)
class Stage:
    """One boosted stage: per stump a feature index, a threshold and two leaf values."""

    features: np.ndarray
    thresholds: np.ndarray
    left: np.ndarray
    right: np.ndarray
    threshold: float
    rects: np.ndarray = field(default_factory=lambda: np.zeros((0, _MAX_RECTS, 5)))


@dataclass(frozen=True)
class Cascade:
    """A cascade: window size, stages, and each feature's rectangles (x, y, w, h, weight)."""

    width: int
    height: int
    stages: tuple[Stage, ...]
    rects: tuple[np.ndarray, ...]


def _numbers(text: str | None) -> list[float]:
    return [float(value) for value in (text or "").split()]


def load_cascade(path: Path) -> Cascade:
    """A stump-based Haar cascade from OpenCV's XML format; ValueError naming the file otherwise."""
    if not path.is_file():
        raise ValueError(
            f"face cascade {path} is missing: install Debian's opencv-data (apt-get install opencv-data) "
            "or set curate.privacy.face_cascade to a Haar cascade XML file"
        )
    root = ElementTree.parse(path).getroot().find("cascade")
    if root is None or (root.findtext("featureType") or "").strip() != "HAAR":
        raise ValueError(f"face cascade {path}: not a Haar cascade in OpenCV's XML format")
    stages = []
    for stage in root.find("stages") or []:
        nodes = [_numbers(weak.findtext("internalNodes")) for weak in stage.find("weakClassifiers") or []]
        leaves = [_numbers(weak.findtext("leafValues")) for weak in stage.find("weakClassifiers") or []]
        if any(len(node) != 4 or len(leaf) != 2 for node, leaf in zip(nodes, leaves, strict=True)):
            raise ValueError(f"face cascade {path}: only stump (depth-1) cascades are supported")
        stages.append(
            Stage(
                features=np.array([int(node[2]) for node in nodes]),
                thresholds=np.array([node[3] for node in nodes]),
                left=np.array([leaf[0] for leaf in leaves]),
                right=np.array([leaf[1] for leaf in leaves]),
                threshold=float(stage.findtext("stageThreshold") or 0),
            )
        )
    rects = []
    for feature in root.find("features") or []:
        if (feature.findtext("tilted") or "0").strip() == "1":
            raise ValueError(f"face cascade {path}: tilted features are not supported")
        rects.append(np.array([_numbers(rect.text) for rect in feature.find("rects") or []]))
    width, height = int(root.findtext("width") or 0), int(root.findtext("height") or 0)
    stages = [replace(stage, rects=_stage_rects(stage, rects, path)) for stage in stages]
    return Cascade(width, height, tuple(stages), tuple(rects))


def _stage_rects(stage: Stage, rects: list[np.ndarray], path: Path) -> np.ndarray:
    """Each stump's rectangles (x, y, w, h, weight) as one array (stumps x _MAX_RECTS x 5)."""
    packed = np.zeros((len(stage.features), _MAX_RECTS, 5))
    for index, feature in enumerate(stage.features):
        feature_rects = rects[int(feature)]
        if not 1 <= len(feature_rects) <= _MAX_RECTS:
            raise ValueError(f"face cascade {path}: a feature with {len(feature_rects)} rectangles")
        packed[index, : len(feature_rects)] = feature_rects
    return packed


def _integral(grey: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Summed-area tables of values and squares, with a leading row and column of zeros."""
    values = np.pad(grey.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    squares = np.pad((grey * grey).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    return values, squares


def _rect_sums(table: np.ndarray, ys: np.ndarray, xs: np.ndarray, rect: np.ndarray) -> np.ndarray:
    x, y, w, h = (int(value) for value in rect[:4])
    y0, x0 = ys + y, xs + x
    return table[y0 + h, x0 + w] - table[y0, x0 + w] - table[y0 + h, x0] + table[y0, x0]


def _stage_sum(
    stage: Stage, table: np.ndarray, ys: np.ndarray, xs: np.ndarray, norm: np.ndarray
) -> np.ndarray:
    """The sum of a stage's stump values at every window, with one gather per corner for many stumps at
    once (a loop per rectangle costs a NumPy call each: most of the time on the small late stages). The
    arithmetic is OpenCV's order, feature by feature, so the sums are the same to the last bit."""
    total = np.zeros(ys.size)
    flat, row = table.ravel(), table.shape[1]
    origins = ys * row + xs
    block = max(1, _CELLS_AT_ONCE // max(1, ys.size * _MAX_RECTS))
    for start in range(0, len(stage.features), block):
        rects = stage.rects[start : start + block]
        x, y, w, h, weight = (rects[..., k].astype(np.int64) if k < 4 else rects[..., k] for k in range(5))
        top, bottom = y * row, (y + h) * row
        corners = [top + x + w, bottom + x, top + x, bottom + x + w]
        top_right, bottom_left, top_left, bottom_right = (flat[origins + c[..., None]] for c in corners)
        sums = bottom_right - top_right - bottom_left + top_left
        value = weight[..., 0, None] * sums[:, 0]
        for k in range(1, _MAX_RECTS):
            value = value + weight[..., k, None] * sums[:, k]
        limits = stage.thresholds[start : start + block, None] * norm
        leaves = np.where(
            value < limits, stage.left[start : start + block, None], stage.right[start : start + block, None]
        )
        for leaf in leaves:
            total += leaf
    return total


def _raw_hits(cascade: Cascade, grey: np.ndarray, step: int) -> list[tuple[int, int]]:
    """Window origins (x, y) of one pyramid level that pass every stage."""
    height, width = grey.shape
    if height < cascade.height or width < cascade.width:
        return []
    values, squares = _integral(grey)
    ys, xs = np.mgrid[0 : height - cascade.height + 1 : step, 0 : width - cascade.width + 1 : step]
    ys, xs = ys.ravel(), xs.ravel()
    # OpenCV normalises by the standard deviation over the window less a one-pixel border.
    inner = np.array([1, 1, cascade.width - 2, cascade.height - 2, 1.0])
    area = inner[2] * inner[3]
    spread = area * _rect_sums(squares, ys, xs, inner) - _rect_sums(values, ys, xs, inner) ** 2
    textured = spread > 0
    ys, xs, norm = ys[textured], xs[textured], np.sqrt(spread[textured])
    for stage in cascade.stages:
        total = _stage_sum(stage, values, ys, xs, norm)
        passed = total >= stage.threshold
        ys, xs, norm = ys[passed], xs[passed], norm[passed]
        if ys.size == 0:
            return []
    return list(zip(xs.tolist(), ys.tolist(), strict=True))


def _similar(a: tuple[int, int, int], b: tuple[int, int, int], eps: float = 0.2) -> bool:
    """OpenCV's rectangle similarity for grouping: corners within eps of the mean size."""
    delta = eps * (a[2] + b[2]) / 2
    return abs(a[0] - b[0]) <= delta and abs(a[1] - b[1]) <= delta and abs(a[2] - b[2]) <= delta


def _grouped(hits: list[tuple[int, int, int]], min_neighbours: int) -> list[tuple[int, int, int]]:
    """Equivalence classes of similar hits (transitively, as OpenCV's partition) with more than
    ``min_neighbours`` members, each averaged into one face."""
    parent = list(range(len(hits)))

    def root(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    for i, a in enumerate(hits):
        for j in range(i):
            if _similar(a, hits[j]):
                parent[root(i)] = root(j)
    classes: dict[int, list[tuple[int, int, int]]] = {}
    for index, hit in enumerate(hits):
        classes.setdefault(root(index), []).append(hit)
    return [
        (
            round(float(np.mean([m[0] for m in members]))),
            round(float(np.mean([m[1] for m in members]))),
            round(float(np.mean([m[2] for m in members]))),
        )
        for members in classes.values()
        if len(members) > min_neighbours
    ]


def detect_faces(
    cascade: Cascade,
    image: Image.Image,
    min_size_px: int = 32,
    scale_factor: float = 1.15,
    min_neighbours: int = 3,
    max_side_px: int = 480,
) -> list[tuple[int, int, int]]:
    """Faces as (x, y, size) in ``image`` pixels. The image is first reduced to ``max_side_px`` (a face
    smaller than ``min_size_px`` there is too small to recognise)."""
    grey_image = image.convert("L")
    shrink = min(1.0, max_side_px / max(grey_image.size))
    if shrink < 1.0:
        size = (max(1, round(grey_image.width * shrink)), max(1, round(grey_image.height * shrink)))
        grey_image = grey_image.resize(size, Image.Resampling.BILINEAR)
    hits: list[tuple[int, int, int]] = []
    scale = max(1.0, min_size_px / cascade.width)
    while grey_image.width / scale >= cascade.width and grey_image.height / scale >= cascade.height:
        level_size = (round(grey_image.width / scale), round(grey_image.height / scale))
        level = np.asarray(grey_image.resize(level_size, Image.Resampling.BILINEAR), dtype=np.float64)
        step = 2 if scale <= 2 else 1  # as OpenCV: coarse steps on the finest levels
        window = round(cascade.width * scale)
        hits.extend((round(x * scale), round(y * scale), window) for x, y in _raw_hits(cascade, level, step))
        scale *= scale_factor
    return [
        (round(x / shrink), round(y / shrink), round(s / shrink))
        for x, y, s in _grouped(hits, min_neighbours)
    ]
