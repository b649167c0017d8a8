"""AIBench's logic graph G = (V, E, P) (section 3.2): components V, data flows E and phases P.

Phases are derived deterministically: components that lie on a cycle form one unit, and each unit's
stage is its longest distance from an entry point of the flow, so components at the same stage sit side
by side (parallel branches) and every stage after the first is fed by the stage before it. Components on
no relation belong to no phase.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

GRAPH_COLUMNS = ("sample_id", "nodes", "edges", "phases", "n_questions", "status", "reason")


@dataclass(frozen=True)
class LogicGraph:
    """Components in annotation order, directed edges, and phases ordered along the flow."""

    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    phases: tuple[tuple[str, ...], ...]

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
        """The 0-based stage of a component, None for a component on no relation."""
        return next((index for index, members in enumerate(self.phases) if node in members), None)

    @property
    def entries(self) -> list[str]:
        """Components of the first units of the flow (no arrow reaches them from outside their cycle)."""
        return [node for node in self.flow_nodes if not self._fed_from_outside(node)]

    @property
    def exits(self) -> list[str]:
        """Components of the last units of the flow (no arrow leaves their cycle)."""
        return [node for node in self.flow_nodes if not self._feeds_outside(node)]

    @property
    def flow_nodes(self) -> list[str]:
        """Components on a relation, stage by stage."""
        return [node for members in self.phases for node in members]

    def unit(self, node: str) -> set[str]:
        """The component with everything on a cycle through it (the unit a stage is given to)."""
        return {node} | {other for other in self.reachable(node) if node in self.reachable(other)}

    def _fed_from_outside(self, node: str) -> bool:
        unit = self.unit(node)
        return any(b in unit and a not in unit for a, b in self.edges)

    def _feeds_outside(self, node: str) -> bool:
        unit = self.unit(node)
        return any(a in unit and b not in unit for a, b in self.edges)


def _stage_depths(nodes: Sequence[str], edges: Sequence[tuple[str, str]]) -> dict[str, int]:
    """Longest distance of each component's unit (cycle) from an entry, over the acyclic graph of units."""
    flow = LogicGraph(tuple(nodes), tuple(edges), ())
    unit_of = {node: frozenset(flow.unit(node)) for node in nodes}
    unit_edges = {(unit_of[a], unit_of[b]) for a, b in edges if unit_of[a] != unit_of[b]}
    units = list(dict.fromkeys(unit_of[node] for node in nodes))
    indegree = {unit: sum(1 for _, b in unit_edges if b == unit) for unit in units}
    depth = dict.fromkeys(units, 0)
    ready = [unit for unit in units if indegree[unit] == 0]
    while ready:  # Kahn's order: a unit's depth is final once all its feeders are done
        unit = ready.pop(0)
        for a, b in unit_edges:
            if a == unit:
                depth[b] = max(depth[b], depth[a] + 1)
                indegree[b] -= 1
                if indegree[b] == 0:
                    ready.append(b)
    return {node: depth[unit_of[node]] for node in nodes}


def build_logic_graph(terms: Sequence[str], relations: Sequence[Sequence[str]]) -> LogicGraph:
    """The logic graph of one sample: components = terms then relation ends, edges = relations."""
    edges = tuple(dict.fromkeys((str(a), str(b)) for a, b in relations))
    nodes = tuple(dict.fromkeys([*map(str, terms), *(end for edge in edges for end in edge)]))
    on_flow = [node for node in nodes if any(node in edge for edge in edges)]
    depths = _stage_depths(on_flow, edges)
    phases = tuple(
        tuple(node for node in on_flow if depths[node] == stage)
        for stage in range(max(depths.values(), default=-1) + 1)
    )
    return LogicGraph(nodes, edges, phases)
