"""The ``candidate_score`` task of best-of-N (AIBench section 4): a selector scores one candidate image 1-10
against the prompt it was drawn from alone, never against the benchmark's checklist; null when the image
cannot be judged, with the reason. The wrapper that draws and keeps the best is ``sciir.generation.best_of_n``.

Offline (``score_by_text``), text rendering only: the share of the prompt's quoted strings read with exact
spelling, as 1-10; abstained on (null) when the prompt quotes nothing, or when a string is unread and the
reading is not reliable (it may still be drawn).
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import BaseModel, Field

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.programmatic import quoted_spans
from sciir.backends.rule_based import Sight
from sciir.tasks.task import ModelTask, TaskReplyError

SCORE_TASK = "candidate_score"


class CandidateScore(BaseModel):
    """The selector's reply: 1-10, or null when the image cannot be judged, with the reason."""

    score: Annotated[int, Field(ge=1, le=10)] | None
    rationale: str


def build_score_request(prompt: str, image: bytes) -> VLMRequest:
    """The selector's request for one candidate: the image and the prompt it was drawn from."""
    return TASK.request(
        images=[image],
        context={"prompt": prompt},
        prompt=prompt,
        schema=json.dumps(TASK.schema(), ensure_ascii=False),
    )


def score_of(reply: VLMResult) -> tuple[int | None, str]:
    """A candidate's score and why (the selector's rationale, or why there is no score)."""
    try:
        parsed = TASK.parse(reply)
    except TaskReplyError as error:
        return None, str(error)
    return parsed.score, parsed.rationale


def score_by_text(request: VLMRequest, sight: Sight) -> VLMResult:
    """Best-of-N by text rendering only (module docstring)."""
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


TASK = ModelTask(
    name=SCORE_TASK,
    summary="1-10 for one candidate image against its prompt, to keep the best of N (AIBench 4)",
    reply_schema=CandidateScore,
    answerers={"offline": score_by_text},
)
