"""The offline annotator's relations: directed pairs of labels a figure really shows.

The image is read first: an arrow (``sciir.backends.diagram``) from the shape holding label A to the
shape holding label B gives (A, B); both labels must each be read inside exactly one shape (``shape_label``). Text adds a
pair only where one sentence explicitly states a directed relation between two labels read in the image
("A is followed by B", "B is preceded by A", "A -> B", ...) and the image cannot settle it: an end is not
read inside exactly one shape, or the strokes joining them have no clear head. A sentence the image
contradicts (the arrow points the other way, or no stroke joins two located shapes) adds nothing.
Relations only implied across sentences ("B is then carried out.") are not guessed: they are left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sciir.backends.diagram import Diagram, Shape, label_key

Pair = tuple[str, str]

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


def figure_relations(diagram: Diagram, labels: Sequence[str], text: str) -> list[Pair]:
    """The relations the figure shows: arrows read in the image, then pairs the text states explicitly
    where the image cannot settle them (module docstring)."""
    drawn = drawn_relations(diagram, labels)
    located = located_labels(diagram, labels)
    stated = [pair for pair in stated_relations(text, labels) if not image_settles(diagram, pair, located)]
    return list(dict.fromkeys([*drawn, *stated]))
