"""Views read by one Tesseract process come back per page exactly as each view read alone would."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.readers.tesseract import require_tesseract
from sciir.backends.readers.tesseract_process import read_views

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
CONFIG = "--psm 11 -c tessedit_do_invert=0"


def _label(text: str, size: tuple[int, int] = (420, 120)) -> Image.Image:
    image = Image.new("L", size, 255)
    ImageDraw.Draw(image).text((20, 30), text, fill=0, font=ImageFont.truetype(str(FONT), 40))
    return image


def _words(page: dict) -> list[str]:
    return [
        text
        for text, conf in zip(page["text"], page["conf"], strict=True)
        if float(conf) >= 0 and text.strip()
    ]


def test_a_list_of_views_reads_each_as_alone_and_keeps_an_empty_page():
    require_tesseract()
    views = [_label("Glucose"), Image.new("L", (200, 80), 255), _label("Pyruvate", (500, 140))]
    together = read_views(views, "eng", CONFIG)
    alone = [read_views([view], "eng", CONFIG)[0] for view in views]
    assert [_words(page) for page in together] == [["Glucose"], [], ["Pyruvate"]]
    for page, single in zip(together, alone, strict=True):
        assert set(page["page_num"]) <= {1, 2, 3}
        assert {k: v for k, v in page.items() if k != "page_num"} == {
            k: v for k, v in single.items() if k != "page_num"
        }


def test_a_bad_setting_is_tesseracts_error_not_an_empty_reading():
    require_tesseract()
    import pytesseract

    with pytest.raises(pytesseract.TesseractError):
        read_views([_label("A")], "eng", "--psm 99")
