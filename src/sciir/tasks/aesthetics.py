"""AIBench aesthetics (task ``aesthetics``): the judge rates each image on a fixed rubric, each criterion
1-5; per-model means with coverage. Offline, every criterion is left unrated (``abstain_on_sight``): no rule
over OCR text can judge layout, legibility or colour."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.task import ModelTask

AESTHETICS_TASK = "aesthetics"

AESTHETICS_RUBRIC: dict[str, str] = {
    "layout_clarity": "elements are aligned and evenly spaced, nothing overlaps, the reading order is obvious "
    "(1: cluttered or overlapping; 5: clean and balanced)",
    "text_legibility": "every piece of text is sharp, large enough and free of garbled glyphs "
    "(1: unreadable or garbled; 5: all text crisp and readable)",
    "visual_hierarchy": "the main flow and the grouping of parts stand out at a glance; emphasis matches "
    "importance (1: flat or confusing; 5: structure obvious at once)",
    "colour_consistency": "a harmonious palette used consistently: elements of one kind share one style "
    "(1: clashing or arbitrary; 5: coherent, publication-ready)",
    "overall": "the figure's visual design as a whole, ready for a paper; judged on its own, "
    "not as an average of the above (1: unusable; 5: publication quality)",
}

_RATING = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 5}, {"type": "null"}]}
AESTHETICS_REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {**dict.fromkeys(AESTHETICS_RUBRIC, _RATING), "rationale": {"type": "string"}},
    "required": [*AESTHETICS_RUBRIC, "rationale"],
    "additionalProperties": False,
}


def build_aesthetics_request(image_png: bytes | None = None) -> VLMRequest:
    """The rubric request for one image (without ``image_png``, made for an image added later); the
    criteria travel in the context for non-prose backends."""
    criteria = "\n".join(f"- {name}: {description}" for name, description in AESTHETICS_RUBRIC.items())
    reply = ", ".join(f'"{name}": 1-5 | null' for name in AESTHETICS_RUBRIC)
    return TASK.request(
        images=[image_png] if image_png is not None else [],
        context={
            "criteria": [{"name": name, "description": text} for name, text in AESTHETICS_RUBRIC.items()]
        },
        criteria=criteria,
        reply=reply,
    )


@dataclass
class AestheticsRating:
    """One image's ratings (None = not rated), its status and rationale, or why it failed."""

    ratings: dict[str, int | None] = field(default_factory=lambda: dict.fromkeys(AESTHETICS_RUBRIC))
    status: str = "failed"  # rated / partial / abstained / failed
    rationale: str | None = None
    reason: str | None = None


def _rating(value: Any) -> int | None:
    """A 1-5 integer rating or None; anything else raises ValueError."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or value != int(value)
        or not 1 <= value <= 5
    ):
        raise ValueError(f"{value!r} is not an integer from 1 to 5")
    return int(value)


def parse_aesthetics_reply(result: VLMResult, image_id: str) -> AestheticsRating:
    """Strictly parsed ratings: a missing criterion or an out-of-range value fails the whole image."""
    if not result.ok:
        return AestheticsRating(reason=f"aesthetics request for {image_id} failed: {result.failure}")
    output = result.output or {}
    missing = [name for name in AESTHETICS_RUBRIC if name not in output]
    if missing:
        return AestheticsRating(reason=f"aesthetics reply for {image_id} lacks criteria {missing}")
    try:
        ratings = {name: _rating(output[name]) for name in AESTHETICS_RUBRIC}
    except ValueError as error:
        return AestheticsRating(reason=f"aesthetics reply for {image_id} has an invalid rating: {error}")
    given = sum(value is not None for value in ratings.values())
    status = "rated" if given == len(ratings) else "partial" if given else "abstained"
    rationale = output.get("rationale") if isinstance(output.get("rationale"), str) else None
    reason = None if status == "rated" else f"aesthetics judge left {len(ratings) - given} criteria unrated"
    return AestheticsRating(ratings, status, rationale, reason)


def aesthetics_row(model: str, sample_id: str, rating: AestheticsRating) -> dict[str, Any]:
    """One row of ``aesthetics_ratings``."""
    return {
        "model": model,
        "sample_id": sample_id,
        **rating.ratings,
        "status": rating.status,
        "rationale": rating.rationale,
        "reason": rating.reason,
    }


AESTHETICS_COLUMNS = ("model", "sample_id", *AESTHETICS_RUBRIC, "status", "rationale", "reason")


def aesthetics_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(AESTHETICS_COLUMNS))
    return frame.astype(dict.fromkeys(AESTHETICS_RUBRIC, "Int64"))


def score_aesthetics(ratings: pd.DataFrame) -> pd.DataFrame:
    """``aesthetics_scores``: per model, the mean rating per criterion over the images rated on it, the
    coverage (ratings given / criteria x images) and the number of images."""
    rows = []
    for model, frame in ratings.groupby("model", sort=True):
        values = frame[list(AESTHETICS_RUBRIC)]
        row: dict[str, Any] = {"model": model}
        row |= {
            name: float(values[name].mean()) if values[name].notna().any() else math.nan
            for name in AESTHETICS_RUBRIC
        }
        row["coverage"] = float(values.notna().to_numpy().mean()) if len(frame) else math.nan
        row["n_images"] = len(frame)
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", *AESTHETICS_RUBRIC, "coverage", "n_images"])


class _Criterion(BaseModel):
    name: str


class _AestheticsContext(BaseModel):
    criteria: list[_Criterion]


def abstain_on_sight(request: VLMRequest, sight: Sight) -> VLMResult:
    """Every rubric criterion unrated (null): no rule over OCR text can judge layout, legibility or colour."""
    context = _AestheticsContext.model_validate(request.context)
    if not context.criteria:
        return VLMResult.failed("aesthetics request names no criteria (context key 'criteria')")
    ratings = {criterion.name: None for criterion in context.criteria}
    rationale = "abstained: the offline backend reads text only and cannot judge visual design"
    return VLMResult(output={**ratings, "rationale": rationale})


TASK = ModelTask(
    name=AESTHETICS_TASK,
    summary="1-5 ratings of an illustration's visual design (AIBench)",
    reply_schema=AESTHETICS_REPLY_SCHEMA,
    answerers={"offline": abstain_on_sight},
)
