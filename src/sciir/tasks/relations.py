"""Directed relations between a figure's labels, as the offline annotators read them: directed pairs of
labels a figure really shows.

The image is read first: an arrow from the shape holding label A to the shape holding label B gives (A, B);
both labels must each be read inside exactly one shape (``sciir.backends.readers.diagram``). Text adds a
pair only where one sentence explicitly states a directed relation between two labels read in the image
("A is followed by B", "B is preceded by A", "A -> B", ...) and the image cannot settle it: an end is not
read inside exactly one shape, or the strokes joining them have no clear head. A sentence the image
contradicts (the arrow points the other way, or no stroke joins two located shapes) adds nothing.
Relations only implied across sentences ("B is then carried out.") are not guessed: they are left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sciir.backends.readers.diagram import Diagram, Pair, drawn_relations, image_settles, located_labels

# Explicit directed phrasings, with {x} the first label named and {y} the second; ``forward`` when the
# first named is the source ("x precedes y"), not when it is the target ("x follows y").
_PHRASINGS: tuple[tuple[str, bool], ...] = (
    (r"{x}\s+leads?\s+to\s+{y}", True),
    (r"{x}\s*(?:->|→|⟶|=>)\s*{y}", True),
    (r"\bfrom\s+{x}\s+to\s+{y}", True),
    (r"{x}\s+(?:is|are)\s+(?:then\s+)?followed\s+by\s+{y}", True),
    (r"{x}\s+precedes?\s+{y}", True),
    (r"{x}\s+(?:feeds?|flows?)\s+into\s+{y}", True),
    (r"{x}\s+follows?\s+{y}", False),
    (r"{x}\s+(?:is|are)\s+preceded\s+by\s+{y}", False),
)


def stated_relations(text: str, labels: Sequence[str]) -> list[Pair]:
    """Pairs (A, B) of ``labels`` that one explicit phrase of ``text`` states as directed from A to B,
    in text order (spelled as in ``labels``; matched ignoring case, as prose lowers a capital)."""
    if len(labels) < 2:
        return []
    spelling = {label.casefold(): label for label in labels}
    names = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    # The second label is a lookahead, so a chain "A -> B -> C" shares its middle label.
    first, second = rf"(?<!\w)({names})(?!\w)", rf"(?=({names})(?!\w))"
    found: list[tuple[int, Pair]] = []
    for phrasing, forward in _PHRASINGS:
        for match in re.finditer(phrasing.format(x=first, y=second), text, re.IGNORECASE):
            x, y = spelling[match.group(1).casefold()], spelling[match.group(2).casefold()]
            found.append((match.start(), (x, y) if forward else (y, x)))
    pairs = [pair for _, pair in sorted(found) if pair[0] != pair[1]]
    return list(dict.fromkeys(pairs))


def figure_relations(diagram: Diagram, labels: Sequence[str], text: str) -> list[Pair]:
    """The relations the figure shows: arrows read in the image, then pairs the text states explicitly
    where the image cannot settle them (module docstring)."""
    drawn = drawn_relations(diagram, labels)
    located = located_labels(diagram, labels)
    stated = [pair for pair in stated_relations(text, labels) if not image_settles(diagram, pair, located)]
    return list(dict.fromkeys([*drawn, *stated]))
