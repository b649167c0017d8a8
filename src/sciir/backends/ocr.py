"""Text reading with Tesseract (and PP-OCR where it leaves doubt), and a judge that answers exact-spelling
checks from it.

The judge answers only what OCR can establish: whether an expected text string is rendered with
exactly that spelling. Found is "yes". Not found is "no" only where the reader is reliable on the
image (``Legibility``): every mark in it that looks like text lies inside a word read with confidence
in a view turned the way its row runs, so a label drawn there would have been read. Otherwise (small,
blurred, rotated or light-on-dark text left unread, a photograph, noise) the check is abstained on,
with the reason; so it is when the label has glyphs OCR does not read, when its words were read apart,
and when text read close to it may be it misread (``doubt_about_absence``): a confident misspelling
("Glucse" read where "Glucose" is asked) is a fault and "no", a hesitant one or a lookalike glyph may
be the label misread. Every other question is abstained on (verdict null), never guessed. As an
AIBench solver (task ``aibench_qa``) it answers only component existence (level 1) under the same
rule: a label read in the image is "yes", a label clearly absent from a reliably read image is "no", a
near match and every other level are abstained on.

Reading (``read_text``). Figures scatter small labels among drawing, and one Tesseract pass misses
most of them. The reader
1. finds the marks that look like text by image analysis (``text_layout``): connected ink darker
   than its surroundings, of glyph size, in rows of similar marks, or in columns (labels written
   upwards) or slanted rows, dark on light and light on dark; an image without a plain background
   (a photograph, noise) is not analysed;
2. rescales the image so that those marks are about ``_TARGET_GLYPH_PX`` tall (web renditions of
   figures are upscaled up to ``_MAX_UPSCALE`` times) and reads it in sparse-text mode (--psm 11);
3. stops there when every text-like mark lies inside a word read with confidence; otherwise reads
   the image again, two passes at a time: turned for each direction of unread rows (a quarter for
   labels written upwards, 45 degrees for slanted ones), with drawing ink erased, as one block of
   text, binarised;
4. merges the passes' lines by place (the most confident reading of each place wins), word boxes in
   pixels of the original image, and keeps each pass's own text as an alternative reading in which
   a label may be found;
5. records how many text-like marks were left unread, which decides whether "not found" may be "no".
Where a label asked about is not found and the judge would abstain (the reading is not reliable, or
text read close to the label may be it misread), a second recogniser reads the image once more
(``with_second_reading``): PP-OCRv4 text detection and recognition run by ONNX Runtime
(rapidocr_onnxruntime, models bundled in its wheel, single-threaded), which reads small, grey,
coloured, slanted and light-on-dark labels that Tesseract misreads. A label it reads is "yes"; what it
does not read stays abstained on: it never makes a "no". Without it installed, the judge abstains there.
Matching forgives what OCR cannot see: dash and quote variants, glyphs drawn alike (I, l, 1 and |;
O and 0; rn and m) and the spaces between words (narrow spaces are often lost); a label may run
over lines stacked under each other. Each pass is one Tesseract process, single-threaded (its own
OpenMP threads cost more CPU than they save).
"""

from __future__ import annotations

import difflib
import io
import logging
import os
import re
import shutil
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pytesseract
from PIL import Image
from pydantic import BaseModel, ValidationError

from sciir.backends.base import VLMRequest, VLMResult, sha256_hex
from sciir.backends.rule_based import RuleBasedVLM
from sciir.tasks.registry import Sight

# Changes whenever the reader or the judge's rules read images differently (part of the backends'
# identity, so cached answers of an older reader are not reused).
logger = logging.getLogger(__name__)

READER_VERSION = "ocr-reader-v3"

