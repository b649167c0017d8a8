"""The offline AIBench solver (task ``aibench_qa``): each question answered from what the pixels show,
or abstained on.

- level 1 (component existence): by OCR, as the OCR solver answers it (``sciir.backends.ocr``).
- level 2 (local topology, "does A feed directly into B?"): by diagram analysis, as the offline judge
  answers a relation question (``sciir.backends.visual_judge``): "yes" for an arrow from A's box to B's,
  "no" for one pointing from B to A or when no line joins them in an image whose lines are all attached;
  abstained on when either label is not read inside exactly one box or an arrowhead is unclear.
- levels 3 and 4 (phases, the whole flow), and a level-2 question that does not name its two components
  (``flow``): abstained on, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.diagram import Diagram
from sciir.backends.ocr import JudgeItem, OcrReading, SolverItem, answer_component, solve_questions
from sciir.backends.visual_judge import answer_relation, lazy_diagram

TOPOLOGY_LEVEL = 2


def answer_flow(item: SolverItem, reading: OcrReading, diagram: Diagram) -> dict[str, Any]:
    """A level-2 question as the judge's relation question "an arrow from A to B" (see the module
    docstring); an abstention keeps the judge's reason as evidence."""
    relation = JudgeItem(
        id=item.id, question=item.question, layer=2, track="aibench", kind="relation", about=item.flow or []
    )
    verdict = answer_relation(relation, reading, diagram)
    if verdict["verdict"] is None:
        return {"id": item.id, "answer": None, "evidence": verdict["reasoning"]}
    evidence = f"{verdict['reasoning']} {verdict['evidence']}"
    return {"id": item.id, "answer": verdict["verdict"], "evidence": evidence}


def answer_question(item: SolverItem, reading: OcrReading, diagram: Callable[[], Diagram]) -> dict[str, Any]:
    """A level-2 question naming its two components by the diagram (analysed only then); any other
    question as the OCR solver answers it (level 1 judged, the rest abstained on with the reason)."""
    if item.level == TOPOLOGY_LEVEL and item.flow is not None and len(item.flow) == 2:
        return answer_flow(item, reading, diagram())
    return answer_component(item, reading)


def answer_aibench_by_sight(request: VLMRequest, read: Callable[[bytes], OcrReading]) -> VLMResult:
    """The ``aibench_qa`` task answered from OCR (level 1) and diagram analysis (level 2)."""

    def answer(items: list[SolverItem], reading: OcrReading, image: bytes) -> list[dict[str, Any]]:
        diagram = lazy_diagram(image, reading)
        return [answer_question(item, reading, diagram) for item in items]

    return solve_questions(request, read, answer)
