"""What a drawing shows besides text and boxes, by classical image analysis: plot axes (a long horizontal and a
long vertical line meeting at a corner, each with numbers read along it, and the quantities labelled beside
them) and line art (ink that is not text, not a shape drawn around a label or a stroke touching one, and not
inside plot axes: molecule bonds, circuit wires and symbols). Nothing here reads a caption or guesses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from sciir.backends.readers.diagram import Diagram
from sciir.backends.readers.text import OcrLine, OcrReading, OcrWord

PixelBox = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive)

# Ink darker than this counts (matplotlib's thin spines are anti-aliased to mid greys).
_INK = 160
# An axis is a straight run of ink at least this share of the image's width (x) or height (y).
_AXIS_SHARE = 0.3
# Its corner: the two lines' ends within this many pixels.
_CORNER_PX = 12
# Tick numbers sit within this many pixels of their axis; an axis needs this many.
_TICK_REACH_PX = 45
_MIN_TICKS = 2
# Line art: a connected piece of ink at least this many pixels on its shorter side (a glyph left
# unread is smaller) once text, shapes, strokes and plot areas are taken out.
_MIN_ART_SIDE = 50
# A tick number; OCR may read the tick mark beside it as a bracket, bar or stop ("20]", "10;").
_NUMBER = re.compile(r"^[-\u2212]?\d+(?:[.,]\d+)?%?[\]\)|;:,.\-]?$")
# A tick number's box may touch its axis line by a few pixels.
_TICK_OVERLAP_PX = 6


@dataclass(frozen=True)
class PlotAxes:
    """A plot's frame: the box between its x axis and its y axis, and the quantities labelled on them."""

    box: PixelBox
    x_label: str | None
    y_label: str | None


def _ink(grey: np.ndarray) -> np.ndarray:
    return grey < _INK


def _straight_runs(ink: np.ndarray, length: int, horizontal: bool) -> list[PixelBox]:
    """Boxes of straight ink runs at least ``length`` long, horizontal or vertical."""
    import cv2

    kernel = np.ones((1, length) if horizontal else (length, 1), dtype=np.uint8)
    opened = cv2.morphologyEx(ink.astype(np.uint8), cv2.MORPH_OPEN, kernel)
    count, _, stats, _ = cv2.connectedComponentsWithStats(opened, connectivity=8)
    return [(x, y, x + w, y + h) for x, y, w, h, _ in stats[1:count].tolist()]


def _word_box(reading: OcrReading, word: OcrWord) -> PixelBox:
    x0, y0, x1, y1 = reading.image_box(word)
    return int(x0), int(y0), int(x1), int(y1)


def _numbers(reading: OcrReading) -> list[PixelBox]:
    """Boxes of the words read as plain numbers (tick labels)."""
    return [
        _word_box(reading, word) for line in reading.lines for word in line.words if _NUMBER.match(word.text)
    ]


def _ticks_below(axis: PixelBox, numbers: Sequence[PixelBox]) -> int:
    x0, _, x1, y1 = axis
    return sum(
        x0 - 10 <= (a + c) / 2 <= x1 + 10 and -_TICK_OVERLAP_PX <= b - y1 <= _TICK_REACH_PX
        for a, b, c, _ in numbers
    )


def _ticks_left(axis: PixelBox, numbers: Sequence[PixelBox]) -> int:
    x0, y0, _, y1 = axis
    return sum(
        y0 - 10 <= (b + d) / 2 <= y1 + 10 and -_TICK_OVERLAP_PX <= x0 - c <= _TICK_REACH_PX
        for _, b, c, d in numbers
    )


def _corner(x_axis: PixelBox, y_axis: PixelBox) -> bool:
    """The y axis's foot meets the x axis's left end."""
    return abs(y_axis[3] - x_axis[3]) <= _CORNER_PX and abs(y_axis[0] - x_axis[0]) <= _CORNER_PX


def _nearest_label(
    lines: Sequence[OcrLine], point: tuple[float, float], accept: Callable[[PixelBox], bool]
) -> str | None:
    """The text of the line nearest ``point`` among those ``accept`` takes (by their box)."""
    found = [
        (
            abs((line.box[0] + line.box[2]) / 2 - point[0]) + abs((line.box[1] + line.box[3]) / 2 - point[1]),
            line,
        )
        for line in lines
        if accept(line.box)
    ]
    return min(found, key=lambda item: item[0])[1].text if found else None


