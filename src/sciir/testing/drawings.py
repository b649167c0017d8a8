"""What tests read back from a drawn diagram: the words Tesseract sees and the arrows a dot source draws."""

from __future__ import annotations

import io
import re

import pytesseract
from PIL import Image


def ocr_words(png: bytes) -> set[str]:
    """Words Tesseract reads in the image; sparse-text mode suits boxes scattered on a canvas."""
    text = pytesseract.image_to_string(Image.open(io.BytesIO(png)), config="--psm 11")
    return set(re.findall(r"[A-Za-z]+", text))


def visible_edges(dot_source: str) -> list[str]:
    """The edge lines of a graphviz source that draw an arrow (invisible layout edges left out)."""
    return [line for line in dot_source.splitlines() if "->" in line and "invis" not in line]
