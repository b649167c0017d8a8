"""The OCR reader and judge on figures drawn here with a TrueType font."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
import pytesseract
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.base import VLMRequest
from sciir.backends.ocr import OcrUnavailableError, OcrVLM, read_text

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
    return OcrVLM()


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
        VLMRequest(task="judge", prompt="p", images=[b"not a png"], context={"checklist": checklist}),
        VLMRequest(task="judge", prompt="p", images=[figure], context={"checklist": []}),
        VLMRequest(task="judge", prompt="p", images=[figure], context={"checklist": checklist}),
    ]
    unsupported, corrupt, empty, good = ocr.generate(requests)
    assert unsupported.failure == "ocr backend does not handle task 'reasoning'"
    assert not corrupt.ok and "could not be decoded" in corrupt.failure
    assert not empty.ok and "no checklist" in empty.failure
    assert good.ok and good.output["answers"][0]["verdict"] == "yes"


def test_missing_tesseract_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", "tesseract-not-installed-here")
    with pytest.raises(OcrUnavailableError, match="apt-get install tesseract-ocr"):
        OcrVLM()


def test_text_on_a_transparent_background_is_read() -> None:
    image = Image.new("RGBA", (600, 200), (0, 0, 0, 0))
    ImageDraw.Draw(image).text(
        (40, 70), "Mitochondrion", fill=(0, 0, 0, 255), font=ImageFont.truetype(str(FONT), 36)
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    assert [line.text for line in read_text(buffer.getvalue()).lines] == ["Mitochondrion"]
