"""The ``screen`` task (SciIR appendix B.3, stage 1): KEEP or REJECT a cropped panel, with a reason and a
confidence. A confident answer decides; a low-confidence answer, an abstention (no decision) and a failed
request all go to manual review (``routed``), never to KEEP. Stage 2, the review queue and its seeded spot
check of the KEEPs, is ``sciir.figures.review``.

Offline (``answer_by_sight``), decided only from what the pixels show. What rules can see: a blank panel
(almost no ink), an image of text only (nearly all ink inside words OCR read), and a flat-colour drawing (a
plain background covering much of the panel and the ink in a few flat colours: diagrams, plots, schematics,
as the embedded sample draws them). Anything else, photos and microscopy above all, is continuous-tone:
whether it is scientific is a question of meaning, so the rules abstain (no decision) and the panel goes to
manual review. A rule decision is stated with confidence 0.9: it is certain of what it measured, not of the
meaning (a screenshot of a plain user interface looks like a drawing to it).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.readers.text import OcrReading
from sciir.backends.rule_based import Sight
from sciir.images.edge_colour import foreground_mask
from sciir.tasks.task import ModelTask

SCREEN_TASK = "screen"
SCREEN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {"type": ["string", "null"], "enum": ["KEEP", "REJECT", None]},
        "reason": {"type": "string"},
        "confidence": {"type": ["number", "null"]},
    },
    "required": ["decision", "reason", "confidence"],
    "additionalProperties": False,
}


class ScreenParams(BaseModel):
    """Stage 1: the confidence a model decision needs; below it the panel goes to review."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    min_confidence: float = Field(default=0.7, ge=0, le=1)
    max_caption_chars: int = Field(default=1500, ge=0)


@dataclass(frozen=True)
class Verdict:
    """A screen answer: KEEP, REJECT, or None (abstained or failed), with the reason and confidence."""

    decision: Literal["KEEP", "REJECT"] | None
    reason: str
    confidence: float | None


def screen_request(image: bytes, caption: str, settings: ScreenParams) -> VLMRequest:
    """The request that screens one panel image."""
    caption = (caption or "")[: settings.max_caption_chars]
    return TASK.request(images=[image], context={"caption": caption}, caption=caption or "(none)")


def verdict_of(result: VLMResult) -> Verdict:
    """A result as a verdict; a failed request or a malformed answer is an abstention with that reason."""
    if not result.ok:
        return Verdict(None, f"the screen request failed: {result.failure}", None)
    output = result.output or {}
    decision, reason, confidence = output.get("decision"), output.get("reason"), output.get("confidence")
    if decision not in ("KEEP", "REJECT", None) or not isinstance(reason, str):
        return Verdict(None, f"the screen answer is malformed: {output}", None)
    if decision is None:
        return Verdict(None, reason, None)
    if not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        return Verdict(None, f"{decision} without a confidence in [0, 1] ({confidence!r}): {reason}", None)
    return Verdict(decision, reason, float(confidence))


def routed(verdict: Verdict, min_confidence: float) -> Literal["kept", "rejected", "review"]:
    """Where a verdict sends its panel: a confident KEEP or REJECT decides, anything else is reviewed."""
    if verdict.decision is None or verdict.confidence is None or verdict.confidence < min_confidence:
        return "review"
    return "kept" if verdict.decision == "KEEP" else "rejected"


# ---- offline: what the pixels show

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


def answer_by_sight(request: VLMRequest, sight: Sight) -> VLMResult:
    """KEEP a flat-colour drawing, REJECT a blank or text-only panel, abstain on everything else."""
    if len(request.images) != 1:
        raise ValueError(f"needs exactly one image, got {len(request.images)}")
    rgb = np.asarray(Image.open(io.BytesIO(request.images[0])).convert("RGB"))
    ink = foreground_mask(rgb, BACKGROUND_TOLERANCE)
    ink_share = float(ink.mean())
    if ink_share < MIN_INK_SHARE:
        return _answer("REJECT", f"blank: ink covers {ink_share:.2%} of the panel")
    text_share, words = _text_share(sight.read(request.images[0]), ink)
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


TASK = ModelTask(
    name=SCREEN_TASK,
    summary="KEEP or REJECT a cropped panel (SciIR B.3)",
    reply_schema=SCREEN_SCHEMA,
    answerers={"offline": answer_by_sight},
)
