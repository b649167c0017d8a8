"""AIBench's four levels of yes/no questions from a logic graph, each with a gold answer, so that a
solver that answers "yes" to everything cannot score well:

1. component existence: every component (yes) and distractors, names read off other articles' figures
   (no; ``sciir.aibench.distractors``);
2. local topology: every edge (yes), its reversal and non-adjacent pairs (no);
3. phase architecture: consecutive stages in order (yes) and reversed (no); pairs in one stage
   (yes) and pairs one of which comes after the other (no);
4. global semantics: where the whole flow starts and ends (yes; reversed, no), and whether the arrows
   lead from an entry all the way to an exit (yes; back again, no).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sciir.aibench.graph import LogicGraph

LEVELS = (1, 2, 3, 4)
LEVEL_NAMES = {1: "component existence", 2: "local topology", 3: "phase architecture", 4: "global semantics"}


class QuestionSettings(BaseModel):
    """How many negatives each level draws, and the seed that orders the candidates."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    distractors: int = Field(default=3, ge=0)
    non_adjacent: int = Field(default=2, ge=0)
    max_pairs: int = Field(default=4, ge=0)


# options and insufficient_option: a multiple-choice question's (``sciir.aibench.choices``); null for these.
QA_COLUMNS = (
    "sample_id",
    "question_id",
    "level",
    "kind",
    "question",
    "gold_answer",
    "nodes",
    "phases",
    "options",
    "insufficient_option",
)


@dataclass(frozen=True)
class Question:
    """One yes/no question with its gold answer and what it refers to (components, 1-based stages)."""

    level: int
    kind: str
    question: str
    gold_answer: str
    nodes: tuple[str, ...]
    phases: tuple[int, ...] = ()


