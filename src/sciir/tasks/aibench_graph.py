"""The ``aibench_graph`` task (AIBench section 3.2): the logic graph G = (V, E, P) of a figure's method,
extracted from the article's method text, source terminology kept, comparisons and qualitative claims
dropped. The reply is checked strictly: flows and phases may only name listed components, a component
sits in one phase at most; an answer that breaks a rule is a failure for that sample, never repaired.

Offline (``answer_by_reading``), as far as plain rules can read prose: components are the figure's terms
that the method text names, flows the pairs of them one sentence states explicitly ("A is followed by B",
``sciir.tasks.relations``); kinds and phases are left out (no rule can tell a module from data, or name a
phase, honestly).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, model_validator

from sciir.aibench.graph import LogicGraph, build_logic_graph
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.relations import stated_relations
from sciir.tasks.task import ModelTask, TaskReplyError

GRAPH_TASK = "aibench_graph"
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class GraphTaskError(TaskReplyError):
    """A graph or question answer was missing or broke its schema's rules."""


class Component(BaseModel):
    """A processing module (a step, a network block) or a data entity (an input, an intermediate result)."""

    name: Name
    kind: Literal["module", "data"] | None = None


class Flow(BaseModel):
    """A directed data flow from one component to another."""

    source: Name
    target: Name


class Phase(BaseModel):
    """An architectural phase (stage) the text names, with its components."""

    name: Name
    components: list[Name] = Field(min_length=1)


class GraphReply(BaseModel):
    """The graph of one method: components, flows and phases in the order the method runs them."""

    components: list[Component]
    flows: list[Flow]
    phases: list[Phase]

    @model_validator(mode="after")
    def _names_resolve(self) -> GraphReply:
        names = [component.name for component in self.components]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"components repeat: {repeated}")
        named = {end for flow in self.flows for end in (flow.source, flow.target)}
        unknown = sorted((named | {m for phase in self.phases for m in phase.components}) - set(names))
        if unknown:
            raise ValueError(f"flows or phases name {unknown}, which are not components")
        placed = [member for phase in self.phases for member in phase.components]
        twice = sorted({name for name in placed if placed.count(name) > 1})
        if twice:
            raise ValueError(f"components in more than one phase: {twice}")
        return self

    def graph(self) -> LogicGraph:
        return build_logic_graph(
            [component.name for component in self.components],
            [(flow.source, flow.target) for flow in self.flows],
            [phase.components for phase in self.phases],
        )


def build_graph_request(methods_text: str, caption: str, terms: Sequence[str]) -> VLMRequest:
    """The request for one figure's method graph: the method text, the caption saying which part of the
    method the figure shows, and the figure's terms (so the graph keeps the figure's names)."""
    return TASK.request(
        context={"methods_text": methods_text, "caption": caption, "terms": list(terms)},
        methods_text=methods_text,
        caption=caption,
        terms=json.dumps(list(terms), ensure_ascii=False),
        schema=json.dumps(TASK.schema(), ensure_ascii=False),
    )


def parse_graph_reply(result: VLMResult) -> LogicGraph:
    """The logic graph of a reply, or GraphTaskError saying why it is unusable."""
    reply: GraphReply = TASK.parse(result, GraphTaskError)
    return reply.graph()


def graph_json(graph: LogicGraph) -> dict[str, Any]:
    """A graph as the questions task reads it: components, flows and phases (numbered from 1)."""
    return {
        "components": list(graph.nodes),
        "flows": [list(edge) for edge in graph.edges],
        "phases": [list(members) for members in graph.phases],
    }


def graph_from_json(value: Mapping[str, Any]) -> LogicGraph:
    return build_logic_graph(value["components"], value["flows"], value.get("phases", ()))


class _GraphContext(BaseModel):
    methods_text: str
    terms: list[str]


def answer_by_reading(request: VLMRequest, sight: Sight) -> VLMResult:
    """The method graph as far as plain rules can read prose (module docstring)."""
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


TASK = ModelTask(
    name=GRAPH_TASK,
    summary="the logic graph G = (V, E, P) of a figure's method, from the method text (AIBench 3.2)",
    reply_schema=GraphReply,
    answerers={"offline": answer_by_reading},
)