# Tesseract reads glyphs best when the text-like marks (letters, mostly lower case) are about this tall.
_TARGET_GLYPH_PX = 26.0
_MAX_UPSCALE = 4.0
_MIN_SCALE = 0.5
_MAX_SIDE_PX = 4000
_MARGIN = 0.05
# Marks taller or wider than these fractions of the image are drawing, not text (standardised
# panels can scale a title's letters up to about a tenth of the image).
_MAX_GLYPH_HEIGHT = 0.15
_MAX_GLYPH_WIDTH = 0.2
# Marks lower than this (pixels of the original image) are specks, dots and thin lines; letters of
# the smallest legible labels in web renditions of figures are about 4-5 px tall.
_MIN_MARK_PX = 4
# Ink is darker than the lightest grey within this window (pixels) by at least this much.
_BACKGROUND_WINDOW = 15
_INK_CONTRAST = 40
_INK_MAX_GREY = 200
# The view with drawing erased: ink is darker than this grey level.
_INK_THRESHOLD = 128
# More marks than this and the image is a photograph or a dense plot: its text is not analysed mark
# by mark (and the reader is not trusted with a "no").
_MAX_MARKS = 4000
# A text-like mark counts as read when it lies in a word read with at least this Tesseract confidence
# (0-100): short words ("P", "V") are read right with modest confidence.
_CONFIDENT = 50.0
_CONFIDENT_LINE = 70.0
# A reading is reliable when at most this many text-like marks (thin bars aside) are left outside
# confidently read words.
_MAX_UNREAD_MARKS = 0
# Text read close to a label proves it absent only when every word of it was read this confidently.
_CONFIDENT_MISREAD = 85.0
_EXCERPT_CHARS = 40
# A run of words read this similar (0-1, ignoring case) to a label asked about may be that label
# misspelt or misread.
_NEAR_MATCH = 0.75
# Letters whose upper and lower case differ only in size: OCR confuses their case on small text.
_CASE_AMBIGUOUS = frozenset("cosuvwxzCOSUVWXZ")
_PARALLEL_PASSES = 2
# A slanted view (45 degrees) is read only for at least this many unread marks in slanted rows: single
# slanted rows of a few marks are mostly data points.
_MIN_SLANTED_MARKS = 10
# An image whose most common grey (within 4 levels) covers less than this share has no plain
# background: a photograph or noise (drawn figures, even with micrographs inset, have 40% or more).
_MIN_BACKGROUND_SHARE = 0.3


class OcrUnavailableError(RuntimeError):
    """The Tesseract binary or its language data is not installed."""


@dataclass(frozen=True)
class OcrWord:
    """One word as Tesseract read it; ``confidence`` is 0-100, box in pixels of the original image."""

    text: str
    confidence: float
    left: int
    top: int
    width: int
    height: int


