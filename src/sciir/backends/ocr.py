"""``ocr``: text reading only. Each request is answered by the answerer its task gives the ``ocr`` reader (the
rule book the backend is handed, ``sciir.backends.rule_based``) from Tesseract's reading of the image (and the
second recogniser's where Tesseract leaves doubt: ``sciir.backends.readers``). In the project's tasks that is
exact spelling for the judge and component existence for the AIBench solver; the rest is abstained on.
"""

from __future__ import annotations

from sciir.backends.rule_based import RuleBasedVLM


class OcrVLM(RuleBasedVLM):
    """Answers with Tesseract's reading of each image; abstains on what text cannot settle."""

    reader = "ocr"
