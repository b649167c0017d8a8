"""Reading (``read_text``): Tesseract's passes over views of an image, merged into one ``OcrReading``.

Figures scatter small labels among drawing, and one Tesseract pass misses most of them. The reader
1. finds the marks that look like text (``sciir.backends.readers.text_layout``);
2. rescales the image so that those marks are about ``_TARGET_GLYPH_PX`` tall (web renditions of
   figures are upscaled up to ``_MAX_UPSCALE`` times) and reads it in sparse-text mode (--psm 11);
3. stops there when every text-like mark lies inside a word read with confidence; otherwise reads
   the image again: turned for each direction of unread rows (a quarter for labels written upwards,
   45 degrees for slanted ones), with drawing ink erased, as one block of text, binarised (the views
   read in sparse-text mode by one process, the block of text by another, at the same time);
4. merges the passes' lines by place (the most confident reading of each place wins), word boxes in
   pixels of the original image, and keeps each pass's own text as an alternative reading in which
   a label may be found;
5. records how many text-like marks were left unread, which decides whether "not found" may be "no".
The passes with the same Tesseract settings are read by one process, each view a page read as if alone
(``sciir.backends.readers.tesseract_process``).
"""

from __future__ import annotations

import io
import logging
import shutil
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import numpy as np
import pytesseract
from PIL import Image

from sciir.backends.base import sha256_hex
from sciir.backends.readers.tesseract_process import Words, read_views
from sciir.backends.readers.text import OcrLine, OcrReading, OcrWord, stacked_rows
from sciir.backends.readers.text_layout import MAX_GLYPH_HEIGHT, MAX_GLYPH_WIDTH, TextLayout, text_layout

logger = logging.getLogger(__name__)

# Changes whenever the reader reads images differently (part of the rule-based backends' identity, so
# cached answers of an older reader are not reused).
READER_VERSION = "ocr-reader-v3"
# Tesseract reads glyphs best when the text-like marks (letters, mostly lower case) are about this tall.
_TARGET_GLYPH_PX = 26.0
_MAX_UPSCALE = 4.0
_MIN_SCALE = 0.5
_MAX_SIDE_PX = 4000
_MARGIN = 0.05
# The view with drawing erased: ink is darker than this grey level.
_INK_THRESHOLD = 128
_PARALLEL_PASSES = 2
# A slanted view (45 degrees) is read only for at least this many unread marks in slanted rows: single
# slanted rows of a few marks are mostly data points.
_MIN_SLANTED_MARKS = 10


class OcrUnavailableError(RuntimeError):
    """The Tesseract binary or its language data is not installed."""


def require_tesseract(lang: str = "eng") -> None:
    """Fail early, naming the system package to install, when Tesseract cannot run."""
    command = pytesseract.pytesseract.tesseract_cmd
    if shutil.which(command) is None:
        raise OcrUnavailableError(
            f"the OCR backend needs the Tesseract binary ({command!r}), which is not on PATH: install the "
            "system package tesseract-ocr (Debian/Ubuntu: apt-get install tesseract-ocr)"
        )
    missing = [code for code in lang.split("+") if code not in pytesseract.get_languages(config="")]
    if missing:
        packages = " ".join(f"tesseract-ocr-{code}" for code in missing)
        raise OcrUnavailableError(
            f"Tesseract has no language data for {', '.join(missing)}: apt-get install {packages}"
        )


def decode_png(png: bytes) -> Image.Image:
    """Decode image bytes; raises ValueError naming what is wrong."""
    try:
        image = Image.open(io.BytesIO(png))
        image.load()
    except (OSError, Image.DecompressionBombError) as error:
        raise ValueError(f"image could not be decoded ({len(png)} bytes): {error}") from error
    return image


