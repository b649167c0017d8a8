"""The second recogniser: PP-OCRv4 text detection and recognition run by ONNX Runtime (rapidocr_onnxruntime,
models bundled in its wheel, single-threaded), which reads small, grey, coloured, slanted and light-on-dark
labels that Tesseract misreads. It reads an image only where a label asked about is not found and the
answer would be abstained on (``with_second_reading``); what it reads can make a label found, never absent.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any

import numpy as np
from PIL import Image

from sciir.backends.readers.tesseract import ReadingMemo, decode_png
from sciir.backends.readers.text import OcrReading, stacked_rows

logger = logging.getLogger(__name__)


# PP-OCRv4 text detection and recognition (ONNX models bundled in the wheel: nothing is downloaded),
# run by ONNX Runtime. Installed by `make setup` with --no-deps: the wheel asks for opencv-python, whose
# cv2 (a GUI build needing libGL) would replace opencv-python-headless's; pyproject.toml lists its other
# dependencies.
SECOND_RECOGNISER = "rapidocr_onnxruntime==1.4.4"
_SECOND_MODULE = "rapidocr_onnxruntime"
_second_engine: Any = None
_second_lock = threading.Lock()
_second_run_lock = threading.Lock()
_second_warned = False


def second_recogniser_available() -> bool:
    """Whether the second recogniser is installed (warns once, naming how to install it, when not)."""
    global _second_warned
    import importlib.util

    if importlib.util.find_spec(_SECOND_MODULE) is not None:
        return True
    if not _second_warned:
        _second_warned = True
        logger.warning(
            "the OCR judge's second recogniser is not installed, so labels Tesseract leaves unread are "
            'abstained on more often: pip install --no-deps "%s" onnxruntime pyclipper shapely pyyaml '
            "(make setup installs it)",
            SECOND_RECOGNISER,
        )
    return False


def second_recogniser_version() -> str | None:
    """``rapidocr_onnxruntime <version>`` when installed (part of the judge's identity), else None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{_SECOND_MODULE} {version(_SECOND_MODULE)}"
    except PackageNotFoundError:
        return None


def _second_engine_loaded() -> Any:
    """The PP-OCR engine, loaded once per process, single-threaded (its readings are then the same on
    every machine, and evaluate runs images in parallel itself)."""
    global _second_engine
    with _second_lock:
        if _second_engine is None:
            from rapidocr_onnxruntime import RapidOCR

            _second_engine = RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)
        return _second_engine


def _rgb_on_white(image: Image.Image) -> np.ndarray:
    """RGB pixels, with transparent pixels shown on white (colour helps PP-OCR on coloured labels)."""
    if image.mode in ("RGBA", "LA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return np.asarray(image.convert("RGB"))


def read_second(png: bytes) -> tuple[str, ...]:
    """What the second recogniser reads in a PNG: one text, a line per text line it found (stacked lines
    and lines cut in two joined, as for Tesseract's passes); () when it finds nothing or is not installed.
    Raises ValueError for undecodable bytes."""
    rgb = _rgb_on_white(decode_png(png))
    if not second_recogniser_available():
        return ()
    engine = _second_engine_loaded()
    # One image at a time: the engine keeps per-image state between its steps (the detector's resize).
    with _second_run_lock:
        result, _ = engine(np.ascontiguousarray(rgb[:, :, ::-1]))  # it takes BGR, as cv2 does
    lines = []
    for box, text, _score in result or []:
        corners = np.asarray(box, dtype=float)
        (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
        if text.strip():
            lines.append(((int(x0), int(y0), int(x1), int(y1)), " ".join(text.split())))
    rows = stacked_rows(sorted(lines, key=lambda line: (line[0][1], line[0][0])))
    return ("\n".join(rows),) if rows else ()


# Second readings of recently seen images (text only: small), for every judge of the process.
_SECOND_READINGS = ReadingMemo(read_second)


def with_second_reading(reading: OcrReading, png: bytes) -> OcrReading:
    """``reading`` of ``png``, able to read the image again with the second recogniser (when installed) for
    a label it does not hold (``OcrReading.locate(..., reread=True)``). The judges ask for it only where a
    label not found would be abstained on (``doubt_about_absence``: the reading is not reliable, or text
    read close to the label may be it misread), so a reliable reading's "no" costs nothing more. The
    second recogniser reads small, grey, coloured, slanted and light-on-dark labels that Tesseract
    misreads; what it reads can make a label found ("yes"), never "no": it does not change which images
    are read reliably."""
    if reading.reread is not None or not second_recogniser_available():
        return reading
    return replace(reading, reread=lambda: _SECOND_READINGS(png))
