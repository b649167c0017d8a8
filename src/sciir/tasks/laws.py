"""Law statements as data: the equation a statement writes, and when another text contradicts it.

A law statement is free text ("Ohm's law: V = I R", "Boyle's law: P V = constant", "Read counts are
proportional to transcript abundance"). When it writes one equation, its sides are what follows the
last colon, split at the single "=". Another text contradicts the statement when it writes an
equation for the same left side with a different right side ("V = I / R" against "V = I R").
Sides are compared ignoring case and spacing, so "V=IR" is the same equation as "V = I R".
"""

from __future__ import annotations

from collections.abc import Iterable


def compact(text: str) -> str:
    """Text compared ignoring case and whitespace."""
    return "".join(text.casefold().split())


def equation_sides(statement: str) -> tuple[str, str] | None:
    """The (left, right) sides of the one equation ``statement`` writes, compacted; None when it writes
    no equation, several, or one with an empty side."""
    formula = statement.rsplit(":", 1)[-1]
    if formula.count("=") != 1:
        return None
    left, right = (compact(side) for side in formula.split("="))
    return (left, right) if left and right else None


def contradicting(statement: str, texts: Iterable[str]) -> list[str]:
    """The texts that write an equation for the statement's left side with another right side."""
    sides = equation_sides(statement)
    if sides is None:
        return []
    found = []
    for text in texts:
        other = equation_sides(text)
        if other is not None and other[0] == sides[0] and other[1] != sides[1]:
            found.append(text)
    return found


def states(statement: str, text: str) -> bool:
    """Whether ``text`` writes ``statement`` (ignoring case and spacing)."""
    wanted = compact(statement)
    return bool(wanted) and wanted in compact(text)
