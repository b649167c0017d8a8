"""What an image shows of each reasoning track, by classical image analysis (SciIR appendix F: terms and
visualisations per track, the image first).

- process: arrows the diagram reader finds between labelled shapes (``sciir.backends.offline_relations``);
- law: an equation written in the image (a label with "=" or a proportionality sign), and plot axes: a
  long horizontal and a long vertical line meeting at a corner, each with numbers read along it, and the
  quantities labelled beside them;
- entity: a labelled structural drawing: line art that is not text, not a shape or a stroke touching
  one (boxes and arrows), and not inside plot axes (molecule bonds, circuit wires and symbols), with
  labels read on or beside it (atom symbols, component designators, the drawing's name).

Each track seen gets its terms (the labels that show it) and short descriptions of how the image draws
it; a track not seen gets nothing: nothing here reads the caption or guesses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sciir.backends.diagram import Diagram
from sciir.backends.ocr import OcrLine, OcrReading, OcrWord

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive)

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
# Labels read within this many pixels of the drawing name or annotate it.
_LABEL_REACH_PX = 40
# A tick number; OCR may read the tick mark beside it as a bracket, bar or stop ("20]", "10;").
_NUMBER = re.compile(r"^[-\u2212]?\d+(?:[.,]\d+)?%?[\]\)|;:,.\-]?$")
# A tick number's box may touch its axis line by a few pixels.
_TICK_OVERLAP_PX = 6
_EQUATION = re.compile(r"=|\u221d|\u2248")


@dataclass(frozen=True)
class TrackSight:
    """What the image shows of one track: the terms that show it and how it is drawn."""

    terms: list[str] = field(default_factory=list)
    visualizations: list[str] = field(default_factory=list)

    @property
    def seen(self) -> bool:
        return bool(self.terms) and bool(self.visualizations)


@dataclass(frozen=True)
class PlotAxes:
    """A plot's frame: the box between its x axis and its y axis, and the quantities labelled on them."""

    box: Box
    x_label: str | None
    y_label: str | None


def _ink(grey: np.ndarray) -> np.ndarray:
    return grey < _INK


def _straight_runs(ink: np.ndarray, length: int, horizontal: bool) -> list[Box]:
    """Boxes of straight ink runs at least ``length`` long, horizontal or vertical."""
    import cv2

    kernel = np.ones((1, length) if horizontal else (length, 1), dtype=np.uint8)
    opened = cv2.morphologyEx(ink.astype(np.uint8), cv2.MORPH_OPEN, kernel)
    count, _, stats, _ = cv2.connectedComponentsWithStats(opened, connectivity=8)
    return [(x, y, x + w, y + h) for x, y, w, h, _ in stats[1:count].tolist()]


def _word_box(reading: OcrReading, word: OcrWord) -> Box:
    x0, y0, x1, y1 = reading.image_box(word)
    return int(x0), int(y0), int(x1), int(y1)


def _numbers(reading: OcrReading) -> list[Box]:
    """Boxes of the words read as plain numbers (tick labels)."""
    return [
        _word_box(reading, word) for line in reading.lines for word in line.words if _NUMBER.match(word.text)
    ]


def _ticks_below(axis: Box, numbers: Sequence[Box]) -> int:
    x0, _, x1, y1 = axis
    return sum(
        x0 - 10 <= (a + c) / 2 <= x1 + 10 and -_TICK_OVERLAP_PX <= b - y1 <= _TICK_REACH_PX
        for a, b, c, _ in numbers
    )


def _ticks_left(axis: Box, numbers: Sequence[Box]) -> int:
    x0, y0, _, y1 = axis
    return sum(
        y0 - 10 <= (b + d) / 2 <= y1 + 10 and -_TICK_OVERLAP_PX <= x0 - c <= _TICK_REACH_PX
        for _, b, c, d in numbers
    )


def _corner(x_axis: Box, y_axis: Box) -> bool:
    """The y axis's foot meets the x axis's left end."""
    return abs(y_axis[3] - x_axis[3]) <= _CORNER_PX and abs(y_axis[0] - x_axis[0]) <= _CORNER_PX


