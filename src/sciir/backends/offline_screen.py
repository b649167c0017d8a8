"""The offline backend's ``screen`` task (SciIR B.3 stage 1), decided only from what the pixels show.

What rules can see: a blank panel (almost no ink), an image of text only (nearly all ink inside
words OCR read), and a flat-colour drawing (a plain background covering much of the panel and the
ink in a few flat colours: diagrams, plots, schematics, as the embedded sample draws them). Anything
else, photos and microscopy above all, is continuous-tone: whether it is scientific is a question of
meaning, so the rules abstain (no decision) and the panel goes to manual review.

A rule decision is stated with confidence 0.9: it is certain of what it measured, not of the meaning
(a screenshot of a plain user interface looks like a drawing to it).
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
from PIL import Image

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.ocr import OcrReading
from sciir.figures.imaging import foreground_mask

RULE_CONFIDENCE = 0.9
BACKGROUND_TOLERANCE = 24
MIN_INK_SHARE = 0.002
MIN_BACKGROUND_SHARE = 0.45
# Share of the ink that the 12 most common colours (4 bits per channel) must cover for flat colour.
FLAT_COLOUR_SHARE = 0.75
TEXT_ONLY_SHARE = 0.85
MIN_TEXT_WORDS = 8


def _answer(decision: str | None, reason: str) -> VLMResult:
    confidence = None if decision is None else RULE_CONFIDENCE
    return VLMResult(output={"decision": decision, "reason": reason, "confidence": confidence})


def _flat_colour_share(rgb: np.ndarray, ink: np.ndarray) -> float:
    """Share of ink pixels in the 12 most common coarse colours."""
    binned = (rgb[ink].astype(np.int32) >> 4) @ np.array([256, 16, 1])
    counts = np.sort(np.bincount(binned, minlength=4096))[::-1]
    return float(counts[:12].sum() / max(1, counts.sum()))


def _text_share(reading: OcrReading, ink: np.ndarray) -> tuple[float, int]:
    """Share of ink pixels inside confidently read word boxes, and the number of such words."""
    inside = np.zeros_like(ink)
    words = [word for line in reading.lines for word in line.words if word.confidence >= 60]
    for word in words:
        x0, y0, x1, y1 = (round(value) for value in reading.image_box(word))  # the read image is scaled
        inside[max(0, y0) : max(0, y1), max(0, x0) : max(0, x1)] = True
    return float((ink & inside).sum() / max(1, ink.sum())), len(words)


def screen_by_sight(request: VLMRequest, read: Callable[[bytes], OcrReading]) -> VLMResult:
    """KEEP a flat-colour drawing, REJECT a blank or text-only panel, abstain on everything else."""
    if len(request.images) != 1:
        raise ValueError(f"needs exactly one image, got {len(request.images)}")
    rgb = np.asarray(Image.open(io.BytesIO(request.images[0])).convert("RGB"))
    ink = foreground_mask(rgb, BACKGROUND_TOLERANCE)
    ink_share = float(ink.mean())
    if ink_share < MIN_INK_SHARE:
        return _answer("REJECT", f"blank: ink covers {ink_share:.2%} of the panel")
    text_share, words = _text_share(read(request.images[0]), ink)
    if words >= MIN_TEXT_WORDS and text_share >= TEXT_ONLY_SHARE:
        return _answer("REJECT", f"text only: {words} words read hold {text_share:.0%} of the ink")
    flat = _flat_colour_share(rgb, ink)
    if 1 - ink_share >= MIN_BACKGROUND_SHARE and flat >= FLAT_COLOUR_SHARE:
        return _answer(
            "KEEP",
            f"a flat-colour drawing: plain background over {1 - ink_share:.0%} of the panel, {flat:.0%} of "
            f"the ink in 12 colours, {text_share:.0%} of it text",
        )
    return _answer(
        None,
        f"abstained: continuous-tone content ({flat:.0%} of the ink in 12 colours, background "
        f"{1 - ink_share:.0%}): rules cannot tell a scientific image from a photo",
    )
