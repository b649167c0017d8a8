"""Faults planted in a structured plan, for a known-bad baseline.

A judge that cannot tell a correct diagram from one with a misspelled label, a
reversed arrow or a missing node is not measuring correctness. The code-based
generators configured with ``faults`` (``reference_renderer_faulty`` on the
annotation's plan, ``programmatic_faulty`` on what it parsed from its prompt) draw
their plan after these small, deterministic edits and record each one, so evaluate
can check the judge catches them.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

Edge = tuple[str, str]
Fault = dict[str, Any]
# A labelled group of labels (an AIBench phase): its title and its members.
Group = tuple[str, tuple[str, ...]]

# Only letters inside a word of at least three are edited, so the first and last stay and
# the label is still recognisably "the same label, spelled wrong".
_WORD = re.compile(r"[A-Za-z]{3,}")


@dataclass(frozen=True)
class DrawingPlan:
    """What a figure shows: labelled nodes in reading order, directed edges between labels, and labelled
    groups of labels (drawn as framed areas)."""

    labels: tuple[str, ...]
    edges: tuple[Edge, ...] = ()
    groups: tuple[Group, ...] = ()

    def renamed(self, names: dict[str, str]) -> DrawingPlan:
        """The plan with labels renamed (in the edges and groups too); unnamed labels stay."""
        edges = tuple((names.get(src, src), names.get(dst, dst)) for src, dst in self.edges)
        groups = tuple((title, tuple(names.get(m, m) for m in members)) for title, members in self.groups)
        return DrawingPlan(tuple(names.get(label, label) for label in self.labels), edges, groups)

    def without(self, dropped: set[str]) -> DrawingPlan:
        """The plan without the ``dropped`` labels, their edges, and any group left empty."""
        groups = tuple(
            (title, kept)
            for title, members in self.groups
            if (kept := tuple(member for member in members if member not in dropped))
        )
        edges = tuple(edge for edge in self.edges if not dropped.intersection(edge))
        return DrawingPlan(tuple(label for label in self.labels if label not in dropped), edges, groups)


class FaultConfig(BaseModel):
    """How many faults of each kind to plant per sample; ``seed`` makes the choice repeatable."""

    model_config = ConfigDict(extra="forbid")

    misspell_labels: int = Field(default=0, ge=0)
    reverse_edges: int = Field(default=0, ge=0)
    drop_nodes: int = Field(default=0, ge=0)
    seed: int = 0


def fault_rng(seed: int, sample_id: str) -> random.Random:
    """A generator seeded from the config seed and the sample, so each sample gets its own faults."""
    return random.Random(f"{seed}:{sample_id}")


def misspellings(label: str) -> list[str]:
    """Every visibly wrong spelling of ``label``: two adjacent inner letters swapped, or one dropped.

    Only the longest word is edited. Swaps of equal letters are skipped because they change nothing.
    Returns an empty list when the label has no word of three letters or more.
    """
    words = list(_WORD.finditer(label))
    if not words:
        return []
    word = max(words, key=lambda match: len(match.group()))
    start, end = word.start(), word.end()
    inner = range(start + 1, end - 1)
    swaps = [
        label[:i] + label[i + 1] + label[i] + label[i + 2 :]
        for i in inner
        if i + 1 < end - 1 and label[i] != label[i + 1]
    ]
    drops = [label[:i] + label[i + 1 :] for i in inner]
    return list(dict.fromkeys(swaps + drops))


def drop_nodes(plan: DrawingPlan, count: int, rng: random.Random) -> tuple[DrawingPlan, list[Fault]]:
    """Remove ``count`` labels and every edge touching them (a group left empty goes too); at least one
    label always stays."""
    count = min(count, len(plan.labels) - 1)
    if count <= 0:
        return plan, []
    dropped = set(rng.sample(plan.labels, count))
    faults = [{"kind": "drop_node", "label": label} for label in plan.labels if label in dropped]
    return plan.without(dropped), faults


def reverse_edges(plan: DrawingPlan, count: int, rng: random.Random) -> tuple[DrawingPlan, list[Fault]]:
    """Reverse ``count`` edges, chosen among those whose reversal is a new, visible change.

    A self-loop, or an edge whose reverse is already drawn, would look the same reversed.
    """
    candidates = [
        index for index, (src, dst) in enumerate(plan.edges) if src != dst and (dst, src) not in plan.edges
    ]
    chosen = sorted(rng.sample(candidates, min(count, len(candidates))))
    edges = list(plan.edges)
    for index in chosen:
        src, dst = edges[index]
        edges[index] = (dst, src)
    faults = [{"kind": "reverse_edge", "edge": list(plan.edges[index])} for index in chosen]
    return replace(plan, edges=tuple(edges)), faults


def misspell_labels(plan: DrawingPlan, count: int, rng: random.Random) -> tuple[DrawingPlan, list[Fault]]:
    """Misspell ``count`` labels (renaming them in the edges and groups too).

    A misspelling that would equal another label is never used, so no two nodes merge;
    labels are tried in a seeded random order until ``count`` are misspelled or none is left.
    """
    renamed: dict[str, str] = {}
    for label in rng.sample(plan.labels, len(plan.labels)):
        if len(renamed) == count:
            break
        taken = set(plan.labels) | set(renamed.values())
        usable = [spelling for spelling in misspellings(label) if spelling not in taken]
        if usable:
            renamed[label] = rng.choice(usable)
    faults = [
        {"kind": "misspell", "label": label, "drawn": renamed[label]}
        for label in plan.labels
        if label in renamed
    ]
    return plan.renamed(renamed), faults


def plant_faults(plan: DrawingPlan, config: FaultConfig, sample_id: str) -> tuple[DrawingPlan, list[Fault]]:
    """Apply the configured faults to one sample's plan; returns the plan to draw and what was planted.

    Nodes are dropped first so that the other faults land on what is actually drawn.
    Fewer faults than configured are planted when the plan is too small to hold them.
    """
    rng = fault_rng(config.seed, sample_id)
    plan, dropped = drop_nodes(plan, config.drop_nodes, rng)
    plan, reversed_ = reverse_edges(plan, config.reverse_edges, rng)
    plan, misspelled = misspell_labels(plan, config.misspell_labels, rng)
    return plan, misspelled + reversed_ + dropped
