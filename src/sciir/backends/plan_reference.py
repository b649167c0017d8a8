"""``plan_reference``: a *reference* renderer that draws the annotation's structured plan itself.

It is not a contestant: it reads the answer key (the benchmark's ``plan``: labels and edges from the
annotation), so its images are of known content, for calibrating the judge (judge validation), and
are never ranked. Its role is always ``reference``: the generate pipeline hands it a
:class:`sciir.backends.base.PlanRequest`, and never hands the plan to a contestant. Configured with
``faults`` it draws the plan after planted faults (a known-bad reference with known truth).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sciir.backends.base import GenerationRequest, GeneratorRole
from sciir.backends.plan_drawing import PlanDrawingGenerator, PlanError
from sciir.backends.plan_faults import DrawingPlan, Group

BACKEND_NAME = "plan_reference"


class _PlanSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    labels: list[str] = []
    edges: list[tuple[str, str]] = []
    groups: list[tuple[str, list[str]]] = []  # [title, [member labels]]: framed areas (AIBench phases)


def parse_plan(request: GenerationRequest) -> DrawingPlan:
    """The plan to draw for ``request``: stripped, de-duplicated labels plus any edge endpoint not listed,
    the edges, and the groups (each titled, of labels the plan draws).

    Raises:
        PlanError: no plan, a malformed plan, a blank label or group title, a group member that is no
            label, or nothing to draw.
    """
    sample = request.sample_id
    raw_plan = getattr(request, "plan", None)
    if raw_plan is None:
        raise PlanError(
            f"request for sample {sample} has no plan; the plan_reference renderer draws only plans"
        )
    try:
        spec = _PlanSpec.model_validate(raw_plan)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise PlanError(f"plan for sample {sample} is malformed ({problems})") from None
    edges = tuple((src.strip(), dst.strip()) for src, dst in spec.edges)
    named = [label.strip() for label in spec.labels] + [end for edge in edges for end in edge]
    if any(not label for label in named):
        raise PlanError(f"plan for sample {sample} has a blank label or edge endpoint")
    if not spec.labels:
        raise PlanError(f"plan for sample {sample} has no labels to draw")
    labels = tuple(dict.fromkeys(named))
    return DrawingPlan(labels=labels, edges=edges, groups=_groups(sample, spec.groups, labels))


def _groups(sample: str, groups: list[tuple[str, list[str]]], labels: tuple[str, ...]) -> tuple[Group, ...]:
    """The plan's groups, stripped; each must have a title and members among ``labels``."""
    parsed = tuple((title.strip(), tuple(member.strip() for member in members)) for title, members in groups)
    for title, members in parsed:
        if not title:
            raise PlanError(f"plan for sample {sample} has a group without a title")
        strangers = [member for member in members if member not in labels]
        if strangers:
            raise PlanError(
                f"plan for sample {sample}: group {title!r} holds {strangers}, which are no labels"
            )
    return parsed


class PlanReferenceRenderer(PlanDrawingGenerator):
    """Draws each :class:`~sciir.backends.base.PlanRequest`'s plan
    ``{"labels": [str], "edges": [[src, dst]], "groups": [[title, [label]]]}`` (groups optional); a
    reference, never a contestant."""

    backend_name = BACKEND_NAME
    role: GeneratorRole = "reference"
    reads_annotation: ClassVar[bool] = True

    def read_plan(self, request: GenerationRequest) -> DrawingPlan:
        """The request's annotation plan (see :func:`parse_plan`)."""
        return parse_plan(request)