@dataclass(frozen=True)
class OcrLine:
    """Words read on one line, with no gap wider than a label's own spacing between them."""

    words: tuple[OcrWord, ...]

    @property
    def text(self) -> str:
        return " ".join(word.text for word in self.words)

    @property
    def confidence(self) -> float:
        """Mean word confidence (0-100)."""
        return float(np.mean([word.confidence for word in self.words]))

    @cached_property
    def box(self) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) around all its words, in pixels of the original image."""
        return (
            min(w.left for w in self.words),
            min(w.top for w in self.words),
            max(w.left + w.width for w in self.words),
            max(w.top + w.height for w in self.words),
        )


@dataclass(frozen=True)
class Legibility:
    """How completely the reader read an image's text.

    ``marks``: marks that look like text (glyph-sized ink in rows, columns or slanted rows of similar
    marks); ``unread``: those (thin bars aside) not inside any word read with confidence in a view
    turned the way their row runs; ``busy``: a photograph, noise or thousands of marks, not analysed.
    The reader is ``reliable`` (a label not found is absent) when the image is not busy and at most
    ``_MAX_UNREAD_MARKS`` text-like marks were left unread.
    """

    marks: int
    unread: int
    busy: bool = False

    @property
    def reliable(self) -> bool:
        return not self.busy and self.unread <= _MAX_UNREAD_MARKS

    def why_unreliable(self) -> str:
        if self.busy:
            return "the image is too busy (a photograph, noise or a dense plot) for its text to be read completely"
        return (
            f"{self.unread} of {self.marks} text-like marks in the image were not read with confidence "
            "(small, blurred, rotated or light-on-dark text), so the label may be among them"
        )


@dataclass(frozen=True)
class OcrReading:
    """Everything read in one image: lines in reading order, merged over the reader's passes.

    Word boxes are in pixels of the original image. ``alternatives``: the text of each pass on its
    own (a label found in any of them was read). ``legibility``: how completely the image's text was
    read (None for a reading not made by ``read_text``, e.g. built by hand: trusted like a reliable one).
    """

    lines: tuple[OcrLine, ...]
    alternatives: tuple[str, ...] = ()
    legibility: Legibility | None = None
    # Reads the image again with the second recogniser (``with_second_reading``): texts a label not found
    # in the passes above may be found in; run once, on the first label asked for with ``reread``.
    reread: Callable[[], tuple[str, ...]] | None = field(default=None, compare=False, repr=False)

    def image_box(self, word: OcrWord) -> tuple[float, float, float, float]:
        """The word's box (x0, y0, x1, y1) in pixels of the original image."""
        return word.left, word.top, word.left + word.width, word.top + word.height

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def normalised_text(self) -> str:
        """All text on one line with single spaces, so a phrase matches across line breaks."""
        return normalise_whitespace(self.text)

    @property
    def reliable(self) -> bool:
        """Whether a label not found here is absent from the image (see ``Legibility``)."""
        return self.legibility is None or self.legibility.reliable

    def why_unreliable(self) -> str:
        return self.legibility.why_unreliable() if self.legibility is not None else ""

    @cached_property
    def texts(self) -> tuple[str, ...]:
        """Texts a phrase is looked for in: the merged lines (stacked lines joined), then each pass's."""
        merged = "\n".join(_stacked_rows([(line.box, line.text) for line in self.lines]))
        return tuple(dict.fromkeys([merged, *self.alternatives]))

    @cached_property
    def second_texts(self) -> tuple[str, ...]:
        """What the second recogniser read (``reread``), once asked for; () without one."""
        return self.reread() if self.reread is not None else ()

    def locate(
        self, phrase: str, ignore_case: bool = False, reread: bool = False
    ) -> tuple[str, re.Match[str]] | None:
        """The text read where ``phrase`` occurs (not inside a longer word) and where, or None.

        Case-sensitive unless ``ignore_case``; forgives what OCR cannot see (module docstring). The
        second recogniser's texts are searched too when ``reread`` (reading the image again if it was
        not yet) or when they were already read.
        """
        pattern = phrase_pattern(phrase, ignore_case)
        if pattern is None:
            return None
        texts = self.texts
        if reread or "second_texts" in self.__dict__:
            texts = (*texts, *self.second_texts)
        for text in texts:
            match = pattern.search(fold_confusables(text))
            if match:
                return text, match
        return None

    def find(self, phrase: str, ignore_case: bool = False, reread: bool = False) -> re.Match[str] | None:
        """Where ``phrase`` occurs in the (folded) text read, not inside a longer word; None if nowhere."""
        located = self.locate(phrase, ignore_case, reread)
        return located[1] if located else None

    def excerpt(self, phrase: str, ignore_case: bool = False) -> str:
        """A short quote of what was read: around ``phrase`` if found, else the closest text read."""
        text = self.normalised_text
        located = self.locate(phrase, ignore_case)
        if located:
            found_in, match = located
            flat = found_in.replace("\n", " ")
            start, end = max(0, match.start() - _EXCERPT_CHARS), match.end() + _EXCERPT_CHARS
            return f'read "...{flat[start:end]}..."'
        if not text:
            return "no text was read in the image"
        closest = closest_span(text, normalise_whitespace(phrase))
        return f'closest text read: "{closest}"'

    def span_confidence(self, span: str) -> float:
        """The confidence of the least confident word of ``span``: each word at the best confidence it was
        read with anywhere in the merged lines (0 for a word only a pass's own text holds)."""
        best: dict[str, float] = {}
        for line in self.lines:
            for word in line.words:
                best[word.text] = max(best.get(word.text, 0.0), word.confidence)
        return min((best.get(word, 0.0) for word in span.split()), default=0.0)


def normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