def _grey_on_white(image: Image.Image) -> np.ndarray:
    """Grey levels, with transparent pixels shown on white (a transparent background is not ink)."""
    if image.mode in ("RGBA", "LA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(white, rgba)
    return np.asarray(image.convert("L"))


# --- Reading: passes of Tesseract over views of the image -------------------------------------------


@dataclass(frozen=True)
class _Pass:
    """One Tesseract run over a view of the image."""

    name: str
    angle: int = 0  # the image turned counterclockwise by this many degrees (-90: labels written upwards)
    erase_drawing: bool = False
    binarise: bool = False
    psm: int = 11  # sparse text: figures scatter labels instead of laying out paragraphs
    # Tesseract reads a line again inverted when it reads it with little confidence: the first pass
    # does, for light text on dark; later passes do not (most such lines are drawing, and it is slow).
    invert: bool = False

    @property
    def config(self) -> str:
        """Tesseract's settings for the pass (passes with the same settings share a process)."""
        return f"--psm {self.psm} -c tessedit_do_invert={int(self.invert)}"


_FIRST_PASS = _Pass("sparse", invert=True)
# Run when text-like marks are left unread: the upright views, and one turned view per direction of
# unread marks (a label written upwards or slanted).
_UPRIGHT_PASSES = (
    _Pass("drawing erased", erase_drawing=True),
    _Pass("block", psm=6),
    _Pass("binarised", binarise=True),
)


def _turned_pass(angle: int) -> _Pass:
    return _Pass(f"turned {angle}", angle=angle)


@dataclass(frozen=True)
class _ViewFrame:
    """How the pixels of the image prepared for one pass (its view) map back onto the original image:
    original pixel p (x, y) is at ``rotation @ (scale * p) + shift`` in the view."""

    scale: float
    rotation: np.ndarray
    shift: np.ndarray
    original_shape: tuple[int, int]

    def original_box(self, left: int, top: int, width: int, height: int) -> tuple[int, int, int, int]:
        """A box of this view as (left, top, width, height) in pixels of the original image, within it."""
        corners = np.array(
            [[left, top], [left + width, top], [left, top + height], [left + width, top + height]],
            dtype=float,
        )
        points = (corners - self.shift) @ self.rotation / self.scale  # rotation is orthogonal
        rows, columns = self.original_shape
        x0, y0 = np.clip(np.floor(points.min(axis=0)), 0, [columns - 1, rows - 1]).astype(int)
        x1, y1 = np.clip(np.ceil(points.max(axis=0)), 0, [columns, rows]).astype(int)
        return int(x0), int(y0), max(1, int(x1 - x0)), max(1, int(y1 - y0))


def reading_scale(layout: TextLayout, shape: tuple[int, int]) -> float:
    """The scale that gives text-like marks about ``_TARGET_GLYPH_PX`` pixels of height."""
    if layout.glyph_px <= 0:
        return 1.0
    scale = min(_MAX_UPSCALE, _TARGET_GLYPH_PX / layout.glyph_px, _MAX_SIDE_PX / max(shape))
    scale = max(scale, _MIN_SCALE)
    return 1.0 if abs(scale - 1.0) <= 0.1 else scale


def _without_drawing(grey: np.ndarray) -> np.ndarray:
    """The grey image with ink that cannot be a glyph painted white: frames enclosing other ink, long
    thin lines, shapes taller than any label (boxes and arrows around labels confuse Tesseract)."""
    from scipy import ndimage

    ink = grey < _INK_THRESHOLD
    labels, count = ndimage.label(ink, structure=np.ones((3, 3), dtype=bool))
    slices = ndimage.find_objects(labels)
    boxes = np.array([(s[0].start, s[0].stop, s[1].start, s[1].stop) for s in slices], dtype=int)
    boxes = boxes.reshape(count, 4)
    if count == 0:
        return grey
    height, width = boxes[:, 1] - boxes[:, 0], boxes[:, 3] - boxes[:, 2]
    too_large = (height > MAX_GLYPH_HEIGHT * ink.shape[0]) | (width > MAX_GLYPH_WIDTH * ink.shape[1])
    sizeable = (height >= 8) & (width >= 8)
    encloses = np.zeros(count, dtype=bool)
    for index in np.flatnonzero(~too_large & sizeable):
        y0, y1, x0, x1 = boxes[index]
        inside = (boxes[:, 0] > y0) & (boxes[:, 1] < y1) & (boxes[:, 2] > x0) & (boxes[:, 3] < x1)
        encloses[index] = bool(inside.any())
    drawing = too_large | encloses
    sized = ~drawing & (height >= 8)
    if sized.any():
        typical = float(np.median(height[sized]))
        drawing |= ((width > 3 * typical) & (width > 2.5 * height)) | (height > 3 * typical)
    erase = ndimage.binary_dilation(np.concatenate([[False], drawing])[labels], iterations=1)
    return np.where(erase, 255, grey).astype(np.uint8)


def _view(grey: np.ndarray, scale: float, spec: _Pass) -> tuple[Image.Image, _ViewFrame]:
    """The image one pass reads, and its frame."""
    import cv2

    pixels = _without_drawing(grey) if spec.erase_drawing else grey
    image = Image.fromarray(pixels)
    if scale != 1.0:
        size = (round(image.width * scale), round(image.height * scale))
        image = image.resize(size, Image.Resampling.LANCZOS)
    actual = image.width / grey.shape[1]
    pixels = np.asarray(image)
    if spec.binarise:
        block = 2 * round(_TARGET_GLYPH_PX * 0.7) + 1
        pixels = cv2.adaptiveThreshold(
            pixels, 255, cv2.ADAPTIVE_THRESH_GAUSSIAN_C, cv2.THRESH_BINARY, block, 15
        )
    # Turned counterclockwise on screen (y points down), onto a canvas that holds it all, with a
    # margin: Tesseract misses text that touches the border.
    radians = np.radians(spec.angle)
    rotation = np.array([[np.cos(radians), np.sin(radians)], [-np.sin(radians), np.cos(radians)]])
    height, width = pixels.shape
    corners = np.array([[0, 0], [width, 0], [0, height], [width, height]], dtype=float) @ rotation.T
    margin = round(_MARGIN * max(width, height))
    shift = margin - corners.min(axis=0)
    size = np.ceil(corners.max(axis=0) - corners.min(axis=0) + 2 * margin).astype(int)
    if spec.angle == 0:
        canvas = np.full((size[1], size[0]), 255, dtype=np.uint8)
        canvas[margin : margin + height, margin : margin + width] = pixels
    else:
        matrix = np.hstack([rotation, shift[:, None]])
        canvas = cv2.warpAffine(
            pixels, matrix, (int(size[0]), int(size[1])), flags=cv2.INTER_LINEAR, borderValue=255
        )
    return Image.fromarray(canvas), _ViewFrame(actual, rotation, shift, grey.shape)


@dataclass(frozen=True)
class _PassReading:
    """The lines one pass read (words in pixels of the original image) and its text, stacked lines
    joined (one row per line and per run of lines stacked under it)."""

    name: str
    angle: int
    lines: tuple[OcrLine, ...]
    text: str


def _frame_lines(data: dict[str, list[Any]]) -> list[list[tuple[OcrWord, tuple[int, int, int, int]]]]:
    """Tesseract's words grouped by its (block, paragraph, line) in reading order, split where the gap
    between words is wider than the words are tall (separate labels); each word with its box in the
    pass's own pixels."""
    grouped: dict[tuple[int, int, int], list[tuple[OcrWord, tuple[int, int, int, int]]]] = {}
    for i, text in enumerate(data["text"]):
        confidence = float(data["conf"][i])
        if not text.strip() or confidence < 0:
            continue
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        box = (data["left"][i], data["top"][i], data["width"][i], data["height"][i])
        grouped.setdefault(key, []).append((OcrWord(text.strip(), confidence, *box), box))
    lines = []
    for _, words in sorted(grouped.items()):
        words.sort(key=lambda item: item[1][0])
        segment = [words[0]]
        for previous, word in zip(words, words[1:], strict=False):
            gap = word[1][0] - (previous[1][0] + previous[1][2])
            if gap > 1.5 * max(previous[1][3], word[1][3]):
                lines.append(segment)
                segment = []
            segment.append(word)
        lines.append(segment)
    return lines


def _read_passes(grey: np.ndarray, scale: float, specs: Sequence[_Pass], lang: str) -> list[_PassReading]:
    """The passes ``specs``, in order: those with the same Tesseract settings read by one process (each
    view made only when its process takes it), two such processes at a time."""
    groups: dict[str, list[int]] = {}
    for index, spec in enumerate(specs):
        groups.setdefault(spec.config, []).append(index)
    frames: dict[int, _ViewFrame] = {}

    def read_group(config: str, indexes: list[int]) -> dict[int, Words]:
        def views() -> Iterator[Image.Image]:
            for index in indexes:
                image, frames[index] = _view(grey, scale, specs[index])
                yield image

        return dict(zip(indexes, read_views(views(), lang, config), strict=True))

    if len(groups) == 1:
        words = read_group(*next(iter(groups.items())))
    else:
        with ThreadPoolExecutor(max_workers=_PARALLEL_PASSES) as pool:
            read = [pool.submit(read_group, config, indexes) for config, indexes in groups.items()]
            words = {index: data for future in read for index, data in future.result().items()}
    return [_pass_reading(spec, frames[index], words[index]) for index, spec in enumerate(specs)]


def _pass_reading(spec: _Pass, view: _ViewFrame, data: Words) -> _PassReading:
    frame_lines = _frame_lines(data)
    rows = stacked_rows(
        [
            (
                (
                    min(box[0] for _, box in line),
                    min(box[1] for _, box in line),
                    max(box[0] + box[2] for _, box in line),
                    max(box[1] + box[3] for _, box in line),
                ),
                " ".join(word.text for word, _ in line),
            )
            for line in frame_lines
        ]
    )
    lines = tuple(
        OcrLine(tuple(OcrWord(word.text, word.confidence, *view.original_box(*box)) for word, box in line))
        for line in frame_lines
    )
    return _PassReading(spec.name, spec.angle, lines, "\n".join(rows))


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    """Shared area of two boxes over the smaller one's area."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return width * height / max(1, smaller)


def merge_lines(passes: Sequence[_PassReading]) -> tuple[OcrLine, ...]:
    """One reading per place: lines of all passes, the most confident first, each kept unless it
    mostly overlaps a line already kept; in reading order (top to bottom, then left to right)."""
    candidates = [line for reading in passes for line in reading.lines]
    kept: list[OcrLine] = []
    for line in sorted(candidates, key=lambda line: (-line.confidence, -len(line.text))):
        if all(_overlap(line.box, other.box) <= 0.5 for other in kept):
            kept.append(line)
    return tuple(sorted(kept, key=lambda line: (line.box[1], line.box[0])))


def read_text(png: bytes, lang: str = "eng") -> OcrReading:
    """Read all text in a PNG (or any format PIL decodes). Raises ValueError for undecodable bytes."""
    grey = _grey_on_white(decode_png(png))
    layout = text_layout(grey)
    scale = reading_scale(layout, grey.shape)
    passes = _read_passes(grey, scale, [_FIRST_PASS], lang)
    unread = layout.unread({0: passes[0].lines})
    if not layout.busy and unread.any():
        counts = Counter(int(angle) for angle in layout.angles[unread])
        angles = sorted(a for a, n in counts.items() if a == -90 or (a != 0 and n >= _MIN_SLANTED_MARKS))
        passes += _read_passes(
            grey, scale, [*(_turned_pass(angle) for angle in angles), *_UPRIGHT_PASSES], lang
        )
    # A turned view reads the rest of the image as garbage: its lines count only where its marks are.
    placed = [replace(p, lines=layout.holding(p.lines, p.angle)) if p.angle else p for p in passes]
    return OcrReading(
        merge_lines(placed),
        alternatives=tuple(reading.text for reading in passes),
        legibility=layout.legibility(_lines_by_angle(placed)),
    )


def _lines_by_angle(passes: Sequence[_PassReading]) -> dict[int, list[OcrLine]]:
    lines: dict[int, list[OcrLine]] = {}
    for reading in passes:
        lines.setdefault(reading.angle, []).extend(reading.lines)
    return lines


# What a memo keeps of an image: an OcrReading (Tesseract), or the texts of the second recogniser.
Reading = TypeVar("Reading")


class ReadingMemo(Generic[Reading]):
    """Readings of recently seen images, so several tasks on one image read it once."""

    def __init__(self, read: Callable[[bytes], Reading], size: int = 1024) -> None:
        self._read, self._size = read, size
        self._readings: OrderedDict[str, Reading] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, png: bytes) -> Reading:
        key = sha256_hex(png)
        with self._lock:
            if key in self._readings:
                self._readings.move_to_end(key)
                return self._readings[key]
        reading = self._read(png)
        with self._lock:
            self._readings[key] = reading
            if len(self._readings) > self._size:
                self._readings.popitem(last=False)
        return reading


# One memo per language for the whole process: Kedro builds a fresh judge for every node, and the
# nodes of one run (checklist judging, AIBench questions) ask about the same images.
_SHARED_MEMOS: dict[str, ReadingMemo[OcrReading]] = {}


def shared_reader(lang: str) -> ReadingMemo[OcrReading]:
    """The process-wide memo of Tesseract readings in ``lang`` (a reading depends only on the bytes)."""
    if lang not in _SHARED_MEMOS:
        _SHARED_MEMOS[lang] = ReadingMemo(lambda png: read_text(png, lang))
    return _SHARED_MEMOS[lang]
