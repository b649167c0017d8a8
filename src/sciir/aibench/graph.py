"""AIBench's logic graph G = (V, E, P) (section 3.2): components V, data flows E and architectural phases P.

The graph is extracted from the method text (``sciir.tasks.aibench_graph``): components keep the source's
names, flows are directed, and phases are the architecture's stages as the text names them, in order. A
graph whose source names no phases has none (phase questions are then not asked); phases are never
guessed from the shape of the flow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GRAPH_COLUMNS = ("sample_id", "nodes", "edges", "phases", "n_questions", "status", "reason")


@dataclass(frozen=True)
class LogicGraph:
    """Components in source order, directed edges, and phases (each a tuple of components) in order."""

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    phases: tuple[tuple[str, ...], ...] = ()

    def successors(self, node: str) -> list[str]:
        return [b for a, b in self.edges if a == node]

    def reachable(self, start: str) -> set[str]:
        """Components reached from ``start`` by following one arrow or more."""
        seen: set[str] = set()
        frontier = self.successors(start)
        while frontier:
            node = frontier.pop()
            if node not in seen:
                seen.add(node)
                frontier.extend(self.successors(node))
        return seen

    def phase_of(self, node: str) -> int | None:
        """The 0-based phase of a component, None for a component in no phase."""
        return next((index for index, members in enumerate(self.phases) if node in members), None)

    @property
    def flow_nodes(self) -> list[str]:
        """Components on a flow, in source order."""
        return [node for node in self.nodes if any(node in edge for edge in self.edges)]

    @property
    def entries(self) -> list[str]:
        """Components where the flow starts (no arrow reaches them from outside their cycle)."""
        return [node for node in self.flow_nodes if not self._fed_from_outside(node)]

    @property
    def exits(self) -> list[str]:
        """Components where the flow ends (no arrow leaves their cycle)."""
        return [node for node in self.flow_nodes if not self._feeds_outside(node)]

    def unit(self, node: str) -> set[str]:
        """The component with everything on a cycle through it."""
        return {node} | {other for other in self.reachable(node) if node in self.reachable(other)}

    def _fed_from_outside(self, node: str) -> bool:
        unit = self.unit(node)
        return any(b in unit and a not in unit for a, b in self.edges)

    def _feeds_outside(self, node: str) -> bool:
        unit = self.unit(node)
        return any(a in unit and b not in unit for a, b in self.edges)


def build_logic_graph(
    components: Sequence[str],
    flows: Sequence[Sequence[str]],
    phases: Sequence[Sequence[str]] = (),
) -> LogicGraph:
    """The logic graph: components (then any flow end not listed), flows, and the phases as given."""
    edges = tuple(dict.fromkeys((str(a), str(b)) for a, b in flows))
    nodes = tuple(dict.fromkeys([*map(str, components), *(end for edge in edges for end in edge)]))
    return LogicGraph(nodes, edges, tuple(tuple(map(str, members)) for members in phases if members))