# Dashes and quotes OCR cannot tell apart, and glyphs drawn alike in common fonts (each pair is
# folded to one glyph of the same length, so match positions stay those of the text read).
_CONFUSABLES = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u00b4`", "'"),
        **dict.fromkeys("\u201c\u201d", '"'),
        **dict.fromkeys("I1|", "l"),
        "0": "O",
    }
)


def fold_confusables(text: str) -> str:
    """``text`` with look-alike glyphs folded to one (same length: positions are kept)."""
    return text.translate(_CONFUSABLES)


def phrase_pattern(phrase: str, ignore_case: bool = False) -> re.Pattern[str] | None:
    """A pattern for ``phrase`` in folded text (``fold_confusables``): not inside a longer word, the
    spaces between its words optional, "rn" and "m" interchangeable; None for an empty phrase."""
    words = [fold_confusables(word) for word in phrase.split()]
    if not words:
        return None
    parts = []
    for word in words:
        pieces, i = [], 0
        while i < len(word):
            if word.startswith("rn", i):
                pieces.append("(?:rn|m)")
                i += 2
            else:
                pieces.append("(?:m|rn)" if word[i] == "m" else re.escape(word[i]))
                i += 1
        parts.append("".join(pieces))
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(r"(?<!\w)" + " ?".join(parts) + r"(?!\w)", flags)


def closest_span(text: str, phrase: str) -> str:
    """The run of words in ``text`` (as many words as ``phrase``) most similar to ``phrase``."""
    words = text.split()
    size = max(1, len(phrase.split()))
    spans = [" ".join(words[i : i + size]) for i in range(max(1, len(words) - size + 1))]
    return max(spans, key=lambda span: difflib.SequenceMatcher(None, span, phrase).ratio())


class _SingleThreadedEnvironment(Mapping[str, str]):
    """The process environment for Tesseract runs, with OpenMP limited to one thread unless the user set
    a limit: the passes run two at a time, and OpenMP's own threads cost more CPU than they save."""

    def _merged(self) -> dict[str, str]:
        return {"OMP_THREAD_LIMIT": "1", **os.environ}

    def __getitem__(self, key: str) -> str:
        return self._merged()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())


# pytesseract starts every Tesseract process with this module-level environment.
pytesseract.pytesseract.environ = _SingleThreadedEnvironment()


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


# --- Where the text is: marks that look like text ---------------------------------------------------


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
        & (h <= _MAX_GLYPH_HEIGHT * height)
        & (w <= _MAX_GLYPH_WIDTH * width)
        & (h <= _MAX_GLYPH_HEIGHT * width)
        & (w <= _MAX_GLYPH_WIDTH * height)
        & (area <= 0.8 * w * h)  # a filled rectangle is a swatch or a bar, not a letter
    )
    return np.stack([x, y, x + w, y + h], axis=1)[glyph]


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
    return histogram[max(0, mode - 4) : mode + 5].sum() >= _MIN_BACKGROUND_SHARE * grey.size


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
class _View:
    """An image prepared for one pass, and how its pixels map back onto the original image: original
    pixel p (x, y) is at ``rotation @ (scale * p) + shift`` in the view."""

    image: Image.Image
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
    too_large = (height > _MAX_GLYPH_HEIGHT * ink.shape[0]) | (width > _MAX_GLYPH_WIDTH * ink.shape[1])
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


def _view(grey: np.ndarray, scale: float, spec: _Pass) -> _View:
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
    return _View(Image.fromarray(canvas), actual, rotation, shift, grey.shape)


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


def _stacked_rows(lines: Sequence[tuple[tuple[int, int, int, int], str]]) -> list[str]:
    """Each line's text, then the same line continued: on the lines stacked under it (a label written
    over several lines: the nearest line starting just below, of similar height, overlapping it or
    centred on it), and on the lines just right of it on the same baseline (one line that Tesseract
    cut in two). ``lines``: (x0, y0, x1, y1) box and text."""
    below: dict[int, int] = {}
    right: dict[int, int] = {}
    for i, ((x0, y0, x1, y1), _) in enumerate(lines):
        height = y1 - y0
        for j, ((a0, b0, a1, b1), _) in enumerate(lines):
            if j == i or not 0.5 * height <= b1 - b0 <= 2 * height:
                continue
            if y1 - 0.3 * height <= b0 <= y1 + height:
                overlap = min(x1, a1) - max(x0, a0)
                centred = abs((x0 + x1) / 2 - (a0 + a1) / 2) <= height
                if (overlap > 0.3 * min(x1 - x0, a1 - a0) or centred) and (
                    i not in below or b0 < lines[below[i]][0][1]
                ):
                    below[i] = j
            tall = max(height, b1 - b0)
            if abs((y0 + y1) / 2 - (b0 + b1) / 2) <= 0.3 * tall and 0 <= a0 - x1 <= 2 * tall:
                if i not in right or a0 < lines[right[i]][0][0]:
                    right[i] = j
    rows = []
    for i in range(len(lines)):
        rows.append(lines[i][1])
        for following in (below, right):
            chain = [i]
            while chain[-1] in following and following[chain[-1]] not in chain and len(chain) < 4:
                chain.append(following[chain[-1]])
            if len(chain) > 1:
                rows.append(" ".join(lines[k][1] for k in chain))
    return rows


def _read_pass(grey: np.ndarray, scale: float, spec: _Pass, lang: str) -> _PassReading:
    view = _view(grey, scale, spec)
    # pytesseract hands the image over as a file in the image's format: uncompressed is fastest.
    view.image.format = "BMP"
    data = pytesseract.image_to_data(
        view.image,
        lang=lang,
        config=f"--psm {spec.psm} -c tessedit_do_invert={int(spec.invert)}",
        output_type=pytesseract.Output.DICT,
    )
    frame_lines = _frame_lines(data)
    rows = _stacked_rows(
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
    passes = [_read_pass(grey, scale, _FIRST_PASS, lang)]
    unread = layout.unread({0: passes[0].lines})
    if not layout.busy and unread.any():
        counts = Counter(int(angle) for angle in layout.angles[unread])
        angles = sorted(a for a, n in counts.items() if a == -90 or (a != 0 and n >= _MIN_SLANTED_MARKS))
        jobs = [*(_turned_pass(angle) for angle in angles), *_UPRIGHT_PASSES]
        with ThreadPoolExecutor(max_workers=_PARALLEL_PASSES) as pool:
            passes += list(pool.map(lambda spec: _read_pass(grey, scale, spec, lang), jobs))
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


class _ReadingMemo:
    """Readings of recently seen images, so several tasks on one image read it once."""

    def __init__(self, read: Callable[[bytes], OcrReading], size: int = 1024) -> None:
        self._read, self._size = read, size
        self._readings: OrderedDict[str, OcrReading] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, png: bytes) -> OcrReading:
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
_SHARED_MEMOS: dict[str, _ReadingMemo] = {}


def shared_reader(lang: str) -> _ReadingMemo:
    """The process-wide memo of Tesseract readings in ``lang`` (a reading depends only on the bytes)."""
    if lang not in _SHARED_MEMOS:
        _SHARED_MEMOS[lang] = _ReadingMemo(lambda png: read_text(png, lang))
    return _SHARED_MEMOS[lang]


# --- The second recogniser: PP-OCR where Tesseract left text unread ----------------------------------

# PP-OCRv4 text detection and recognition (ONNX models bundled in the wheel: nothing is downloaded),
# run by ONNX Runtime. Installed by `make setup` with --no-deps: the wheel asks for opencv-python, whose
# cv2 (a GUI build needing libGL) would replace opencv-python-headless's; pyproject.toml lists its other
# dependencies.
SECOND_RECOGNISER = "rapidocr_onnxruntime==1.4.4"
_SECOND_MODULE = "rapidocr_onnxruntime"
_second_engine: Any = None
_second_lock = threading.Lock()
_second_run_lock = threading.Lock()
_second_warned = False


def second_recogniser_available() -> bool:
    """Whether the second recogniser is installed (warns once, naming how to install it, when not)."""
    global _second_warned
    import importlib.util

    if importlib.util.find_spec(_SECOND_MODULE) is not None:
        return True
    if not _second_warned:
        _second_warned = True
        logger.warning(
            "the OCR judge's second recogniser is not installed, so labels Tesseract leaves unread are "
            'abstained on more often: pip install --no-deps "%s" onnxruntime pyclipper shapely pyyaml '
            "(make setup installs it)",
            SECOND_RECOGNISER,
        )
    return False


def second_recogniser_version() -> str | None:
    """``rapidocr_onnxruntime <version>`` when installed (part of the judge's identity), else None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{_SECOND_MODULE} {version(_SECOND_MODULE)}"
    except PackageNotFoundError:
        return None


def _second_engine_loaded() -> Any:
    """The PP-OCR engine, loaded once per process, single-threaded (its readings are then the same on
    every machine, and evaluate runs images in parallel itself)."""
    global _second_engine
    with _second_lock:
        if _second_engine is None:
            from rapidocr_onnxruntime import RapidOCR

            _second_engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
        return _second_engine


def _rgb_on_white(image: Image.Image) -> np.ndarray:
    """RGB pixels, with transparent pixels shown on white (colour helps PP-OCR on coloured labels)."""
    if image.mode in ("RGBA", "LA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return np.asarray(image.convert("RGB"))


def read_second(png: bytes) -> tuple[str, ...]:
    """What the second recogniser reads in a PNG: one text, a line per text line it found (stacked lines
    and lines cut in two joined, as for Tesseract's passes); () when it finds nothing or is not installed.
    Raises ValueError for undecodable bytes."""
    rgb = _rgb_on_white(decode_png(png))
    if not second_recogniser_available():
        return ()
    engine = _second_engine_loaded()
    # One image at a time: the engine keeps per-image state between its steps (the detector's resize).
    with _second_run_lock:
        result, _ = engine(np.ascontiguousarray(rgb[:, :, ::-1]))  # it takes BGR, as cv2 does
    lines = []
    for box, text, _score in result or []:
        corners = np.asarray(box, dtype=float)
        (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
        if text.strip():
            lines.append(((int(x0), int(y0), int(x1), int(y1)), " ".join(text.split())))
    rows = _stacked_rows(sorted(lines, key=lambda line: (line[0][1], line[0][0])))
    return ("\n".join(rows),) if rows else ()


# Second readings of recently seen images (text only: small), for every judge of the process.
_SECOND_READINGS = _ReadingMemo(read_second)  # type: ignore[arg-type]


def with_second_reading(reading: OcrReading, png: bytes) -> OcrReading:
    """``reading`` of ``png``, able to read the image again with the second recogniser (when installed) for
    a label it does not hold (``OcrReading.locate(..., reread=True)``). The judges ask for it only where a
    label not found would be abstained on (``doubt_about_absence``: the reading is not reliable, or text
    read close to the label may be it misread), so a reliable reading's "no" costs nothing more. The
    second recogniser reads small, grey, coloured, slanted and light-on-dark labels that Tesseract
    misreads; what it reads can make a label found ("yes"), never "no": it does not change which images
    are read reliably."""
    if reading.reread is not None or not second_recogniser_available():
        return reading
    return replace(reading, reread=lambda: _SECOND_READINGS(png))


class JudgeItem(BaseModel):
    """One checklist question as the judge task receives it."""

    id: str
    question: str
    layer: int
    track: str
    expected_text: str | None = None
    # Structured fields of SciIR checklists (absent from checklists made elsewhere): what kind of fact,
    # whether the question asserts it or the absence of a fault, and the strings it is about.
    kind: str | None = None
    polarity: str = "positive"
    about: list[str] = []


def abstention(item: JudgeItem, reasoning: str, evidence: str = "") -> dict[str, Any]:
    """A null verdict with the reason the question cannot be judged."""
    return {"id": item.id, "verdict": None, "evidence": evidence, "reasoning": f"abstained: {reasoning}"}


# Glyphs that OCR takes for one another on small or blurred text (besides those folded before matching).
_LOOKALIKES = ("1lIi|!tfj", "0OoQD", "5Ss", "8B3", "2Zz", "6bG", "9gq", "ceoa", "nhu", "vy", "rt")


def _lookalike(a: str, b: str) -> bool:
    return (
        a.casefold() == b.casefold()
        and a in _CASE_AMBIGUOUS
        or any(a in group and b in group for group in _LOOKALIKES)
    )


def misread_possible(read: str, label: str) -> bool:
    """Whether ``read`` may be ``label`` misread rather than a different text: same length, and every
    difference a glyph OCR takes for another (a letter drawn alike in both cases, "1" for "t", ...), at
    most one of them unless all are case changes."""
    read, label = fold_confusables(read), fold_confusables(label)
    if len(read) != len(label):
        return False
    different = [(a, b) for a, b in zip(read, label, strict=True) if a != b]
    if not all(_lookalike(a, b) for a, b in different):
        return False
    return len(different) <= 1 or all(a.casefold() == b.casefold() for a, b in different)


def _near_misses(reading: OcrReading, label: str) -> Iterator[str]:
    """Runs of words of the merged reading (where each word's confidence is known; stacked lines joined)
    that resemble ``label``, ignoring case."""
    size = max(1, len(label.split()))
    for row in reading.texts[0].split("\n") if reading.texts else ():
        words = row.split()
        for start in range(max(1, len(words) - size + 1)):
            span = " ".join(words[start : start + size])
            if span and resembles(span, label):
                yield span


def doubt_about_absence(reading: OcrReading, label: str) -> str | None:
    """Why ``label``, not found in ``reading``, may still be drawn (None: it is absent, as far as OCR can
    tell): the reading is not reliable, the label has glyphs OCR does not read, text read close to it may
    be it misread (a lookalike glyph, or read with little confidence), or its words were read apart.
    Text read close to it with confidence and no lookalike glyph ("Glucse" for "Glucose") is a
    misspelling drawn instead: no doubt."""
    if not reading.reliable:
        return f'"{label}" was not read, but {reading.why_unreliable()}'
    unreadable = sorted({c for c in label if not (c.isascii() and c.isprintable())})
    if unreadable:
        return f'"{label}" has glyphs OCR does not read ({" ".join(unreadable)})'
    misspelt = False
    for span in _near_misses(reading, label):
        confidence = reading.span_confidence(span)
        if misread_possible(span, normalise_whitespace(label)) or confidence < _CONFIDENT_MISREAD:
            return (
                f'read "{span}" (confidence {confidence:.0f}), close to "{label}": misspelt or misread, '
                "OCR cannot tell"
            )
        # Of about the label's length: a misspelling drawn instead (a part of the label read is not).
        misspelt = misspelt or abs(len(span) - len(normalise_whitespace(label))) <= 2
    words = {fold_confusables(word) for text in reading.texts for word in text.split()}
    if not misspelt and len(label.split()) > 1 and all(fold_confusables(w) in words for w in label.split()):
        return f'the words of "{label}" were read, but not in sequence'
    return None


def judge_item(item: JudgeItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one checklist question from what was read; abstain when OCR cannot tell.

    Found: "yes". Not found: "no", unless ``doubt_about_absence`` finds a reason why the label may still
    be drawn: then the second recogniser reads the image (``with_second_reading``; "yes" if it reads the
    label), else abstained on with that reason.
    """
    if not item.expected_text:
        return abstention(item, f"OCR reads text only and cannot judge a {item.track} question")
    label = item.expected_text
    found = reading.find(label) is not None
    doubt = None if found else doubt_about_absence(reading, label)
    # Where Tesseract's reading leaves doubt, the second recogniser reads the image again.
    if found or (doubt is not None and reading.find(label, reread=True) is not None):
        return {
            "id": item.id,
            "verdict": "yes",
            "evidence": reading.excerpt(label),
            "reasoning": f'OCR found "{label}" with exactly this spelling.',
        }
    if doubt is not None:
        return abstention(item, doubt, reading.excerpt(label))
    return {
        "id": item.id,
        "verdict": "no",
        "evidence": reading.excerpt(label),
        "reasoning": (
            f'OCR found "{label}" nowhere with exactly this spelling, and read all the text in the image.'
        ),
    }


def judge_by_ocr(request: VLMRequest, read: Callable[[bytes], OcrReading]) -> VLMResult:
    """The ``judge`` task answered from OCR: spelling checks judged, everything else abstained."""
    return judge_checklist(
        request, read, lambda items, reading, image: [judge_item(item, reading) for item in items]
    )


ItemsAnswerer = Callable[[Sequence[JudgeItem], OcrReading, bytes], list[dict[str, Any]]]


def judge_checklist(
    request: VLMRequest, read: Callable[[bytes], OcrReading], answer: ItemsAnswerer
) -> VLMResult:
    """The ``judge`` task: validate the request's checklist, read its image, answer every item."""
    if len(request.images) != 1:
        return VLMResult.failed(f"judge request needs exactly one image, got {len(request.images)}")
    try:
        items = [JudgeItem.model_validate(item) for item in request.context.get("checklist", [])]
    except ValidationError as error:
        return VLMResult.failed(f"judge request has a malformed checklist: {error}")
    if not items:
        return VLMResult.failed("judge request has no checklist questions (context key 'checklist')")
    reading = with_second_reading(read(request.images[0]), request.images[0])
    return VLMResult(output={"answers": answer(items, reading, request.images[0])})


class SolverItem(BaseModel):
    """One AIBench question as the ``aibench_qa`` task receives it (``label``: the component a level-1
    question asks about; ``flow``: the two components, from and to, a level-2 question asks about)."""

    id: str
    level: int
    question: str
    label: str | None = None
    flow: list[str] | None = None


def one_edit_apart(first: str, second: str) -> bool:
    """Whether one character substituted, inserted or deleted turns ``first`` into ``second`` (or they are
    equal): "R1" read as "Rl" is as close as two short labels get without being the same."""
    if abs(len(first) - len(second)) > 1:
        return False
    shorter, longer = sorted((first, second), key=len)
    for index, (a, b) in enumerate(zip(shorter, longer, strict=False)):
        if a != b:
            rest = index + 1 if len(shorter) == len(longer) else index
            return shorter[rest:] == longer[index + 1 :]
    return True


def resembles(text: str, label: str) -> bool:
    """Whether ``text`` read may be ``label`` misspelt or misread (ignoring case): similar by at least
    ``_NEAR_MATCH``, or one character apart (a short label's one misread glyph)."""
    a, b = text.casefold(), label.casefold()
    return one_edit_apart(a, b) or difflib.SequenceMatcher(None, a, b).ratio() >= _NEAR_MATCH


def near_miss(reading: OcrReading, label: str) -> str | None:
    """A run of words read that is close to ``label`` without being it (misspelt or misread: OCR cannot
    tell which), ignoring case; None when nothing read is that close."""
    words = reading.normalised_text.split()
    size = max(1, len(label.split()))
    spans = [" ".join(words[i : i + size]) for i in range(len(words) - size + 1)] or [" ".join(words)]
    return next((span for span in spans if span and resembles(span, label)), None)


def _solver_answer(item: SolverItem, answer: str | None, evidence: str) -> dict[str, Any]:
    return {"id": item.id, "answer": answer, "evidence": evidence}


def answer_component(item: SolverItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one AIBench question from what was read: only component existence, and only when clear
    (found ignoring case: "yes"; "no" only without ``doubt_about_absence`` and without anything read
    close to the label, since a misspelt component still exists)."""
    if item.level != 1 or not item.label:
        return _solver_answer(
            item, None, f"abstained: OCR reads text only and cannot answer a level-{item.level} question"
        )
    if reading.find(item.label, ignore_case=True):
        return _solver_answer(item, "yes", reading.excerpt(item.label, ignore_case=True))
    text = reading.normalised_text
    doubt = doubt_about_absence(reading, item.label) if text else "no text was read in the image"
    closest = near_miss(reading, item.label) if text and doubt is None else None
    if closest is not None:
        doubt = f'read "{closest}", close to "{item.label}" (misspelt or misread: OCR cannot tell)'
    if doubt is not None:
        # Where Tesseract's reading leaves doubt, the second recogniser reads the image again.
        if reading.find(item.label, ignore_case=True, reread=True):
            return _solver_answer(item, "yes", reading.excerpt(item.label, ignore_case=True))
        return _solver_answer(item, None, f"abstained: {doubt}")
    closest = closest_span(text, normalise_whitespace(item.label))
    return _solver_answer(item, "no", f'"{item.label}" was not read; closest text read: "{closest}"')


SolverAnswerer = Callable[[list[SolverItem], "OcrReading", bytes], list[dict[str, Any]]]


def solve_questions(
    request: VLMRequest, read: Callable[[bytes], OcrReading], answer: SolverAnswerer
) -> VLMResult:
    """The ``aibench_qa`` task: validate the request's questions, read its image, answer every question."""
    if len(request.images) != 1:
        return VLMResult.failed(f"aibench_qa request needs exactly one image, got {len(request.images)}")
    try:
        items = [SolverItem.model_validate(item) for item in request.context.get("questions", [])]
    except ValidationError as error:
        return VLMResult.failed(f"aibench_qa request has malformed questions: {error}")
    if not items:
        return VLMResult.failed("aibench_qa request has no questions (context key 'questions')")
    reading = with_second_reading(read(request.images[0]), request.images[0])
    return VLMResult(output={"answers": answer(items, reading, request.images[0])})


def answer_aibench_by_ocr(request: VLMRequest, read: Callable[[bytes], OcrReading]) -> VLMResult:
    """The ``aibench_qa`` task answered from OCR: component existence judged, every other level abstained."""
    return solve_questions(
        request, read, lambda items, reading, _image: [answer_component(i, reading) for i in items]
    )


class OcrVLM(RuleBasedVLM):
    """Answers exact-spelling checks (``judge``) and component existence (``aibench_qa``) with Tesseract
    (and the second recogniser where Tesseract leaves doubt); abstains on the rest.

    Config: ``lang`` (Tesseract language codes, default ``eng``).
    """

    reader = "ocr"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.lang: str = config.get("lang", "eng")
        require_tesseract(self.lang)
        self.read = shared_reader(self.lang)
        self.sight = Sight(self.read)

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "reader": READER_VERSION, "second_reader": second_recogniser_version()}
