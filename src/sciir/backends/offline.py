"""``offline``: a deterministic vision-language model for the embedded sample and CI, honest about what it sees.

It knows no task: each request is answered by the answerer its task gives the ``offline`` reader (the rule
book the backend is handed, ``sciir.backends.rule_based``), from what the readers see (text with boxes by
OCR, the shapes and arrows of a diagram, plot axes and line art: ``sciir.backends.readers``) and the
request's own texts, and nothing else; what they cannot see is abstained on. Which tasks have such rules,
and what each answers, is in each task's module (``sciir.tasks``).
"""

from __future__ import annotations

from sciir.backends.rule_based import RuleBasedVLM


class OfflineVLM(RuleBasedVLM):
    """Rule-based answers for every task whose module gives the ``offline`` reader an answerer."""

    reader = "offline"
