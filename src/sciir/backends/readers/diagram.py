"""What a clean diagram shows, by classical image analysis: labelled shapes and the arrows between them.

A *shape* is a closed region drawn on a light background: a pale filled box (with or without a
border), or a white region enclosed by a dark outline. Its *text* is what OCR read inside it
(word boxes from Tesseract, mapped back onto the image). A *stroke* is a connected run of dark ink
outside every shape; a stroke that reaches two or more shapes joins them. Its direction comes from
its arrowhead: the end whose ink is much thicker (a filled triangle against a thin shaft) is the
head. A stroke whose ends look alike joins its shapes with no known direction.

Nothing here guesses: a stroke with no clear head is recorded as undirected, and a caller that
needs a direction abstains on it. Labels are located in shapes (``located_labels``: each label held by
exactly one shape), and the arrows between located labels are the relations the image draws
(``drawn_relations``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sciir.backends.readers.tesseract import decode_png
from sciir.backends.readers.text import OcrReading

# Grey levels (0-255): darker than _DARK is ink (text, arrows, outlines); a pixel at least _PALE_STEP
# below the background and not ink is a pale fill.
_DARK = 128
_PALE_STEP = 8
# Morphological opening of pale fills, in pixels: removes the anti-aliased halo along dark strokes.
_OPEN_PX = 5
# Shapes smaller than this (pixels, each side) are letter counters or specks, not drawn shapes.
_MIN_SHAPE_SIDE = 12
# A shape holding a label is at most this many times the area of the label's words (a box around
# a label, not a plot frame around an annotation), and at most this share of the image.
_MAX_AREA_PER_LABEL_AREA = 14.0
_MAX_SHAPE_SHARE = 0.2
# Dark ink this close to a shape (fraction of the image's longer side, at least 3 px) is its outline;
# a stroke ending within twice that distance touches the shape.
_OUTLINE_FRACTION = 0.005
# One end of a stroke is an arrowhead when its thickest ink is this many times the other end's.
_HEAD_RATIO = 1.6
# Strokes with fewer pixels than this are specks.
_MIN_STROKE_PX = 12


@dataclass(frozen=True)
class Shape:
    """A closed drawn region and the text read inside it (words in reading order, one space apart)."""

    index: int
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 (x1, y1 exclusive)
    area: int
    text: str
    word_area: float

    @property
    def holds_a_label(self) -> bool:
        """Text was read inside, and the shape is drawn around it rather than around a whole plot."""
        return bool(self.text) and self.area <= _MAX_AREA_PER_LABEL_AREA * self.word_area


@dataclass(frozen=True)
class Stroke:
    """Dark ink joining shapes: ``tails`` -> ``heads`` when its arrowheads are clear, else ``undirected``."""

    shapes: frozenset[int]
    tails: frozenset[int]
    heads: frozenset[int]

    @property
    def directed(self) -> bool:
        return bool(self.heads) and bool(self.tails)

    def points(self, source: int, target: int) -> bool:
        """Whether this stroke is an arrow from shape ``source`` to shape ``target``."""
        return self.directed and source in self.tails and target in self.heads


@dataclass(frozen=True)
class Diagram:
    """Shapes and strokes found in one image."""

    shapes: tuple[Shape, ...]
    strokes: tuple[Stroke, ...]
    loose: frozenset[int]  # shapes touched by a stroke that reaches no other shape

    def labelled(self, label: str) -> list[Shape]:
        """The shapes whose text is ``label`` (ignoring case and spacing)."""
        key = label_key(label)
        return [shape for shape in self.shapes if shape.holds_a_label and label_key(shape.text) == key]

    @property
    def all_shapes_read(self) -> bool:
        """Every shape holds text that was read (so a label found in none of them is not drawn in one)."""
        return bool(self.shapes) and all(shape.holds_a_label for shape in self.shapes)

    def joining(self, first: int, second: int) -> list[Stroke]:
        """The strokes that reach both shapes."""
        return [stroke for stroke in self.strokes if {first, second} <= stroke.shapes]


def label_key(text: str) -> str:
    """A label compared ignoring case and whitespace (wrapped labels break lines at spaces or hyphens)."""
    return "".join(text.casefold().split())


def grey_levels(png: bytes) -> np.ndarray:
    """Grey levels of the image, transparent pixels shown on white."""
    from PIL import Image

    image = decode_png(png)
    if image.mode in ("RGBA", "LA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return np.asarray(image.convert("L"))


def _background_level(grey: np.ndarray) -> float:
    border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
    return float(np.median(border))


def _filled(mask: np.ndarray) -> list[np.ndarray]:
    """One filled mask per outer contour of ``mask`` (holes such as the text inside a box filled in)."""
    import cv2

    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    regions = []
    for contour in contours:
        _, _, width, height = cv2.boundingRect(contour)
        if min(width, height) < _MIN_SHAPE_SIDE:
            continue
        region = np.zeros(mask.shape, dtype=np.uint8)
        cv2.drawContours(region, [contour], -1, 1, thickness=cv2.FILLED)
        regions.append(region.astype(bool))
    return regions


def _enclosed_white(light: np.ndarray) -> np.ndarray:
    """Light regions that do not reach the image border: the insides of outlined shapes."""
    import cv2

    count, labels = cv2.connectedComponents(light.astype(np.uint8), connectivity=4)
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    inside = np.isin(labels, edge, invert=True) & (labels > 0)
    return inside if count > 1 else np.zeros_like(light)


def shape_regions(grey: np.ndarray) -> list[np.ndarray]:
    """Masks of the closed shapes: pale fills and outlined interiors, each with its holes filled."""
    import cv2

    background = _background_level(grey)
    if background < 200:  # a dark or busy background: nothing here is a clean diagram
        return []
    dark = grey < _DARK
    pale = (grey < background - _PALE_STEP) & ~dark
    kernel = np.ones((_OPEN_PX, _OPEN_PX), dtype=np.uint8)
    pale = cv2.morphologyEx(pale.astype(np.uint8), cv2.MORPH_OPEN, kernel).astype(bool)
    light = grey >= background - _PALE_STEP
    regions = _filled(pale) + _filled(_enclosed_white(light) & ~pale)
    limit = _MAX_SHAPE_SHARE * grey.size
    return [region for region in regions if region.sum() <= limit]


def _word_boxes(reading: OcrReading) -> list[tuple[float, float, float, float]]:
    return [reading.image_box(word) for line in reading.lines for word in line.words]


def _inside_a_word(region: np.ndarray, words: Sequence[tuple[float, float, float, float]]) -> bool:
    """Whether the region lies within a word read (the counter of a letter such as "O")."""
    ys, xs = np.nonzero(region)
    x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
    return any(
        wx0 - 2 <= x0 and wy0 - 2 <= y0 and x1 <= wx1 + 2 and y1 <= wy1 + 2 for wx0, wy0, wx1, wy1 in words
    )


def _words_inside(region: np.ndarray, reading: OcrReading) -> tuple[str, float]:
    """The words read whose centre lies in ``region``, in reading order, and their total box area."""
    height, width = region.shape
    words, area = [], 0.0
    for line in reading.lines:
        for word in line.words:
            x0, y0, x1, y1 = reading.image_box(word)
            cx, cy = int((x0 + x1) / 2), int((y0 + y1) / 2)
            if 0 <= cx < width and 0 <= cy < height and region[cy, cx]:
                words.append(word.text)
                area += (x1 - x0) * (y1 - y0)
    return " ".join(words), area


def _shape(index: int, region: np.ndarray, reading: OcrReading) -> Shape:
    ys, xs = np.nonzero(region)
    text, word_area = _words_inside(region, reading)
    box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
    return Shape(index, box, int(region.sum()), text, word_area)


def _dilated(mask: np.ndarray, radius: int) -> np.ndarray:
    import cv2

    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    return cv2.dilate(mask.astype(np.uint8), kernel).astype(bool)


def _ends(pixels: np.ndarray, touched: Sequence[int], distances: Sequence[np.ndarray]) -> np.ndarray:
    """For each pixel of a stroke, the touched shape it is closest to (its end of the stroke)."""
    stacked = np.stack([distances[index][pixels] for index in touched])
    ends: np.ndarray = np.asarray(touched)[np.argmin(stacked, axis=0)]
    return ends


def _stroke(component: np.ndarray, touched: list[int], distances: Sequence[np.ndarray]) -> Stroke:
    """Direction of one stroke from the thickness of its ink at each end (arrowheads are thick)."""
    import cv2

    thickness = cv2.distanceTransform(component.astype(np.uint8), cv2.DIST_L2, 5)
    nearest = _ends(component, touched, distances)
    values = thickness[component]
    widest = {shape: float(values[nearest == shape].max(initial=0.0)) for shape in touched}
    thinnest = min(widest.values())
    heads = frozenset(s for s, w in widest.items() if thinnest > 0 and w >= _HEAD_RATIO * thinnest)
    tails = frozenset(touched) - heads
    if not heads or (len(heads) > 1 and len(tails) > 1):
        return Stroke(frozenset(touched), frozenset(), frozenset())
    return Stroke(frozenset(touched), tails, heads)


def find_strokes(
    grey: np.ndarray, regions: Sequence[np.ndarray]
) -> tuple[tuple[Stroke, ...], frozenset[int]]:
    """Strokes of dark ink outside the shapes and the shapes they reach; shapes reached by a dangling one."""
    import cv2

    if not regions:
        return (), frozenset()
    outline = max(3, round(_OUTLINE_FRACTION * max(grey.shape)))
    near = [_dilated(region, outline) for region in regions]
    contact = [_dilated(region, 2 * outline) for region in regions]
    ink = (grey < _DARK) & ~np.logical_or.reduce(near)
    count, labels = cv2.connectedComponents(ink.astype(np.uint8), connectivity=8)
    distances = [cv2.distanceTransform((~region).astype(np.uint8), cv2.DIST_L2, 5) for region in regions]
    touching: dict[int, list[int]] = {}
    for index, zone in enumerate(contact):
        for component in np.unique(labels[zone & ink]):
            touching.setdefault(int(component), []).append(index)
    strokes, loose = [], set()
    for component, touched in sorted(touching.items()):
        mask = labels == component
        if mask.sum() < _MIN_STROKE_PX:
            continue
        if len(touched) == 1:
            loose.add(touched[0])
            continue
        strokes.append(_stroke(mask, touched, distances))
    return tuple(strokes), frozenset(loose)


def read_diagram(png: bytes, reading: OcrReading) -> Diagram:
    """The shapes (with the text read inside them) and the strokes joining them, in one image."""
    grey = grey_levels(png)
    words = _word_boxes(reading)
    regions = [region for region in shape_regions(grey) if not _inside_a_word(region, words)]
    shapes = tuple(_shape(index, region, reading) for index, region in enumerate(regions))
    strokes, loose = find_strokes(grey, regions)
    return Diagram(shapes, strokes, loose)


Pair = tuple[str, str]


def _runs_in(words: Sequence[str], run: Sequence[str]) -> bool:
    """Whether ``run`` occurs as consecutive words of ``words``."""
    return bool(run) and any(list(words[i : i + len(run)]) == list(run) for i in range(len(words)))


def shape_label(shape: Shape, labels: Sequence[str]) -> str | None:
    """The label a shape holds: the one its text spells (ignoring case and spacing), else the single
    longest label whose words run inside its text (OCR may add a stray mark to the words inside a box,
    such as an arrowhead read as "MO" beside "Harvesting"); None when no label or two alike fit."""
    if not shape.holds_a_label:
        return None
    spelled = [label for label in labels if label_key(label) == label_key(shape.text)]
    if spelled:
        return spelled[0]
    words = shape.text.casefold().split()
    inside = [label for label in labels if _runs_in(words, label.casefold().split())]
    longest = max((len(label.split()) for label in inside), default=0)
    candidates = [label for label in inside if len(label.split()) == longest]
    return candidates[0] if len(candidates) == 1 else None


def located_labels(diagram: Diagram, labels: Sequence[str]) -> dict[str, Shape]:
    """Each label held by exactly one shape, with that shape (a label in two shapes is ambiguous)."""
    holders: dict[str, list[Shape]] = {}
    for shape in diagram.shapes:
        label = shape_label(shape, labels)
        if label is not None:
            holders.setdefault(label, []).append(shape)
    return {label: shapes[0] for label, shapes in holders.items() if len(shapes) == 1}


def drawn_relations(diagram: Diagram, labels: Sequence[str]) -> list[Pair]:
    """Pairs (A, B) for every arrow from A's shape to B's shape, ordered by where the source is drawn."""
    located = located_labels(diagram, labels)
    label_of = {shape.index: label for label, shape in located.items()}
    pairs = [
        (label_of[tail], label_of[head])
        for stroke in diagram.strokes
        if stroke.directed
        for tail in sorted(stroke.tails)
        for head in sorted(stroke.heads)
        if tail in label_of and head in label_of and tail != head
    ]
    position = {label: (shape.box[1], shape.box[0]) for label, shape in located.items()}
    return sorted(dict.fromkeys(pairs), key=lambda pair: (position[pair[0]], position[pair[1]]))


def image_settles(diagram: Diagram, pair: Pair, located: dict[str, Shape]) -> bool:
    """Whether the image decides the relation on its own: both ends located and a directed stroke joins
    them, or none does while the image has strokes and none leaving either end dangles (as the offline
    judge reads an unconnected pair)."""
    if pair[0] not in located or pair[1] not in located:
        return False
    ends = (located[pair[0]].index, located[pair[1]].index)
    joining = diagram.joining(*ends)
    if joining:
        return any(stroke.directed for stroke in joining)
    return bool(diagram.strokes) and not diagram.loose.intersection(ends)
