"""The OCR reader and judge on figures drawn here with a TrueType font, and on readings built by hand."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import matplotlib
import numpy as np
import pytesseract
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.base import VLMRequest
from sciir.backends.ocr import OcrVLM
from sciir.backends.readers.tesseract import READER_VERSION, OcrUnavailableError, read_text
from sciir.backends.readers.text import Legibility, OcrLine, OcrReading, OcrWord
from sciir.backends.rule_based import Sight
from sciir.tasks import judge
from sciir.tasks.aibench_qa import SolverItem, answer_component
from sciir.tasks.registry import rule_book
from sciir.tasks.sight_checks import JudgeItem, answer_text

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"


def _figure_png() -> bytes:
    """Two boxed labels joined by an arrow, and a label wrapped over two lines."""
    image = Image.new("RGB", (1024, 1024), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(FONT), 30)
    for x, label in ((80, "Glucose"), (560, "Pyruvate")):
        width = draw.textlength(label, font=font)
        draw.rectangle((x - 30, 270, x + width + 30, 350), outline="black", width=3)
        draw.text((x, 292), label, fill="black", font=font)
    draw.line((320, 310, 500, 310), fill="black", width=3)
    draw.polygon([(500, 298), (500, 322), (526, 310)], fill="black")
    draw.text((120, 650), "Cell membrane", fill="black", font=font)
    draw.text((120, 690), "transport", fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def figure() -> bytes:
    return _figure_png()


@pytest.fixture(scope="module")
def ocr() -> OcrVLM:
    return OcrVLM(rule_book("ocr"))


def _judge(question_id: str, expected: str | None, layer: int = 1, track: str = "text") -> dict:
    question = f'Is the text "{expected}" rendered?' if expected else "Is there an arrow from A to B?"
    return {
        "id": question_id,
        "question": question,
        "layer": layer,
        "track": track,
        "expected_text": expected,
    }


def test_read_text_splits_boxed_labels_into_lines(figure: bytes) -> None:
    reading = read_text(figure)
    lines = [line.text for line in reading.lines]
    assert "Glucose" in lines
    assert "Pyruvate" in lines
    assert all(0 <= line.confidence <= 100 for line in reading.lines)
    assert reading.find("Cell membrane transport") is not None  # across the line break


def test_judge_answers_spelling_and_abstains_on_the_rest(figure: bytes, ocr: OcrVLM) -> None:
    checklist = [
        _judge("L1-01", "Glucose"),
        _judge("L1-02", "Glucse"),
        _judge("L1-03", "glucose"),
        _judge("L1-04", "Cell membrane transport"),
        _judge("L2-process-01", None, layer=2, track="process"),
    ]
    request = VLMRequest(
        task="judge", prompt="p", images=[figure], context={"prompt": "p", "checklist": checklist}
    )
    [result] = ocr.generate([request])
    answers = {a["id"]: a for a in result.output["answers"]}
    assert answers["L1-01"]["verdict"] == "yes"
    assert "Glucose" in answers["L1-01"]["evidence"]
    assert answers["L1-02"]["verdict"] == "no"
    assert "Glucose" in answers["L1-02"]["evidence"]  # the closest text read is quoted
    assert answers["L1-03"]["verdict"] == "no"  # case-sensitive
    assert answers["L1-04"]["verdict"] == "yes"
    assert answers["L2-process-01"]["verdict"] is None
    assert "process" in answers["L2-process-01"]["reasoning"]


def test_bad_requests_fail_alone(figure: bytes, ocr: OcrVLM) -> None:
    checklist = [_judge("L1-01", "Glucose")]
    requests = [
        VLMRequest(task="reasoning", prompt="p", images=[figure], context={}),
        VLMRequest(task="jduge", prompt="p", images=[figure], context={}),
        VLMRequest(task="judge", prompt="p", images=[b"not a png"], context={"checklist": checklist}),
        VLMRequest(task="judge", prompt="p", images=[figure], context={"checklist": []}),
        VLMRequest(task="judge", prompt="p", images=[figure], context={"checklist": checklist}),
    ]
    unsupported, unknown, corrupt, empty, good = ocr.generate(requests)
    assert (
        unsupported.failure
        == "ocr backend has no rules for task 'reasoning' (answers ['aibench_qa', 'judge'])"
    )
    assert unknown.failure.startswith("ocr backend: no task 'jduge' is registered (known: ['abstract_prompt'")
    assert not corrupt.ok and "could not be decoded" in corrupt.failure
    assert not empty.ok and "no checklist" in empty.failure
    assert good.ok and good.output["answers"][0]["verdict"] == "yes"


def test_missing_tesseract_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "tesseract-not-installed-here")
    with pytest.raises(OcrUnavailableError, match="apt-get install tesseract-ocr"):
        OcrVLM(rule_book("ocr"))


def test_text_on_a_transparent_background_is_read() -> None:
    image = Image.new("RGBA", (600, 200), (0, 0, 0, 0))
    ImageDraw.Draw(image).text(
        (40, 70), "Mitochondrion", fill=(0, 0, 0, 255), font=ImageFont.truetype(str(FONT), 36)
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    assert [line.text for line in read_text(buffer.getvalue()).lines] == ["Mitochondrion"]


# --- Real-figure reading (issue 9): small, rotated and slanted labels; "no" only on a reliable reading ---


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _label(text: str, size: int, angle: int = 0) -> Image.Image:
    """Black text on white, turned ``angle`` degrees counterclockwise, on a tight canvas."""
    font = ImageFont.truetype(str(FONT), size)
    width = round(ImageDraw.Draw(Image.new("L", (1, 1))).textlength(text, font=font))
    image = Image.new("L", (width + 8, size + 10), 255)
    ImageDraw.Draw(image).text((4, 2), text, fill=0, font=font)
    return image.rotate(angle, expand=True, fillcolor=255)


def _web_plot() -> tuple[bytes, tuple[int, int, int, int]]:
    """A 600 px plot as web renditions of article figures have them: letters 5-7 px tall, an axis label
    written upwards, a title and a legend. Returns the PNG and the box of the upward label."""
    image = Image.new("L", (600, 300), 255)
    draw = ImageDraw.Draw(image)
    draw.rectangle((60, 30, 560, 250), outline=0, width=1)
    for x in range(60, 561, 100):
        draw.line((x, 250, x, 254), fill=0)
    upward = _label("Transcripts per cell", 11, angle=90)
    image.paste(upward, (30, 60))
    image.paste(_label("Active genes", 11), (250, 10))
    image.paste(_label("Time after release", 11), (240, 262))
    image.paste(_label("silent genes", 10), (420, 50))
    return _png(image), (30, 60, 30 + upward.width, 60 + upward.height)


def _judge_text(reading, label: str) -> dict:
    item = JudgeItem(id="q", question="q", layer=1, track="text", expected_text=label)
    return answer_text(item, reading)


@pytest.mark.slow
def test_small_and_upward_labels_of_a_web_figure_are_read_where_they_are_drawn() -> None:
    png, upward_box = _web_plot()
    reading = read_text(png)
    for label in ("Transcripts per cell", "Active genes", "Time after release", "silent genes"):
        assert _judge_text(reading, label)["verdict"] == "yes", (label, reading.texts)
    # The upward label's words are boxed where it is drawn, in pixels of the original image.
    [line] = [line for line in reading.lines if line.text == "Transcripts per cell"]
    x0, y0, x1, y1 = line.box
    assert (
        upward_box[0] - 3 <= x0
        and x1 <= upward_box[2] + 3
        and upward_box[1] - 3 <= y0
        and y1 <= upward_box[3] + 3
    )
    assert x1 - x0 < y1 - y0  # a column, not a row


def test_a_slanted_label_is_read() -> None:
    image = Image.new("L", (500, 400), 255)
    image.paste(_label("Gravimetric energy", 16, angle=45), (150, 100))
    reading = read_text(_png(image))
    assert reading.find("Gravimetric energy") is not None, reading.texts


@pytest.mark.slow
def test_not_found_is_no_only_where_all_the_text_was_read(figure: bytes) -> None:
    clean = read_text(figure)
    assert clean.legibility == Legibility(clean.legibility.marks, 0) and clean.reliable
    answer = _judge_text(clean, "Aspirin")
    assert answer["verdict"] == "no" and "read all the text" in answer["reasoning"]
    # The same figure with a label too small to read: "Aspirin" might be it.
    image = Image.open(io.BytesIO(figure)).convert("L")
    image.paste(_label("Aspirin tablet", 5), (600, 700))
    unsure = read_text(_png(image))
    assert not unsure.reliable and unsure.legibility.unread >= 3
    answer = _judge_text(unsure, "Aspirin")
    assert answer["verdict"] is None and "text-like marks" in answer["reasoning"]
    assert _judge_text(unsure, "Glucose")["verdict"] == "yes"  # found is still found


def test_noise_is_too_busy_for_a_no() -> None:
    pixels = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    reading = read_text(_png(Image.fromarray(pixels, "RGB")))
    assert reading.legibility.busy and not reading.reliable
    answer = _judge_text(reading, "Glucose")
    assert answer["verdict"] is None and "too busy" in answer["reasoning"]


def _reading(*lines: str, confidence: float = 95.0, reliable: bool = True) -> OcrReading:
    """A hand-built reading: one line per string, stacked 40 px apart, words 12 px wide per letter."""
    built = []
    for row, text in enumerate(lines):
        words, left = [], 10
        for word in text.split():
            words.append(OcrWord(word, confidence, left, 40 * row, 12 * len(word), 20))
            left += 12 * len(word) + 10
        built.append(OcrLine(tuple(words)))
    return OcrReading(tuple(built), legibility=Legibility(20, 0 if reliable else 5))


@pytest.mark.parametrize(
    ("read", "label"),
    [
        ("Lot1", "Lot 1"),  # a narrow space lost
        ("Rl", "R1"),  # I, l, 1 and | drawn alike
        ("Ohr", "0hr"),  # O and 0
        ("Meta-Analysis", "Meta\u2212Analysis"),  # minus sign, hyphen and dashes
        ("couple, dual eamer", "couple, dual earner"),  # rn read as m
    ],
)
def test_matching_forgives_glyphs_ocr_cannot_tell_apart(read: str, label: str) -> None:
    assert _reading(read).find(label) is not None


@pytest.mark.parametrize(
    ("read", "label"), [("Lot 1", "Lot 2"), ("Glucose", "glucose"), ("G6PDd", "G6PD"), ("cells", "cell")]
)
def test_matching_stays_exact_otherwise(read: str, label: str) -> None:
    assert _reading(read).find(label) is None


def test_a_label_over_two_stacked_lines_is_found() -> None:
    assert _reading("Severe malarial", "anaemia (SMA)").find("Severe malarial anaemia (SMA)") is not None


@pytest.mark.parametrize(
    ("lines", "label", "why"),
    [
        (("Lot 1",), "Lot 3", None),  # clearly another label: "no"
        (("Glucse",), "Glucose", None),  # a confident misspelling is a fault: "no"
        (("thr",), "1hr", "misspelt or misread"),  # 1 read as t: a lookalike glyph
        (("Glucose vs",), "glucose vs", None),  # g and G are not drawn alike
        (("Vessel",), "vessel", "misspelt or misread"),  # v and V are
        (("B-Actin",), "\u03b2-Actin", "glyphs OCR does not read"),  # Greek
    ],
)
def test_a_label_not_found_is_no_unless_ocr_may_have_misread_it(lines, label, why) -> None:
    answer = _judge_text(_reading(*lines), label)
    if why is None:
        assert answer["verdict"] == "no", answer
    else:
        assert answer["verdict"] is None and why in answer["reasoning"], answer


def test_a_hesitant_near_miss_and_words_read_apart_are_abstained_on() -> None:
    assert _judge_text(_reading("Glucse", confidence=60), "Glucose")["verdict"] is None
    apart = OcrReading(
        (
            OcrLine((OcrWord("per", 95, 10, 10, 30, 20), OcrWord("1,000", 95, 50, 10, 50, 20))),
            OcrLine((OcrWord("cells", 95, 400, 300, 50, 20),)),
        ),
        legibility=Legibility(20, 0),
    )
    answer = _judge_text(apart, "per 1,000 cells")
    assert answer["verdict"] is None and "not in sequence" in answer["reasoning"]


def test_aibench_absence_needs_a_reliable_reading_too() -> None:
    item = SolverItem(id="q", level=1, question="q", label="Aspirin")
    assert answer_component(item, _reading("Glucose"))["answer"] == "no"
    unsure = answer_component(item, _reading("Glucose", reliable=False))
    assert unsure["answer"] is None and "text-like marks" in unsure["evidence"]


def test_the_reader_is_versioned_and_tesseract_single_threaded(
    ocr: OcrVLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ocr.identity()["reader"] == READER_VERSION
    monkeypatch.delenv("OMP_THREAD_LIMIT", raising=False)
    assert pytesseract.pytesseract.environ["OMP_THREAD_LIMIT"] == "1"
    monkeypatch.setenv("OMP_THREAD_LIMIT", "4")  # a limit the user set is kept
    assert pytesseract.pytesseract.environ["OMP_THREAD_LIMIT"] == "4"


# --- The second recogniser (PP-OCR through rapidocr_onnxruntime) where Tesseract leaves doubt ---------


def _rereading(reading: OcrReading, *texts: str) -> tuple[OcrReading, list[int]]:
    """``reading`` with a stand-in second recogniser that reads ``texts``; the list counts its runs."""
    runs: list[int] = []

    def reread() -> tuple[str, ...]:
        runs.append(1)
        return texts

    return replace(reading, reread=reread), runs


def test_the_second_recogniser_answers_only_where_tesseract_leaves_doubt() -> None:
    unsure, runs = _rereading(_reading("Glucose", reliable=False), "Aspirin tablet")
    assert _judge_text(unsure, "Glucose")["verdict"] == "yes" and not runs  # found: not read again
    answer = _judge_text(unsure, "Aspirin")
    assert answer["verdict"] == "yes" and "Aspirin tablet" in answer["evidence"] and runs == [1]
    # What it does not read stays abstained on (never "no"), and it reads each image once.
    assert _judge_text(unsure, "Ibuprofen")["verdict"] is None and runs == [1]
    # A reliable reading's "no" needs no second reading.
    sure, runs = _rereading(_reading("Glucose"), "Aspirin")
    assert _judge_text(sure, "Aspirin")["verdict"] == "no" and not runs
    # A hesitant near miss is read again.
    hesitant, runs = _rereading(_reading("Asplrin", confidence=60), "Aspirin")
    assert _judge_text(hesitant, "Aspirin")["verdict"] == "yes" and runs == [1]
    # AIBench's component existence alike.
    item = SolverItem(id="q", level=1, question="q", label="Aspirin")
    unsure, runs = _rereading(_reading("Glucose", reliable=False), "aspirin")
    assert answer_component(item, unsure)["answer"] == "yes" and runs == [1]
    sure, runs = _rereading(_reading("Glucose"), "Aspirin")
    assert answer_component(item, sure)["answer"] == "no" and not runs


def test_a_lone_glyph_not_read_is_read_again_and_never_answered_absent() -> None:
    # Tesseract reads no glyph standing alone (a point labelled "A") and counts none among the text-like
    # marks, so a reading that missed it looks complete: the second recogniser decides, or it is unjudged.
    sure, runs = _rereading(_reading("Right triangle"), "A", "Right triangle")
    assert _judge_text(sure, "A")["verdict"] == "yes" and runs == [1]
    sure, runs = _rereading(_reading("Right triangle"), "Right triangle")
    answer = _judge_text(sure, "B")
    assert answer["verdict"] is None and "single glyph" in answer["reasoning"] and runs == [1]
    # Longer labels keep their "no" from a reliable reading.
    assert _judge_text(sure, "BC")["verdict"] == "no"


def test_the_judge_reads_again_with_the_second_recogniser(monkeypatch: pytest.MonkeyPatch) -> None:
    import sciir.backends.readers.second_reader as module

    monkeypatch.setattr(module, "second_recogniser_available", lambda: True)
    monkeypatch.setattr(module, "_SECOND_READINGS", lambda png: ("Aspirin",))
    unsure = _reading("Glucose", reliable=False)
    request = VLMRequest(
        task="judge", prompt="", images=[b"png"], context={"checklist": [_judge("q1", "Aspirin")]}
    )
    [answer] = judge.answer_by_text(request, Sight(lambda png: unsure)).output["answers"]
    assert answer["verdict"] == "yes"


def test_without_the_second_recogniser_the_reading_is_kept_and_the_install_named(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import importlib.util

    import sciir.backends.readers.second_reader as module

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *args: None)
    monkeypatch.setattr(module, "_second_warned", False)
    reading = _reading("Glucose", reliable=False)
    with caplog.at_level("WARNING"):
        assert module.with_second_reading(reading, b"png") is reading
    assert module.SECOND_RECOGNISER in caplog.text and "--no-deps" in caplog.text
    assert _judge_text(reading, "Aspirin")["verdict"] is None


@pytest.mark.slow
def test_the_second_recogniser_reads_offline_from_its_bundled_models() -> None:
    import importlib.resources

    import sciir.backends.readers.second_reader as module

    if not module.second_recogniser_available():
        pytest.skip(f"{module.SECOND_RECOGNISER} not installed")
    models = importlib.resources.files("rapidocr_onnxruntime") / "models"
    assert {path.name for path in models.iterdir() if path.name.endswith(".onnx")} >= {
        "ch_PP-OCRv4_det_infer.onnx",
        "ch_PP-OCRv4_rec_infer.onnx",
    }
    image = Image.new("RGB", (400, 120), (230, 240, 255))
    ImageDraw.Draw(image).text(
        (30, 40), "Mitochondrion", fill=(200, 30, 30), font=ImageFont.truetype(str(FONT), 30)
    )
    assert "Mitochondrion" in module.read_second(_png(image))[0]
    assert module.second_recogniser_version() == "rapidocr_onnxruntime 1.4.4"


def test_importing_the_reader_loads_no_second_recogniser() -> None:
    import subprocess
    import sys

    code = (
        "import sys, sciir.backends.ocr, sciir.backends.offline, sciir.tasks.registry; "
        "print(sorted(m for m in ('rapidocr_onnxruntime', 'onnxruntime') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
