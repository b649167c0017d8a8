"""Required text: the strings a free-text requirement (a statement, a prompt) asks to be written in the
image, each the ``expected_text`` of a layer-1 text question that OCR checks letter by letter beside the
requirement's own question (docs/bring_your_own_benchmark.md, "Text checks from quoted strings").

A wrong text question costs more than a missing one: a text check answered "no" vetoes the sample's
``final``. So a quoted string qualifies only when all of these hold:

1. It is quoted: ``"..."``, ``“...”``, ``'...'`` or ``‘...’``. A quote opens only where no letter or digit
   stands before it and closes only where none follows, so the apostrophes of "the cell's nucleus", "the
   students' answers" or "conductor’s hat" open nothing, "Newton's law" stays whole inside single quotes,
   and the inch mark of 5" opens nothing.
2. It reads as text to draw: 1 to ``MAX_WORDS`` words, at most ``MAX_CHARS`` characters, a letter or a
   digit among them. A final ``.``, ``,``, ``;`` or ``:`` inside the quotes (American punctuation) is
   dropped: the string is still found wherever the longer one is written.
3. The requirement says it is written: a text word (``TEXT_WORDS``: labelled, reads, says, written,
   title, word, caption, named, marked, equation...) stands right before the opening quote, or before it
   with only linking words between (``LINKING_WORDS``: "is labelled as 'A'", "with the text 'B'"), or
   right after the closing quote, perhaps after is / are ("'Hello World' written on it"). Only the text
   between this quote and its neighbours counts, and a string listed after one that qualifies ("labelled
   'A', 'B' and 'C'") qualifies with it. So scare quotes (the so-called "black box", the cell's
   "gatekeeper") yield nothing.
4. Nothing outside the quotes makes the text optional or forbidden (``HEDGE_WORDS``: not, no, never,
   without, nor, except, or, either, a word ending in n't): "not labelled 'A'" or "labelled 'A' or 'B'"
   yield nothing.

Each string comes once, in order of appearance. :func:`quoted_strings` applies rules 1 and 2 alone, for
text where quoting already means "write this" (a text-to-image prompt: ``a sign that says 'EXIT'``).
"""

from __future__ import annotations

import re

MAX_WORDS = 8
MAX_CHARS = 60
# Straight double, curly double, straight single and curly single quotes; a single quote followed by a
# letter inside the string (Newton's) is an apostrophe, not the closing quote.
_QUOTED = re.compile(
    r'(?<!\w)"([^"\n]*)"(?!\w)'
    "|(?<!\\w)\u201c([^\u201d\n]*)\u201d(?!\\w)"
    r"|(?<!\w)'((?:[^'\n]|'(?=\w))*?)'(?!\w)"
    "|(?<!\\w)\u2018((?:[^\u2019\n]|\u2019(?=\\w))*?)\u2019(?!\\w)"
)
_WORD = re.compile(r"[a-z0-9]+(?:['\u2019][a-z]+)?")
TEXT_WORDS = frozenset(
    """label labels labelled labeled labelling labeling read reads reading say says saying write writes
    written wrote writing text title titled titles subtitle caption captioned heading headed header legend
    word words letter letters lettering name names named marked annotated annotation spelled spelt
    spelling inscribed inscription printed denoted symbol equation formula""".split()
)
LINKING_WORDS = frozenset("is are be was were as with the a an its their that which exactly clearly".split())
_BE = frozenset("is are be was were".split())
HEDGE_WORDS = frozenset("not no never without nor none neither nothing cannot except or either".split())
# Set phrases that hold a text word without speaking of text.
_IDIOMS = re.compile(r"\bin other words\b|\bso[- ]called\b", re.IGNORECASE)
# What may stand between two strings of one list: commas, "and", "&".
_LIST_GAP = re.compile(r"^\s*(?:,|;|&|\band\b|\s)*\s*$", re.IGNORECASE)
_TRAILING_STOP = ".,;:"


def required_text(requirement: str) -> list[str]:
    """The quoted strings ``requirement`` asks to be written in the image, by the rule of the module
    docstring; empty when it asks for none."""
    quotes = list(_QUOTED.finditer(requirement))
    if not quotes:
        return []
    gaps = [requirement[: quotes[0].start()]]
    gaps += [requirement[a.end() : b.start()] for a, b in zip(quotes, quotes[1:], strict=False)]
    gaps.append(requirement[quotes[-1].end() :])
    if any(_hedges(gap) for gap in gaps):
        return []
    named = [_text_word_before(gaps[i]) or _text_word_after(gaps[i + 1]) for i in range(len(quotes))]
    listed = [i > 0 and bool(_LIST_GAP.match(gaps[i])) for i in range(len(quotes))]
    named = _spread_over_lists(named, listed)
    strings = [_drawable(next(group for group in match.groups() if group is not None)) for match in quotes]
    found = [text for text, ok in zip(strings, named, strict=True) if ok and text is not None]
    return list(dict.fromkeys(found))


def quoted_strings(text: str) -> list[str]:
    """Every string ``text`` quotes that reads as text to draw (rules 1 and 2), once each, in order."""
    strings = (
        _drawable(next(group for group in match.groups() if group is not None))
        for match in _QUOTED.finditer(text)
    )
    return list(dict.fromkeys(string for string in strings if string is not None))


def _words(text: str) -> list[str]:
    return _WORD.findall(_IDIOMS.sub(" ", text.lower()))


def _hedges(gap: str) -> bool:
    return any(word in HEDGE_WORDS or word.endswith(("n't", "n\u2019t")) for word in _words(gap))


def _text_word_before(gap: str) -> bool:
    for word in reversed(_words(gap)):
        if word in TEXT_WORDS:
            return True
        if word not in LINKING_WORDS:
            return False
    return False


def _text_word_after(gap: str) -> bool:
    words = _words(gap)[:2]
    if words and words[0] in _BE:
        words = words[1:]
    return bool(words) and words[0] in TEXT_WORDS


def _spread_over_lists(named: list[bool], listed: list[bool]) -> list[bool]:
    """A string joined to its neighbour by a list gap qualifies when the neighbour does, both ways."""
    named = list(named)
    for index in range(1, len(named)):
        if listed[index] and named[index - 1]:
            named[index] = True
    for index in range(len(named) - 1, 0, -1):
        if listed[index] and named[index]:
            named[index - 1] = True
    return named


def _drawable(quoted: str) -> str | None:
    """The quoted string as text to draw (whitespace folded, a final stop dropped), or None."""
    text = " ".join(quoted.split()).rstrip(_TRAILING_STOP).rstrip()
    if not any(char.isalnum() for char in text):
        return None
    if len(text) > MAX_CHARS or len(text.split()) > MAX_WORDS:
        return None
    return text
