"""Where the text is in an image, by image analysis: connected ink darker than its surroundings, of glyph
size, in rows of similar marks, or in columns (labels written upwards) or slanted rows, dark on light and
light on dark (``text_layout``). An image without a plain background (a photograph, noise) is not
analysed. The layout decides how a reading is scaled and turned, and whether a label not found may be
absent (``TextLayout.legibility``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sciir.backends.readers.text import Legibility, OcrLine

# Marks taller or wider than these fractions of the image are drawing, not text (standardised
# panels can scale a title's letters up to about a tenth of the image).
MAX_GLYPH_HEIGHT = 0.15
MAX_GLYPH_WIDTH = 0.2
# Marks lower than this (pixels of the original image) are specks, dots and thin lines; letters of
# the smallest legible labels in web renditions of figures are about 4-5 px tall.
_MIN_MARK_PX = 4
# Ink is darker than the lightest grey within this window (pixels) by at least this much.
_BACKGROUND_WINDOW = 15
_INK_CONTRAST = 40
_INK_MAX_GREY = 200
# More marks than this and the image is a photograph or a dense plot: its text is not analysed mark
# by mark (and the reader is not trusted with a "no").
_MAX_MARKS = 4000
# A text-like mark counts as read when it lies in a word read with at least this Tesseract confidence
# (0-100): short words ("P", "V") are read right with modest confidence.
_CONFIDENT = 50.0
_CONFIDENT_LINE = 70.0
# An image whose most common grey (within 4 levels) covers less than this share has no plain
# background: a photograph or noise (drawn figures, even with micrographs inset, have 40% or more).
_MIN_BACKGROUND_SHARE = 0.3


@dataclass(frozen=True)
class TextLayout:
    """Text-like marks of one image: boxes (x0, y0, x1, y1) in pixels; for each, the turn (degrees,
    counterclockwise) that makes its text read left to right (0 for a row; -90 for a label written
    upwards; -45 or 45 for a slanted one); ``glyph_px``: their typical height (0 if none); ``busy``: a
    photograph, noise or a dense plot, whose text is not analysed mark by mark."""

    boxes: np.ndarray
    angles: np.ndarray
    glyph_px: float
    busy: bool = False

    def unread(self, lines_by_angle: Mapping[int, Sequence[OcrLine]]) -> np.ndarray:
        """True for each mark whose centre lies in no word read with confidence (box padded a little) in
        a view turned so that the mark's row reads left to right (text read across a slanted or upright
        label is garbage). ``lines_by_angle``: the lines read in views turned by each angle. A word is
        read with confidence at ``_CONFIDENT`` or more, or in a line of ``_CONFIDENT_LINE`` on average."""
        unread = np.ones(len(self.boxes), dtype=bool)
        cx = (self.boxes[:, 0] + self.boxes[:, 2]) / 2
        cy = (self.boxes[:, 1] + self.boxes[:, 3]) / 2
        for angle, lines in lines_by_angle.items():
            marks = np.flatnonzero(self.angles == angle)
            confident = [
                w
                for line in lines
                for w in line.words
                if w.confidence >= _CONFIDENT or line.confidence >= _CONFIDENT_LINE
            ]
            if len(marks) == 0 or not confident:
                continue
            boxes = np.array(
                [(w.left, w.top, w.left + w.width, w.top + w.height) for w in confident], dtype=float
            )
            pad = 0.25 * np.minimum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])[:, None]
            boxes = boxes + np.hstack([-pad, -pad, pad, pad])
            x, y = cx[marks, None], cy[marks, None]
            inside = (
                (x >= boxes[None, :, 0])
                & (x <= boxes[None, :, 2])
                & (y >= boxes[None, :, 1])
                & (y <= boxes[None, :, 3])
            )
            unread[marks[inside.any(axis=1)]] = False
        return unread

    def holding(self, lines: Sequence[OcrLine], angle: int) -> tuple[OcrLine, ...]:
        """The lines whose box holds the centre of a text-like mark of rows turned by ``angle``."""
        marks = self.boxes[self.angles == angle]
        cx, cy = (marks[:, 0] + marks[:, 2]) / 2, (marks[:, 1] + marks[:, 3]) / 2
        return tuple(
            line
            for line in lines
            if ((cx >= line.box[0]) & (cx <= line.box[2]) & (cy >= line.box[1]) & (cy <= line.box[3])).any()
        )

    def legibility(self, lines_by_angle: Mapping[int, Sequence[OcrLine]]) -> Legibility:
        """How many marks are left unread. Thin unread marks (bars: a box's edge beside a label, a rule)
        are not counted: a word of three letters or more that OCR missed has a wider one."""
        if self.busy:
            return Legibility(len(self.boxes), len(self.boxes), busy=True)
        width, height = self.boxes[:, 2] - self.boxes[:, 0], self.boxes[:, 3] - self.boxes[:, 1]
        along, across = np.where(self.angles == 0, width, height), np.where(self.angles == 0, height, width)
        thin = along < 0.3 * across
        return Legibility(len(self.boxes), int((self.unread(lines_by_angle) & ~thin).sum()))


def _ink(grey: np.ndarray) -> np.ndarray:
    """Pixels clearly darker than the lightest grey around them (text on white or on a pale fill)."""
    import cv2

    kernel = np.ones((_BACKGROUND_WINDOW, _BACKGROUND_WINDOW), dtype=np.uint8)
    background = cv2.dilate(grey, kernel).astype(np.int16)
    return (grey.astype(np.int16) < background - _INK_CONTRAST) & (grey < _INK_MAX_GREY)


def _mark_boxes(ink: np.ndarray) -> np.ndarray:
    """Boxes (x0, y0, x1, y1) of connected ink of glyph size: not specks, lines or large shapes."""
    import cv2

    _, _, stats, _ = cv2.connectedComponentsWithStats(ink.astype(np.uint8), connectivity=8)
    x, y, w, h, area = stats[1:].T
    height, width = ink.shape
    glyph = (
        (np.maximum(w, h) >= _MIN_MARK_PX)
        & (np.minimum(w, h) >= 2)
        & (h <= MAX_GLYPH_HEIGHT * height)
        & (w <= MAX_GLYPH_WIDTH * width)
        & (h <= MAX_GLYPH_HEIGHT * width)
        & (w <= MAX_GLYPH_WIDTH * height)
        & (area <= 0.8 * w * h)  # a filled rectangle is a swatch or a bar, not a letter
    )
    boxes: np.ndarray = np.stack([x, y, x + w, y + h], axis=1)[glyph]
    return boxes


def _rows(boxes: np.ndarray) -> list[np.ndarray]:
    """Groups (indices) of marks side by side in a row: similar height, aligned, close together."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    count = len(boxes)
    if count == 0:
        return []
    x0, y0, x1, y1 = (boxes[:, i].astype(float) for i in range(4))
    height, middle = y1 - y0, (y0 + y1) / 2
    order = np.argsort(x0)
    starts = x0[order]
    pairs_a, pairs_b = [], []
    for rank, index in enumerate(order):
        # Neighbours to the right start before this mark ends plus a word space of the taller mark.
        reach = x1[index] + 1.2 * 2.5 * height[index]
        stop = np.searchsorted(starts, reach, side="right")
        others = order[rank + 1 : stop]
        if len(others) == 0:
            continue
        tall = np.maximum(height[index], height[others])
        short = np.maximum(1.0, np.minimum(height[index], height[others]))
        gap = x0[others] - x1[index]
        near = (
            (tall / short <= 2.5)
            & (np.abs(middle[others] - middle[index]) <= 0.4 * tall)
            & (gap <= 1.2 * tall)
        )
        pairs_a.extend([index] * int(near.sum()))
        pairs_b.extend(others[near].tolist())
    graph = coo_matrix((np.ones(len(pairs_a)), (pairs_a, pairs_b)), shape=(count, count))
    _, labels = connected_components(graph, directed=False)
    return [np.flatnonzero(labels == label) for label in np.unique(labels)]


def _text_like(boxes: np.ndarray) -> np.ndarray:
    """True for marks in a row that looks like text: two marks or more, or one mark as wide as a word."""
    like = np.zeros(len(boxes), dtype=bool)
    for group in _rows(boxes):
        members = boxes[group]
        height = float(np.median(members[:, 3] - members[:, 1]))
        length = float(members[:, 2].max() - members[:, 0].min())
        if (len(group) >= 2 and length >= 1.5 * height) or (len(group) == 1 and length >= 2.5 * height):
            like[group] = True
    return like


def _turned_boxes(boxes: np.ndarray, angle: float) -> np.ndarray:
    """Square boxes around the marks' centres as they would sit in the image turned by ``angle`` degrees
    (counterclockwise), sized by the marks' larger side (a slanted letter's box is wider than it)."""
    radians = np.radians(angle)
    cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
    x = np.cos(radians) * cx + np.sin(radians) * cy
    y = -np.sin(radians) * cx + np.cos(radians) * cy
    half = 0.4 * np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1])
    return np.stack([x - half, y - half, x + half, y + half], axis=1)


