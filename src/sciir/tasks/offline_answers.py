"""The rule-based answerers of the registered tasks (``sciir.tasks.registry``), one per task and reader.

Each takes the request and a ``Sight`` (an OCR reader and its confidence threshold) and answers only what
its rules can really see, abstaining on the rest; the rules themselves live beside the reading they need
(``sciir.backends.visual_judge``, ``offline_screen``, ``ocr``).
"""

from __future__ import annotations

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.registry import Sight


def screen(request: VLMRequest, sight: Sight) -> VLMResult:
    """KEEP a flat-colour drawing, REJECT a blank or text-only panel, abstain on the rest."""
    from sciir.backends.offline_screen import screen_by_sight

    return screen_by_sight(request, sight.read)


def judge(request: VLMRequest, sight: Sight) -> VLMResult:
    """Spelling by OCR, entities as labels in drawn shapes, relations as arrows; the rest abstained on."""
    from sciir.backends.visual_judge import judge_by_sight

    return judge_by_sight(request, sight.read)


def judge_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """Spelling checks by OCR only; every other question abstained on."""
    from sciir.backends.ocr import judge_by_ocr

    return judge_by_ocr(request, sight.read)


def aibench_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """AIBench level 1 (component existence) by OCR; the other levels abstained on."""
    from sciir.backends.ocr import answer_aibench_by_ocr

    return answer_aibench_by_ocr(request, sight.read)


def abstain_on_aesthetics(request: VLMRequest, sight: Sight) -> VLMResult:
    """Every criterion abstained on: rules over OCR cannot judge visual design."""
    from sciir.backends.offline import abstain_on_aesthetics as abstain

    return abstain(request)