def _nearest_label(
    lines: Sequence[OcrLine], point: tuple[float, float], accept: Callable[[Box], bool]
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


def _x_quantity(lines: Sequence[OcrLine], frame: Box) -> str | None:
    """The label nearest below the middle of the x axis."""
    x0, _, x1, y1 = frame
    return _nearest_label(
        lines, ((x0 + x1) / 2, y1), lambda b: b[1] >= y1 and x0 - 10 <= (b[0] + b[2]) / 2 <= x1 + 10
    )


def _y_quantity(lines: Sequence[OcrLine], frame: Box) -> str | None:
    """The label nearest the top of the y axis, above it (level text, as the sample draws it) or beside it."""
    x0, y0 = frame[0], frame[1]
    return _nearest_label(
        lines, (x0, y0), lambda b: b[3] <= y0 + 10 and b[2] >= x0 - 150 and b[0] <= x0 + 100
    )


def _covered(shape: tuple[int, ...], boxes: Sequence[Box], grow: int) -> np.ndarray:
    """A mask of ``boxes``, each grown by ``grow`` pixels."""
    mask = np.zeros(shape, dtype=bool)
    for x0, y0, x1, y1 in boxes:
        mask[max(0, y0 - grow) : max(0, y1 + grow), max(0, x0 - grow) : max(0, x1 + grow)] = True
    return mask


def _touching_shapes(ink: np.ndarray, boxes: Sequence[Box]) -> np.ndarray:
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
) -> list[Box]:
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


def _near(box: Box, art: Box, reach: int) -> bool:
    """Whether ``box`` lies within ``reach`` pixels of ``art``."""
    return not (
        box[2] < art[0] - reach
        or box[0] > art[2] + reach
        or box[3] < art[1] - reach
        or box[1] > art[3] + reach
    )


def is_equation(label: str) -> bool:
    """A label that writes an equation or proportionality ("V = I R", "rate = k [A]")."""
    return bool(_EQUATION.search(label))


def law_sight(labels: Sequence[str], axes: PlotAxes | None) -> TrackSight:
    """Equations written in the image and the quantities of plot axes."""
    equations = [label for label in labels if is_equation(label)]
    views = [f"written equation {equation}" for equation in equations]
    quantities = [label for label in (axes.y_label, axes.x_label) if label] if axes else []
    if axes is not None:
        if len(quantities) == 2:
            views.append(f"plotted curve of {quantities[0]} against {quantities[1]}")
        else:
            views.append("plot axes with numbered ticks")
    return TrackSight(list(dict.fromkeys([*equations, *quantities])), views)


def entity_sight(
    reading: OcrReading, labels: Sequence[str], drawings: Sequence[Box], axes: PlotAxes | None
) -> TrackSight:
    """Each structural drawing with the labels read on or beside it (equations and axis quantities aside);
    an unlabelled drawing is not named, so it gives nothing."""
    taken = {axes.x_label, axes.y_label} if axes else set()
    terms: list[str] = []
    views: list[str] = []
    for art in drawings:
        named = [
            line.text
            for line in reading.lines
            if line.text in labels
            and line.text not in taken
            and not is_equation(line.text)
            and _near(line.box, art, _LABEL_REACH_PX)
        ]
        named = list(dict.fromkeys(named))
        if named:
            terms.extend(named)
            views.append(f"structural drawing labelled {', '.join(named)}")
    return TrackSight(list(dict.fromkeys(terms)), views)


def process_sight(drawn: Sequence[tuple[str, str]]) -> TrackSight:
    """The arrows read between labelled shapes."""
    terms = list(dict.fromkeys(end for pair in drawn for end in pair))
    return TrackSight(terms, [f"arrow from {a} to {b}" for a, b in drawn])


def track_sights(
    grey: np.ndarray,
    reading: OcrReading,
    diagram: Diagram,
    labels: Sequence[str],
    drawn: Sequence[tuple[str, str]],
) -> dict[str, TrackSight]:
    """Per track (entity, process, law), what the image shows of it; an empty ``TrackSight`` where
    nothing is seen."""
    axes = plot_axes(grey, reading, labels)
    sights = {
        "entity": entity_sight(reading, labels, line_art(grey, reading, diagram, labels, axes), axes),
        "process": process_sight(drawn),
        "law": law_sight(labels, axes),
    }
    return {track: sight if sight.seen else TrackSight() for track, sight in sights.items()}
