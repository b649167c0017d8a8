"""What OCR read in one image (``OcrReading``: lines of words with boxes, each pass's own text, how completely
the image's text was read) and how a phrase is matched in it.

Matching forgives what OCR cannot see: dash and quote variants, glyphs drawn alike (I, l, 1 and |;
O and 0; rn and m) and the spaces between words (narrow spaces are often lost); a label may run
over lines stacked under each other. The reading itself is made by ``sciir.backends.readers.tesseract``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

# A reading is reliable when at most this many text-like marks (thin bars aside) are left outside
# confidently read words.
_MAX_UNREAD_MARKS = 0
_EXCERPT_CHARS = 40


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
        merged = "\n".join(stacked_rows([(line.box, line.text) for line in self.lines]))
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


def stacked_rows(lines: Sequence[tuple[tuple[int, int, int, int], str]]) -> list[str]:
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
