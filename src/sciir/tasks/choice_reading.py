"""What OCR can settle of an AIBench question: whether a component label is written in the image, and
from that a level-1 multiple-choice question that asks which of its options is shown.

A label is present when it is read, ignoring case; absent only where the reading leaves no doubt
(``doubt_about_absence``) and nothing close to it was read, since a misspelt component still exists;
otherwise the reading cannot tell. A multiple-choice question is answered only at level 1 (component
existence), when its wording asks what is shown (no negation: "not", "missing", "except" ...) and every
option but the insufficient-information one is a label: the one quoted string of the option, or the
option itself when it is a short name. Exactly one option read and the others absent: that option. No
option read and all absent: the insufficient-information option ("none of the other options are
correct"). Anything else (two options read, an option the reading cannot settle, an option that is a
sentence, a question of another level) is abstained on, with the reason.

A level-1 question whose options are Yes and No (AIBench's own: "Is the '<component>' component present
...?", in either order) asks about the one string it quotes, which the judge's text check reads
(``sight_checks.answer_text``: exact spelling, the second recogniser where Tesseract leaves doubt). Read:
the Yes option. Not read: abstained on, even from an image read in full, since a component may be drawn
as an icon or named otherwise; so "No" is never answered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sciir.aibench.choices import is_insufficient_option
from sciir.backends.readers.misreadings import doubt_about_absence, near_miss
from sciir.backends.readers.text import OcrReading, closest_span, normalise_whitespace
from sciir.tasks.required_text import quoted_strings
from sciir.tasks.sight_checks import JudgeItem, answer_text

COMPONENT_LEVEL = 1
# An option longer than this, unquoted, is a sentence rather than a component's name.
LABEL_WORDS = 6
_QUOTED = re.compile(r'"([^"\n]+)"|\u201c([^\u201d\n]+)\u201d|\'([^\'\n]+)\'')
_SENTENCE = re.compile(r"[.;:!?,]")
_NEGATION = re.compile(
    r"\b(?:not|no|none|never|neither|nor|without|except|missing|absent|lack\w*|omit\w*|exclud\w*)\b|n't\b",
    re.IGNORECASE,
)


def label_presence(label: str, reading: OcrReading) -> tuple[str | None, str]:
    """``("yes", evidence)`` when ``label`` is read, ``("no", evidence)`` when it is clearly absent,
    ``(None, why)`` when the reading cannot tell (see the module docstring)."""
    if reading.find(label, ignore_case=True):
        return "yes", reading.excerpt(label, ignore_case=True)
    text = reading.normalised_text
    doubt = doubt_about_absence(reading, label) if text else "no text was read in the image"
    closest = near_miss(reading, label) if text and doubt is None else None
    if closest is not None:
        doubt = f'read "{closest}", close to "{label}" (misspelt or misread: OCR cannot tell)'
    if doubt is not None:
        # Where Tesseract's reading leaves doubt, the second recogniser reads the image again.
        if reading.find(label, ignore_case=True, reread=True):
            return "yes", reading.excerpt(label, ignore_case=True)
        return None, doubt
    closest = closest_span(text, normalise_whitespace(label))
    return "no", f'"{label}" was not read; closest text read: "{closest}"'


def option_label(text: str) -> str | None:
    """The component label an option names: its one quoted string, or the option itself when it is a
    short name (at most ``LABEL_WORDS`` words, no sentence punctuation); None for anything else."""
    quoted = [next(group for group in match.groups() if group) for match in _QUOTED.finditer(text)]
    if quoted:
        return quoted[0].strip() if len(quoted) == 1 else None
    text = text.strip()
    if not text or len(text.split()) > LABEL_WORDS or _SENTENCE.search(text):
        return None
    return text


def yes_no_letters(options: Mapping[str, str]) -> dict[str, str] | None:
    """``{"yes": letter, "no": letter}`` when the options (the insufficient-information one aside) are
    exactly Yes and No, in any order; None otherwise."""
    plain = {letter: text for letter, text in options.items() if not is_insufficient_option(text)}
    letters = {text.strip().rstrip(".").casefold(): letter for letter, text in plain.items()}
    return letters if len(plain) == 2 and set(letters) == {"yes", "no"} else None


def answer_yes_no(
    question_id: str, question: str, letters: Mapping[str, str], reading: OcrReading
) -> dict[str, Any]:
    """The Yes letter when the judge's text check reads the one string the question quotes; otherwise
    abstained on with the reason (see the module docstring)."""
    names = quoted_strings(question)
    if len(names) != 1:
        found = ", ".join(f'"{name}"' for name in names) or "nothing"
        return _abstained(question_id, f"the question should quote one component name, and quotes {found}")
    check = answer_text(
        JudgeItem(id=question_id, question=question, layer=1, track="aibench", expected_text=names[0]),
        reading,
    )
    if check["verdict"] == "yes":
        return {
            "id": question_id,
            "answer": letters["yes"],
            "evidence": f"{check['reasoning']} {check['evidence']}",
        }
    if check["verdict"] == "no":
        return _abstained(
            question_id,
            f'"{names[0]}" is not written (all the text was read), but the component may be drawn as an '
            "icon or named otherwise",
        )
    return _abstained(question_id, str(check["reasoning"]).removeprefix("abstained: "))


def _abstained(question_id: str, why: str) -> dict[str, Any]:
    return {"id": question_id, "answer": None, "evidence": f"abstained: {why}"}


def answer_choice(
    question_id: str, level: int, question: str, options: Mapping[str, str], reading: OcrReading
) -> dict[str, Any]:
    """The offline answer to one multiple-choice question (see the module docstring)."""
    if level != COMPONENT_LEVEL:
        return _abstained(question_id, f"OCR reads labels and cannot answer a level-{level} question")
    if _NEGATION.search(question):
        return _abstained(question_id, "the question is worded with a negation: OCR only tells what is shown")
    yes_no = yes_no_letters(options)
    if yes_no is not None:
        return answer_yes_no(question_id, question, yes_no, reading)
    insufficient = [letter for letter, text in options.items() if is_insufficient_option(text)]
    labels = {letter: option_label(text) for letter, text in options.items() if letter not in insufficient}
    unnamed = [letter for letter, label in labels.items() if label is None]
    if unnamed:
        return _abstained(question_id, f"option {', '.join(unnamed)} names no component label to look for")
    presence = {letter: label_presence(str(label), reading) for letter, label in labels.items()}
    unsure = [f"{letter}: {why}" for letter, (answer, why) in presence.items() if answer is None]
    if unsure:
        return _abstained(question_id, "; ".join(unsure))
    shown = [letter for letter, (answer, _) in presence.items() if answer == "yes"]
    evidence = "; ".join(f"{letter}: {why}" for letter, (_, why) in presence.items())
    if len(shown) == 1:
        return {"id": question_id, "answer": shown[0], "evidence": evidence}
    if not shown and insufficient:
        return {"id": question_id, "answer": insufficient[0], "evidence": f"no option is written; {evidence}"}
    why = f"options {', '.join(shown)} are all written" if shown else "no option is written, and none says so"
    return _abstained(question_id, why)
