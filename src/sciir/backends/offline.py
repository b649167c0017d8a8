"""A deterministic vision-language model for the embedded sample and CI, honest about what it sees.

It knows no task: each request is answered by the rules the task registry names for the ``offline``
reader (``sciir.tasks.registry``), from OCR, drawn shapes and the request's texts only, and nothing else:

- ``judge``: what the pixels show (``sciir.backends.visual_judge``): exact spelling by OCR, entities
  as labels read inside drawn shapes, relations as arrows between them, laws where they are written;
  everything else abstained on.
- the annotation tasks (``sciir.tasks.annotation_rules``): track scores, reasoning, abstract prompt
  and checklist from OCR, drawn arrows and the caption and methods text.
- ``aibench_graph``: the figure's terms the method text names, and the flows one sentence states
  explicitly; no phases. ``aibench_questions``: the four levels written by rule from the graph.
- ``aibench_qa``: component existence (level 1) from OCR; every other level abstained on.
- ``aesthetics``: abstained on for every criterion: rules over OCR cannot judge visual design.
- ``screen``: KEEP a flat-colour drawing, REJECT a blank or text-only panel, abstain on the rest
  (``sciir.backends.offline_screen``).
"""

from __future__ import annotations

from typing import Any

from sciir.backends.ocr import READER_VERSION, OcrVLM, second_recogniser_version
from sciir.backends.rule_based import RuleBasedVLM
from sciir.tasks.annotation_rules import RULES_VERSION
from sciir.tasks.registry import Sight


class OfflineVLM(RuleBasedVLM):
    """Rule-based answers for every task the registry gives ``offline`` rules, from OCR and texts only.

    Config: ``min_confidence`` (OCR confidence 0-100 a line needs to count as a label, default 60),
    ``lang`` (Tesseract languages, default ``eng``).
    """

    reader = "offline"

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.min_confidence = float(config.get("min_confidence", 60))
        self.sight = Sight(OcrVLM(lang=config.get("lang", "eng")).read, self.min_confidence)

    def identity(self) -> dict[str, Any]:
        return {
            **super().identity(),
            "rules": RULES_VERSION,
            "reader": READER_VERSION,
            "second_reader": second_recogniser_version(),
        }
