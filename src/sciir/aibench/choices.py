"""AIBench's multiple-choice questions, as its authors publish them: per paper a checklist of questions,
each with its level (``Level 1: Component Existence`` ... ``Level 4: Global Semantics``), lettered
options and the correct option's letter. One option of each says "The image does not contain sufficient
information to answer or none of the other options are correct.": a solver may give it, and it is
correct only where it is the correct option (``sciir.aibench.level_accuracy`` counts how often it was
given).

In the ``aibench_qa`` table a multiple-choice question has kind ``choice``, its correct letter as
``gold_answer``, its options as a JSON object and the letter of its insufficient-information option
(``insufficient_option``, null when it has none); the yes/no questions annotate writes have neither.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sciir.aibench.questions import LEVELS

CHOICE_KIND = "choice"
INSUFFICIENT_OPTION = (
    "The image does not contain sufficient information to answer or none of the other options are correct."
)
# An option is the insufficient-information one when its words start as AIBench's wording does.
_INSUFFICIENT_START = "the image does not contain sufficient information"
# "Level 2: Local Topology", "level 2", "L2", 2.
_LEVEL = re.compile(r"^\s*(?:level|l)?\s*(\d+)\b", re.IGNORECASE)
# Option letters: "A" ... "Z", or short labels of letters and digits ("A1").
OPTION_LABEL = re.compile(r"^[A-Za-z0-9]{1,3}$")


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


def is_insufficient_option(text: str) -> bool:
    """True for AIBench's "does not contain sufficient information ... or none of the other options"."""
    return _words(text).startswith(_words(_INSUFFICIENT_START))


def insufficient_letter(options: Mapping[str, str]) -> str | None:
    """The letter of the insufficient-information option, None when the question has none."""
    return next((letter for letter, text in options.items() if is_insufficient_option(text)), None)


def level_number(value: Any) -> int | None:
    """The level a value names (``"Level 3: Phase Architecture"``, ``"3"``, ``3``), None when it names
    none of AIBench's four."""
    if isinstance(value, bool):
        return None
    number: int | None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    else:
        match = _LEVEL.match(str(value))
        number = int(match.group(1)) if match else None
    return number if number in LEVELS else None


@dataclass(frozen=True)
class ChoiceQuestion:
    """One multiple-choice question: its id, level (1-4), wording, options (letter -> text, in order) and
    the correct option's letter."""

    id: str
    text: str
    level: int
    options: Mapping[str, str]
    answer: str

    @property
    def insufficient(self) -> str | None:
        return insufficient_letter(self.options)


def choice_problem(level: Any, options: Any, answer: Any) -> str | None:
    """Why a question's level, options or answer cannot be used (None when they can): the level must be
    1-4, the options an object of at least two letters (``A``, ``B`` ... or short labels) to non-empty
    texts, and the answer one of its letters."""
    if level_number(level) is None:
        return f"level {level!r} is none of AIBench's levels 1-4"
    if not isinstance(options, Mapping) or len(options) < 2:
        return f"options must be an object of at least two letters to option texts, found {options!r}"
    bad = [key for key, text in options.items() if not OPTION_LABEL.match(str(key)) or not str(text).strip()]
    if bad:
        return f"options {bad} need a label of up to three letters or digits and a non-empty text"
    if str(answer).strip() not in {str(key) for key in options}:
        return f"the correct option {answer!r} is none of its options {list(options)}"
    return None


def choice_rows(sample_id: str, questions: Sequence[ChoiceQuestion]) -> list[dict[str, Any]]:
    """The ``aibench_qa`` rows of one sample's multiple-choice questions."""
    return [
        {
            "sample_id": sample_id,
            "question_id": question.id,
            "level": question.level,
            "kind": CHOICE_KIND,
            "question": question.text,
            "gold_answer": question.answer,
            "nodes": "[]",
            "phases": "[]",
            "options": json.dumps(dict(question.options), ensure_ascii=False),
            "insufficient_option": question.insufficient,
        }
        for question in questions
    ]


def question_options(row: Any) -> dict[str, str] | None:
    """The options of an ``aibench_qa`` row (a namedtuple or a mapping), None for a yes/no question
    (also for a table written before the column existed)."""
    value = row.get("options") if isinstance(row, Mapping) else getattr(row, "options", None)
    if not isinstance(value, str) or not value.strip():
        return None
    options = json.loads(value)
    return {str(letter): str(text) for letter, text in options.items()}