def _marks(ink: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Text-like marks of one polarity: boxes, the turn that makes each read left to right, too busy."""
    boxes = _mark_boxes(ink)
    angles = np.zeros(len(boxes), dtype=int)
    if len(boxes) > _MAX_MARKS:
        return boxes, angles, True
    text_like = _text_like(boxes)
    # Marks in no row: perhaps letters of a label written upwards (a column: x and y swapped), or slanted.
    for angle, turned in (
        (-90, lambda b: b[:, [1, 0, 3, 2]]),
        (-45, lambda b: _turned_boxes(b, -45)),
        (45, lambda b: _turned_boxes(b, 45)),
    ):
        rest = np.flatnonzero(~text_like)
        if len(rest) < 2:
            break
        found = _text_like(turned(boxes[rest].astype(float)))
        text_like[rest[found]] = True
        angles[rest[found]] = angle
    return boxes[text_like], angles[text_like], False


def _plain_background(grey: np.ndarray) -> bool:
    """Whether most of the image is one even grey (a drawing's background), unlike a photograph or noise."""
    histogram = np.bincount(grey.ravel(), minlength=256)
    mode = int(histogram.argmax())
    return bool(histogram[max(0, mode - 4) : mode + 5].sum() >= _MIN_BACKGROUND_SHARE * grey.size)


def _inside_any(boxes: np.ndarray, containers: np.ndarray) -> np.ndarray:
    """True for each box that lies within one of ``containers`` (compared 256 boxes at a time)."""
    within = np.zeros(len(boxes), dtype=bool)
    for start in range(0, len(boxes) if len(containers) else 0, 256):
        chunk = boxes[start : start + 256]
        within[start : start + 256] = (
            (chunk[:, None, 0] >= containers[None, :, 0])
            & (chunk[:, None, 1] >= containers[None, :, 1])
            & (chunk[:, None, 2] <= containers[None, :, 2])
            & (chunk[:, None, 3] <= containers[None, :, 3])
        ).any(axis=1)
    return within


def text_layout(grey: np.ndarray) -> TextLayout:
    """The marks that look like text in a grey image, dark on light and light on dark."""
    if not _plain_background(grey):
        return TextLayout(np.zeros((0, 4), dtype=int), np.zeros(0, dtype=int), 0.0, busy=True)
    dark_ink = _ink(grey)
    dark, dark_angles, dark_busy = _marks(dark_ink)
    light, light_angles, light_busy = _marks(_ink(255 - grey))
    if not (dark_busy or light_busy):
        # Light marks inside dark ones are the counters of letters ("o", "e"), not light text.
        counters = _inside_any(light, _mark_boxes(dark_ink))
        light, light_angles = light[~counters], light_angles[~counters]
    boxes = np.concatenate([dark, light]).reshape(-1, 4)
    angles = np.concatenate([dark_angles, light_angles]).astype(int)
    upright = dark[dark_angles == 0] if (dark_angles == 0).any() else dark
    glyph_px = float(np.median(upright[:, 3] - upright[:, 1])) if len(upright) else 0.0
    return TextLayout(boxes, angles, glyph_px, busy=dark_busy or light_busy)
