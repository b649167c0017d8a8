"""The offline solver on AIBench's multiple-choice questions: it answers a level-1 question asking which
component is shown only when OCR settles it (one option's label read, the others clearly absent; none
read: the insufficient-information option) and abstains on everything else, with the reason."""

from __future__ import annotations

import io
import json
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.aibench.choices import INSUFFICIENT_OPTION, ChoiceQuestion, choice_rows
from sciir.aibench.level_accuracy import score_answers
from sciir.backends.offline import OfflineVLM
from sciir.tasks.aibench_qa import (
    answer_rows,
    answers_frame,
    build_solver_request,
    parse_solver_reply,
    solver_items,
)
from sciir.tasks.choice_reading import option_label, yes_no_letters
from sciir.tasks.registry import rule_book

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def _png(labels: list[str]) -> bytes:
    image = Image.new("RGB", (720, 300), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(FONT), 30)
    for index, label in enumerate(labels):
        left = 30 + 360 * index
        draw.rectangle((left, 100, left + 320, 190), outline="black", width=3)
        draw.text((left + 20, 125), label, fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _question(qid: str, question: str, options: list[str], level: int = 1) -> dict:
    letters = "ABCDE"[: len(options) + 1]
    return {
        "id": qid,
        "level": level,
        "question": question,
        "label": None,
        "flow": None,
        "options": dict(zip(letters, [*options, INSUFFICIENT_OPTION], strict=True)),
    }


QUESTIONS = [
    _question("shown", "Which component appears in the illustration?", ["Image Encoder", "Text Encoder", "Critic"]),
    _question("quoted", "Which module is drawn?", ['The "Critic" module', 'The "Fusion Module"']),
    _question("none", "Which of these modules is present?", ["Critic", "Planner"]),
    _question("both", "Which component appears?", ["Image Encoder", "Fusion Module"]),
    _question("negated", "Which component is not shown?", ["Image Encoder", "Critic"]),
    _question("sentence", "Which component appears?", ["A module that encodes images, then fuses them.", "Critic"]),
    _question("topology", "What feeds the Fusion Module?", ["Image Encoder", "Critic"], level=2),
]  # fmt: skip


@pytest.fixture(scope="module")
def answers() -> dict[str, dict]:
    request = build_solver_request(QUESTIONS, _png(["Image Encoder", "Fusion Module"]))
    (result,) = OfflineVLM(rule_book("offline")).generate([request])
    assert result.ok, result.failure
    return {answer["id"]: answer for answer in result.output["answers"]}


def test_a_label_read_among_labels_clearly_absent_is_the_answer(answers) -> None:
    assert answers["shown"]["answer"] == "A"
    assert answers["quoted"]["answer"] == "B"  # the quoted label of each option is looked for
    assert answers["none"]["answer"] == "C"  # nothing of it is written: "none of the other options"


def test_what_ocr_cannot_settle_is_abstained_on_with_the_reason(answers) -> None:
    reasons = {qid: answers[qid]["evidence"] for qid in ("both", "negated", "sentence", "topology")}
    assert all(answers[qid]["answer"] is None for qid in reasons)
    assert "options A, B are all written" in reasons["both"]
    assert "negation" in reasons["negated"]
    assert "option A names no component label" in reasons["sentence"]
    assert "cannot answer a level-2 question" in reasons["topology"]


def test_a_blank_image_is_abstained_on() -> None:
    request = build_solver_request(QUESTIONS[:1], _png([]))
    (result,) = OfflineVLM(rule_book("offline")).generate([request])
    (answer,) = result.output["answers"]
    assert answer["answer"] is None and "no text was read" in answer["evidence"]


def test_option_labels() -> None:
    assert option_label("Image Encoder") == "Image Encoder"
    assert option_label("The \u201cFusion Module\u201d block") == "Fusion Module"
    assert option_label('"A" and "B"') is None  # two labels: no one label to look for
    assert option_label("It encodes the image first.") is None


# AIBench's own level-1 questions: one quoted component name, options Yes and No in either order.
PRESENT = "Is the '{}' component present (this could be represented by its name, an icon or a block)?"
DEPICTS = "Does the diagram depict the '{}' component (this could be represented by its name or an icon)?"
YES_FIRST, NO_FIRST = {"A": "Yes", "B": "No"}, {"A": "No", "B": "Yes"}
YES_NO_QUESTIONS = [
    ChoiceQuestion("encoder", PRESENT.format("Image Encoder"), 1, YES_FIRST, "A"),
    ChoiceQuestion("fusion", DEPICTS.format("Fusion Module"), 1, NO_FIRST, "B"),
    ChoiceQuestion("critic", PRESENT.format("Critic"), 1, NO_FIRST, "B"),
    ChoiceQuestion("planner", DEPICTS.format("Planner"), 1, YES_FIRST, "A"),
    ChoiceQuestion("negated", "Is the 'Critic' component not present in the diagram?", 1, YES_FIRST, "A"),
]


def _solve(questions: pd.DataFrame, image: bytes) -> pd.DataFrame:
    """The ``aibench_answers`` rows of one image, through the solver task's offline answerer."""
    request = build_solver_request(solver_items(questions), image)
    (result,) = OfflineVLM(rule_book("offline")).generate([request])
    letters = {row.question_id: tuple(json.loads(row.options)) for row in questions.itertuples()}
    outcomes, _ = parse_solver_reply(result, list(questions["question_id"]), "m/p1", letters)
    return answers_frame(answer_rows("m", "p1", questions, outcomes)).set_index("question_id")


@pytest.fixture(scope="module")
def yes_no_answers() -> pd.DataFrame:
    return _solve(pd.DataFrame(choice_rows("p1", YES_NO_QUESTIONS)), _png(["Image Encoder", "Fusion Module"]))


def test_a_quoted_component_read_is_the_yes_option_in_either_order_and_wording(yes_no_answers) -> None:
    assert yes_no_answers.loc["encoder", "answer"] == "A"  # "present", Yes first
    assert yes_no_answers.loc["fusion", "answer"] == "B"  # "depict", No first
    assert "Image Encoder" in yes_no_answers.loc["encoder", "evidence"]


def test_a_component_not_read_or_a_negated_question_is_abstained_on(yes_no_answers) -> None:
    for qid in ("critic", "planner"):  # all the text was read, but an icon or a synonym may draw it
        assert yes_no_answers.loc[qid, "status"] == "abstained"
        assert "may be drawn as an icon or named otherwise" in yes_no_answers.loc[qid, "evidence"]
    assert yes_no_answers.loc["negated", "status"] == "abstained"
    assert "negation" in yes_no_answers.loc["negated", "evidence"]


def test_aibench_scoring_counts_the_yes_no_answers(yes_no_answers) -> None:
    (scores,) = score_answers(yes_no_answers.reset_index()).to_dict("records")
    assert scores["level1"] == 1.0 and scores["coverage_level1"] == 2 / 5


def test_a_blank_image_leaves_every_yes_no_question_abstained_on() -> None:
    answers = _solve(pd.DataFrame(choice_rows("p1", YES_NO_QUESTIONS)), _png([]))
    assert (answers["status"] == "abstained").all()
    assert '"Image Encoder" is not written' in answers.loc["encoder", "evidence"]
    (scores,) = score_answers(answers.reset_index()).to_dict("records")
    assert scores["coverage_level1"] == 0.0


def test_yes_no_options() -> None:
    assert yes_no_letters(NO_FIRST) == {"no": "A", "yes": "B"}
    assert yes_no_letters({"A": "yes.", "B": "No", "C": INSUFFICIENT_OPTION}) == {"yes": "A", "no": "B"}
    assert yes_no_letters({"A": "Yes", "B": "No", "C": "Yes"}) is None
    assert yes_no_letters({"A": "Yes", "B": "Maybe"}) is None
