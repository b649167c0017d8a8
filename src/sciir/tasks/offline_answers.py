"""The rule-based answerers of the registered tasks (``sciir.tasks.registry``), one per task and reader.

Each takes the request and a ``Sight`` (an OCR reader and its confidence threshold) and answers only what
its rules can really see, abstaining on the rest; the rules themselves live beside the reading they need
(``sciir.backends.visual_judge``, ``offline_screen``, ``ocr``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.registry import Sight


class _GraphContext(BaseModel):
    methods_text: str
    terms: list[str]


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


def aibench_by_sight(request: VLMRequest, sight: Sight) -> VLMResult:
    """AIBench level 1 (component existence) by OCR, level 2 (local topology) as arrows between labelled
    boxes; levels 3 and 4 abstained on."""
    from sciir.backends.visual_solver import answer_aibench_by_sight

    return answer_aibench_by_sight(request, sight.read)


def aibench_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """AIBench level 1 (component existence) by OCR; the other levels abstained on."""
    from sciir.backends.ocr import answer_aibench_by_ocr

    return answer_aibench_by_ocr(request, sight.read)


class _Criterion(BaseModel):
    name: str


class _AestheticsContext(BaseModel):
    criteria: list[_Criterion]


def abstain_on_aesthetics(request: VLMRequest, sight: Sight) -> VLMResult:
    """Every rubric criterion unrated (null): no rule over OCR text can judge layout, legibility or colour."""
    context = _AestheticsContext.model_validate(request.context)
    if not context.criteria:
        return VLMResult.failed("aesthetics request names no criteria (context key 'criteria')")
    ratings = {criterion.name: None for criterion in context.criteria}
    rationale = "abstained: the offline backend reads text only and cannot judge visual design"
    return VLMResult(output={**ratings, "rationale": rationale})


def aibench_graph(request: VLMRequest, sight: Sight) -> VLMResult:
    """The method graph as far as plain rules can read prose: components are the figure's terms that the
    method text names, flows the pairs of them one sentence states explicitly ("A is followed by B");
    kinds and phases are left out (no rule can tell a module from data, or name a phase, honestly)."""
    from sciir.backends.offline_relations import stated_relations

    context = _GraphContext.model_validate(request.context)
    text = context.methods_text
    named = [
        term for term in context.terms if re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE)
    ]
    flows = stated_relations(text, named)
    return VLMResult(
        output={
            "components": [{"name": name, "kind": None} for name in named],
            "flows": [{"source": a, "target": b} for a, b in flows],
            "phases": [],
        }
    )


def aibench_questions(request: VLMRequest, sight: Sight) -> VLMResult:
    """The four levels written by rule from the graph in the request (``sciir.aibench.questions``)."""
    from sciir.aibench.questions import aibench_questions as write_questions
    from sciir.tasks.aibench_graph import graph_from_json
    from sciir.tasks.aibench_questions import QuestionsContext, questions_output

    context = QuestionsContext.model_validate(request.context)
    graph = graph_from_json(context.graph)
    return VLMResult(
        output=questions_output(
            write_questions(context.sample_id, graph, context.distractors, context.settings)
        )
    )


def candidate_score(request: VLMRequest, sight: Sight) -> VLMResult:
    """Best-of-N by text rendering only: the share of the prompt's quoted strings read with exact spelling,
    as 1-10; abstained (null) when the prompt quotes nothing or a string unread may still be drawn."""
    from sciir.backends.programmatic import quoted_spans

    labels = list(dict.fromkeys(text for text, _ in quoted_spans(str(request.context.get("prompt", "")))))
    if not labels:
        return VLMResult(output={"score": None, "rationale": "abstained: the prompt quotes no text to check"})
    if len(request.images) != 1:
        raise ValueError(f"needs exactly one image, got {len(request.images)}")
    reading = sight.read(request.images[0])
    found = [label for label in labels if reading.find(label) is not None]
    counted = f"{len(found)} of {len(labels)} quoted strings read with exactly their spelling"
    if len(found) < len(labels) and not reading.reliable:
        rationale = f"abstained: {counted}, and the text read is unreliable ({reading.why_unreliable()})"
        return VLMResult(output={"score": None, "rationale": rationale})
    score = 1 + round(9 * len(found) / len(labels))
    return VLMResult(output={"score": score, "rationale": f"text rendering only: {counted}"})