def _quoted(names: Iterable[str]) -> str:
    """'"A"', '"A" and "B"', '"A", "B" and "C"'."""
    quoted = [f'"{name}"' for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"


def _rank(seed: int, sample_id: str, *parts: str) -> str:
    """An order that depends only on the seed, the sample and the candidate (not on input order)."""
    return hashlib.sha1("|".join((str(seed), sample_id, *parts)).encode()).hexdigest()


def _pick(
    candidates: Iterable[tuple[str, ...]], count: int, seed: int, sample_id: str
) -> list[tuple[str, ...]]:
    return sorted(candidates, key=lambda parts: _rank(seed, sample_id, *parts))[:count]


def _component(label: str, gold: str, kind: str) -> Question:
    return Question(1, kind, f'Is there a component labelled "{label}"?', gold, (label,))


def _direct_flow(a: str, b: str, gold: str, kind: str) -> Question:
    text = f'Does "{a}" feed directly into "{b}", with an arrow from "{a}" to "{b}" and no step in between?'
    return Question(2, kind, text, gold, (a, b))


def _stage_order(graph: LogicGraph, first: int, second: int, gold: str, kind: str) -> Question:
    a, b = graph.phases[first], graph.phases[second]
    text = f"Does the stage with {_quoted(a)} come before the stage with {_quoted(b)}?"
    return Question(3, kind, text, gold, (*a, *b), (first + 1, second + 1))


def _same_stage(graph: LogicGraph, a: str, b: str, gold: str, kind: str) -> Question:
    text = f'Are "{a}" and "{b}" in the same stage, side by side, neither feeding into the other?'
    stages = tuple(
        dict.fromkeys(index + 1 for index, members in enumerate(graph.phases) for n in (a, b) if n in members)
    )
    return Question(3, kind, text, gold, (a, b), stages)


def _flow_ends(start: Sequence[str], end: Sequence[str], gold: str, kind: str) -> Question:
    text = f"Does the overall flow start at {_quoted(start)} and end at {_quoted(end)}?"
    return Question(4, kind, text, gold, (*start, *end))


def _path(a: str, b: str, gold: str, kind: str) -> Question:
    return Question(4, kind, f'Can the arrows be followed all the way from "{a}" to "{b}"?', gold, (a, b))


def component_questions(graph: LogicGraph, distractors: Sequence[str]) -> list[Question]:
    """Level 1: each component exists (yes); each distractor does not (no)."""
    return [_component(node, "yes", "component") for node in graph.nodes] + [
        _component(name, "no", "distractor") for name in distractors
    ]


def topology_questions(graph: LogicGraph, sample_id: str, settings: QuestionSettings) -> list[Question]:
    """Level 2: each edge (yes), its reversal when that is no edge (no), and non-adjacent pairs (no),
    those joined by a longer path first, as they test "directly"."""
    edges = set(graph.edges)
    questions = [_direct_flow(a, b, "yes", "edge") for a, b in graph.edges]
    questions += [_direct_flow(b, a, "no", "reversed_edge") for a, b in graph.edges if (b, a) not in edges]
    flow = graph.flow_nodes
    apart = [(a, b) for a in flow for b in flow if a != b and (a, b) not in edges and (b, a) not in edges]
    joined = [pair for pair in apart if pair[1] in graph.reachable(pair[0])]
    chosen = _pick(joined, settings.non_adjacent, settings.seed, sample_id)
    chosen += _pick(set(apart) - set(joined), settings.non_adjacent - len(chosen), settings.seed, sample_id)
    return questions + [_direct_flow(a, b, "no", "non_adjacent") for a, b in chosen]


def phase_questions(graph: LogicGraph, sample_id: str, settings: QuestionSettings) -> list[Question]:
    """Level 3: consecutive stages in order (yes) and reversed (no); two components of one stage that do
    not reach each other (yes), each paired with two components one of which leads to the other (no)."""
    questions: list[Question] = []
    for stage in range(len(graph.phases) - 1):
        questions.append(_stage_order(graph, stage, stage + 1, "yes", "stage_order"))
        questions.append(_stage_order(graph, stage + 1, stage, "no", "stage_order_reversed"))
    same = [
        (a, b)
        for members in graph.phases
        for i, a in enumerate(members)
        for b in members[i + 1 :]
        if b not in graph.reachable(a) and a not in graph.reachable(b)
    ]
    flow = graph.flow_nodes
    later = [(a, b) for a in flow for b in flow if b in graph.reachable(a) and a not in graph.reachable(b)]
    chosen = _pick(same, settings.max_pairs, settings.seed, sample_id)
    questions += [_same_stage(graph, a, b, "yes", "same_stage") for a, b in chosen]
    questions += [
        _same_stage(graph, a, b, "no", "different_stage")
        for a, b in _pick(later, len(chosen), settings.seed, sample_id)
    ]
    return questions


def global_questions(graph: LogicGraph, sample_id: str, settings: QuestionSettings) -> list[Question]:
    """Level 4: the flow's entries and exits (yes) and the same reversed (no); entry-to-exit paths (yes)
    and the way back where there is none (no). Nothing when the flow is one closed loop."""
    entries, exits = graph.entries, graph.exits
    if not entries or not exits or set(entries) & set(exits):
        return []
    questions = [
        _flow_ends(entries, exits, "yes", "flow_ends"),
        _flow_ends(exits, entries, "no", "flow_ends_reversed"),
    ]
    paths = [(a, b) for a in entries for b in exits if b in graph.reachable(a)]
    for a, b in _pick(paths, settings.max_pairs, settings.seed, sample_id):
        questions.append(_path(a, b, "yes", "end_to_end"))
        if a not in graph.reachable(b):
            questions.append(_path(b, a, "no", "no_path"))
    return questions


def aibench_questions(
    sample_id: str, graph: LogicGraph, distractors: Sequence[str], settings: QuestionSettings
) -> list[tuple[str, Question]]:
    """All four levels for one sample, with ids ``AIB-L<level>-<nn>`` numbered per level."""
    questions = [
        *component_questions(graph, distractors),
        *topology_questions(graph, sample_id, settings),
        *phase_questions(graph, sample_id, settings),
        *global_questions(graph, sample_id, settings),
    ]
    counts: dict[int, int] = defaultdict(int)
    numbered = []
    for question in questions:
        counts[question.level] += 1
        numbered.append((f"AIB-L{question.level}-{counts[question.level]:02d}", question))
    return numbered


def qa_rows(sample_id: str, numbered: Sequence[tuple[str, Question]]) -> list[dict[str, Any]]:
    """The ``aibench_qa`` rows of one sample."""
    return [
        {
            "sample_id": sample_id,
            "question_id": qid,
            "level": q.level,
            "kind": q.kind,
            "question": q.question,
            "gold_answer": q.gold_answer,
            "nodes": json.dumps(list(q.nodes), ensure_ascii=False),
            "phases": json.dumps(list(q.phases)),
            "options": None,
            "insufficient_option": None,
        }
        for qid, q in numbered
    ]
