"""``programmatic``: a code-based baseline that draws from the prompt text alone, as ImgCoder-style
systems do.

It sees what every contestant sees (the prompt, a seed and a size) and never the annotation. From the
prompt it takes:

- labels: every double-quoted string (``"..."`` or ``“...”``), stripped, in order of first appearance;
- edges: every explicit arrow statement written in the text, ``A -> B`` (also ``-->``, ``=>``, ``→``)
  or ``A leads to B`` (also ``flows to``/``into``, ``points to``, ``feeds into``), whose two ends are
  labels the prompt quotes (a chain ``A -> B -> C`` gives two edges). Unquoted names are not drawn:
  the baseline cannot tell a label from the prose around it.

So a Sci-RCoT prompt that narrates its topology yields boxes and arrows, and an abstract prompt that
states no connection yields labels without arrows. A prompt that quotes nothing fails with its
reason. Configured with ``faults`` it draws what it parsed after the deterministic edits of
:mod:`sciir.backends.plan_faults` (the known-bad ``programmatic_faulty`` baseline).
"""

from __future__ import annotations

import re

from sciir.backends.base import GenerationRequest
from sciir.backends.plan_drawing import PlanDrawingGenerator, PlanError
from sciir.backends.plan_faults import DrawingPlan, Edge

BACKEND_NAME = "programmatic"

_QUOTED = re.compile(r'"([^"\n]+)"|\u201c([^\u201d\n]+)\u201d')
_CONNECTOR = re.compile(
    r"\s*(?:-{1,2}>|=>|\u2192|\u27f6)\s*|\s+\b(?:leads?|flows?|points?|feeds?)\s+(?:in)?to\b\s*",
    re.IGNORECASE,
)
_QUOTE_CHARS = '"\u201c\u201d'


def quoted_spans(prompt: str) -> list[tuple[str, tuple[int, int]]]:
    """Each non-blank quoted string of ``prompt`` (stripped) with the span of its quotes."""
    spans = []
    for match in _QUOTED.finditer(prompt):
        text = (match.group(1) or match.group(2)).strip()
        if text:
            spans.append((text, match.span()))
    return spans


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def label_ending(text: str, labels: list[str]) -> str | None:
    """The longest label that ``text`` ends with as a whole word (closing quotes and spaces ignored)."""
    text = text.rstrip().rstrip(_QUOTE_CHARS)
    for label in sorted(labels, key=len, reverse=True):
        before = len(text) - len(label) - 1
        if text.endswith(label) and (before < 0 or not _is_word_char(text[before])):
            return label
    return None


def label_starting(text: str, labels: list[str]) -> str | None:
    """The longest label that ``text`` starts with as a whole word (opening quotes and spaces ignored)."""
    text = text.lstrip().lstrip(_QUOTE_CHARS)
    for label in sorted(labels, key=len, reverse=True):
        if text.startswith(label) and (len(text) == len(label) or not _is_word_char(text[len(label)])):
            return label
    return None


def arrow_edges(prompt: str, labels: list[str], quoted: list[tuple[int, int]]) -> tuple[Edge, ...]:
    """The edges the prompt states with an arrow or a "leads to", between two of its labels, in order.

    A connector inside a quoted string is part of a label, not a statement. Each connector's ends are
    read from the text between it and its neighbouring connectors, so chains work.
    """
    connectors = [
        match
        for match in _CONNECTOR.finditer(prompt)
        if not any(start <= match.start() < end for start, end in quoted)
    ]
    edges: list[Edge] = []
    for index, match in enumerate(connectors):
        left_start = connectors[index - 1].end() if index > 0 else 0
        right_end = connectors[index + 1].start() if index + 1 < len(connectors) else len(prompt)
        src = label_ending(prompt[left_start : match.start()], labels)
        dst = label_starting(prompt[match.end() : right_end], labels)
        if src is not None and dst is not None:
            edges.append((src, dst))
    return tuple(dict.fromkeys(edges))


def prompt_plan(prompt: str) -> DrawingPlan:
    """The plan the prompt text states: its quoted labels and its arrow statements between them.

    Raises:
        PlanError: the prompt quotes no label (the message leaves the sample to the caller).
    """
    spans = quoted_spans(prompt)
    labels = list(dict.fromkeys(text for text, _ in spans))
    if not labels:
        raise PlanError("quotes no label to draw")
    return DrawingPlan(labels=tuple(labels), edges=arrow_edges(prompt, labels, [span for _, span in spans]))


class ProgrammaticGenerator(PlanDrawingGenerator):
    """Draws the labels and arrows its prompt states (see the module docstring); a contestant.

    Args:
        faults: a :class:`sciir.backends.plan_faults.FaultConfig` as a dict; when given, what was parsed is edited
            before drawing and the edits are recorded in ``meta["planted_faults"]``.
        font_size: label size in points at the natural scale (the drawing is then fitted to the canvas).
    """

    backend_name = BACKEND_NAME

    def read_plan(self, request: GenerationRequest) -> DrawingPlan:
        """The plan of ``request.prompt`` alone; nothing else of the request is read."""
        try:
            return prompt_plan(request.prompt)
        except PlanError as error:
            raise PlanError(
                f"prompt for sample {request.sample_id} {error}; the programmatic baseline draws only "
                "the quoted strings of its prompt"
            ) from None
