"""The offline solver on AIBench's multiple-choice questions: it answers a level-1 question asking which
component is shown only when OCR settles it (one option's label read, the others clearly absent; none
read: the insufficient-information option) and abstains on everything else, with the reason."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.aibench.choices import INSUFFICIENT_OPTION
from sciir.backends.offline import OfflineVLM
from sciir.tasks.aibench_qa import build_solver_request
from sciir.tasks.choice_reading import option_label
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
