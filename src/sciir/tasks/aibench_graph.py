"""The ``aibench_graph`` task (AIBench section 3.2): the logic graph G = (V, E, P) of a figure's method,
extracted from the article's method text, source terminology kept, comparisons and qualitative claims
dropped. The reply is checked strictly: flows and phases may only name listed components, a component
sits in one phase at most; an answer that breaks a rule is a failure for that sample, never repaired.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, model_validator

from sciir.aibench.graph import LogicGraph, build_logic_graph
from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.strict_schema import strict_model_schema
from sciir.tasks.parsing import TaskReplyError, parse_reply
from sciir.tasks.prompts import prompt_template

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
    template = prompt_template(GRAPH_TASK)
    schema = strict_model_schema(GraphReply)
    context = {"methods_text": methods_text, "caption": caption, "terms": list(terms)}
    prompt = template.render(
        methods_text=methods_text,
        caption=caption,
        terms=json.dumps(list(terms), ensure_ascii=False),
        schema=json.dumps(schema, ensure_ascii=False),
    )
    return VLMRequest(
        task=GRAPH_TASK, prompt=prompt, json_schema=schema, context=context, template_version=template.version
    )


def parse_graph_reply(result: VLMResult) -> LogicGraph:
    """The logic graph of a reply, or GraphTaskError saying why it is unusable."""
    return parse_reply(GraphReply, GRAPH_TASK, result, GraphTaskError).graph()


def graph_json(graph: LogicGraph) -> dict[str, Any]:
    """A graph as the questions task reads it: components, flows and phases (numbered from 1)."""
    return {
        "components": list(graph.nodes),
        "flows": [list(edge) for edge in graph.edges],
        "phases": [list(members) for members in graph.phases],
    }


def graph_from_json(value: Mapping[str, Any]) -> LogicGraph:
    return build_logic_graph(value["components"], value["flows"], value.get("phases", ()))
