"""Whether a label OCR did not find may still be drawn: the reading is not reliable, the label has glyphs OCR
does not read or is a lone glyph, text read close to it may be it misread (a lookalike glyph, or read
with little confidence), or its words were read apart (``doubt_about_absence``). A confident misspelling
("Glucse" read where "Glucose" is asked) is a different text drawn instead: no doubt.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from sciir.backends.readers.text import OcrReading, fold_confusables, normalise_whitespace

# Text read close to a label proves it absent only when every word of it was read this confidently.
_CONFIDENT_MISREAD = 85.0
# A run of words read this similar (0-1, ignoring case) to a label asked about may be that label
# misspelt or misread.
_NEAR_MATCH = 0.75
# Letters whose upper and lower case differ only in size: OCR confuses their case on small text.
_CASE_AMBIGUOUS = frozenset("cosuvwxzCOSUVWXZ")


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
    tell): the reading is not reliable, the label has glyphs OCR does not read or is one glyph, text read
    close to it may be it misread (a lookalike glyph, or read with little confidence), or its words were
    read apart. Text read close to it with confidence and no lookalike glyph ("Glucse" for "Glucose") is
    a misspelling drawn instead: no doubt."""
    if not reading.reliable:
        return f'"{label}" was not read, but {reading.why_unreliable()}'
    unreadable = sorted({c for c in label if not (c.isascii() and c.isprintable())})
    if unreadable:
        return f'"{label}" has glyphs OCR does not read ({" ".join(unreadable)})'
    if len(normalise_whitespace(label)) == 1:
        # Tesseract reads no glyph standing alone (a point labelled "A"), and one glyph is no row of
        # text-like marks, so a reading that missed it still looks complete.
        return f'"{label}" is a single glyph, which OCR does not read on its own'
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