def plot_axes(grey: np.ndarray, reading: OcrReading, labels: Sequence[str]) -> PlotAxes | None:
    """The plot axes drawn in the image, or None: a horizontal and a vertical line meeting at a corner,
    each with tick numbers read along it."""
    height, width = grey.shape
    ink = _ink(grey)
    numbers = _numbers(reading)
    x_axes = [
        box
        for box in _straight_runs(ink, int(_AXIS_SHARE * width), True)
        if _ticks_below(box, numbers) >= _MIN_TICKS
    ]
    y_axes = [
        box
        for box in _straight_runs(ink, int(_AXIS_SHARE * height), False)
        if _ticks_left(box, numbers) >= _MIN_TICKS
    ]
    pairs = [(x, y) for x in x_axes for y in y_axes if _corner(x, y)]
    if not pairs:
        return None
    x_axis, y_axis = max(pairs, key=lambda pair: (pair[0][2] - pair[0][0]) * (pair[1][3] - pair[1][1]))
    box = (y_axis[0], y_axis[1], x_axis[2], x_axis[3])
    named = [line for line in reading.lines if line.text in labels]
    return PlotAxes(box, _x_quantity(named, box), _y_quantity(named, box))


def _x_quantity(lines: Sequence[OcrLine], frame: PixelBox) -> str | None:
    """The label nearest below the middle of the x axis."""
    x0, _, x1, y1 = frame
    return _nearest_label(
        lines, ((x0 + x1) / 2, y1), lambda b: b[1] >= y1 and x0 - 10 <= (b[0] + b[2]) / 2 <= x1 + 10
    )


def _y_quantity(lines: Sequence[OcrLine], frame: PixelBox) -> str | None:
    """The label nearest the top of the y axis, above it (level text, as the sample draws it) or beside it."""
    x0, y0 = frame[0], frame[1]
    return _nearest_label(
        lines, (x0, y0), lambda b: b[3] <= y0 + 10 and b[2] >= x0 - 150 and b[0] <= x0 + 100
    )


def _covered(shape: tuple[int, ...], boxes: Sequence[PixelBox], grow: int) -> np.ndarray:
    """A mask of ``boxes``, each grown by ``grow`` pixels."""
    mask = np.zeros(shape, dtype=bool)
    for x0, y0, x1, y1 in boxes:
        mask[max(0, y0 - grow) : max(0, y1 + grow), max(0, x0 - grow) : max(0, x1 + grow)] = True
    return mask


def _touching_shapes(ink: np.ndarray, boxes: Sequence[PixelBox]) -> np.ndarray:
    """Ink in the labelled shapes, their outlines, and every piece of ink reaching one (arrows)."""
    import cv2

    if not boxes:
        return np.zeros_like(ink)
    near = _covered(ink.shape, boxes, 4)
    _, pieces = cv2.connectedComponents((ink & ~near).astype(np.uint8), connectivity=8)
    reach = cv2.dilate(near.astype(np.uint8), np.ones((5, 5), dtype=np.uint8)).astype(bool)
    touching = np.unique(pieces[reach & ink])
    return near | np.isin(pieces, touching[touching > 0])


def line_art(
    grey: np.ndarray, reading: OcrReading, diagram: Diagram, labels: Sequence[str], axes: PlotAxes | None
) -> list[PixelBox]:
    """Boxes of the structural drawings: pieces of ink at least ``_MIN_ART_SIDE`` on each side left when
    text read, the shapes drawn around labels and what touches them, and the plot area are taken out.
    (A closed ring of bonds or a circuit loop encloses white too, but holds no label of its own.)"""
    import cv2

    ink = _ink(grey)
    # Only text read as labels is text: OCR also "reads" low-confidence marks over bonds and symbols.
    label_words = {word for label in labels for word in label.split()}
    words = [_word_box(reading, word) for line in reading.lines if line.text in labels for word in line.words]
    ink &= ~_covered(ink.shape, words, 2)
    boxes = [
        shape.box
        for shape in diagram.shapes
        if shape.holds_a_label and label_words.intersection(shape.text.split())
    ]
    ink &= ~_touching_shapes(ink, boxes)
    if axes is not None:
        ink &= ~_covered(ink.shape, [axes.box], _TICK_REACH_PX)
    # Bonds broken by an atom label, or a symbol by its designator, stay one drawing.
    joined = cv2.dilate(ink.astype(np.uint8), np.ones((7, 7), dtype=np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(joined, connectivity=8)
    return [(x, y, x + w, y + h) for x, y, w, h, _ in stats[1:count].tolist() if min(w, h) >= _MIN_ART_SIDE]


def near(box: PixelBox, art: PixelBox, reach: int) -> bool:
    """Whether ``box`` lies within ``reach`` pixels of ``art``."""
    return not (
        box[2] < art[0] - reach
        or box[0] > art[2] + reach
        or box[3] < art[1] - reach
        or box[1] > art[3] + reach
    )
