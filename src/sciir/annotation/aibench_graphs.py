"""AIBench on the annotate side: each annotated figure's logic graph, from its article's method text, and
four levels of questions written from the graph, both asked of the annotator (tasks ``aibench_graph`` and
``aibench_questions``, ``sciir.tasks.registry``); the graphs and questions are ``sciir.aibench``'s.

A sample gets a graph when its annotation is ``ok`` and its article has method text; every other sample is
kept in ``aibench_graphs`` as ``skipped`` with the reason, and a sample whose graph or questions answer
is unusable as ``failed`` with the reason, so none disappears silently. Distractors for level 1 are drawn
from the components of all the other graphs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from sciir.aibench.graph import GRAPH_COLUMNS, LogicGraph
from sciir.aibench.questions import (
    LEVELS,
    QA_COLUMNS,
    Question,
    QuestionSettings,
    choose_distractors,
    qa_rows,
)
from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.runs.progress import Progress
from sciir.tasks.aibench_graph import GraphTaskError, build_graph_request, parse_graph_reply
from sciir.tasks.aibench_questions import build_questions_request, parse_questions_reply

logger = logging.getLogger(__name__)


@dataclass
class SampleGraph:
    """One sample on its way: its texts, then its graph and questions, or why it has none."""

    sample_id: str
    methods_text: str
    caption: str
    terms: list[str]
    own_texts: tuple[str, ...]
    graph: LogicGraph | None = None
    questions: list[tuple[str, Question]] = field(default_factory=list)
    status: str = "ok"
    reason: str | None = None

    def fail(self, status: str, reason: str) -> None:
        self.status, self.reason = status, reason


def _json_list(value: Any) -> list[Any]:
    return json.loads(value) if isinstance(value, str) and value else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def sample_graphs(annotations: pd.DataFrame, curated: pd.DataFrame) -> list[SampleGraph]:
    """Every annotated sample with its article's method text and caption; those that cannot get a graph
    are marked ``skipped`` with the reason."""
    texts = curated.drop_duplicates("sample_id").set_index("sample_id")
    samples = []
    for row in annotations.to_dict("records"):
        sample_id = str(row["sample_id"])
        known = sample_id in texts.index
        sample = SampleGraph(
            sample_id,
            _text(texts.at[sample_id, "methods_text"]) if known else "",
            _text(texts.at[sample_id, "caption"]) if known else "",
            _json_list(row["terms"]),
            (*_json_list(row["required_text"]), _text(row["sci_rcot"]), _text(row["abstract_prompt"])),
        )
        if row["status"] != "ok":
            sample.fail("skipped", f"sample {sample_id}: annotation {row['status']} ({row['reason']})")
        elif not sample.methods_text.strip():
            sample.fail("skipped", f"sample {sample_id}: its article has no method text")
        samples.append(sample)
    return samples


def ask_each_sample(
    annotator: VisionLanguageModel,
    label: str,
    samples: Sequence[SampleGraph],
    request_of: Callable[[SampleGraph], VLMRequest],
    take: Callable[[SampleGraph, VLMResult], None],
) -> None:
    """Stream one request per sample through the annotator and hand each answer to ``take``; an unusable
    answer fails that sample with the reason."""
    if not samples:
        return
    results: dict[int, VLMResult] = {}
    with Progress(label, len(samples)) as progress:

        def arrived(position: int, result: VLMResult) -> None:
            progress.add(result)
            results[position] = result

        annotator.stream((request_of(sample) for sample in samples), arrived)
    for position, sample in enumerate(samples):
        try:
            take(sample, results[position])
        except GraphTaskError as error:
            sample.fail("failed", f"sample {sample.sample_id}: {error}")


def take_graph(sample: SampleGraph, result: VLMResult) -> None:
    sample.graph = parse_graph_reply(result)
    if not sample.graph.nodes:
        sample.fail("skipped", f"sample {sample.sample_id}: the method text names no component of the figure")


def ask_questions(
    annotator: VisionLanguageModel, samples: Sequence[SampleGraph], settings: QuestionSettings
) -> None:
    """The questions of every sample with a graph, distractors drawn from the other graphs' components."""
    pool = sorted({name for sample in samples if sample.graph for name in sample.graph.nodes})
    distractors = {
        sample.sample_id: choose_distractors(sample.sample_id, sample.graph, sample.own_texts, pool, settings)
        for sample in samples
        if sample.graph
    }

    def take(sample: SampleGraph, result: VLMResult) -> None:
        sample.questions = parse_questions_reply(result, sample.graph, distractors[sample.sample_id])

    ask_each_sample(
        annotator,
        "aibench questions",
        samples,
        lambda s: build_questions_request(s.sample_id, s.graph, distractors[s.sample_id], settings),
        take,
    )


def graph_row(sample: SampleGraph) -> dict[str, Any]:
    """One ``aibench_graphs`` row; a skipped or failed sample has null graph columns and its reason."""
    graph = sample.graph if sample.status == "ok" else None
    return {
        "sample_id": sample.sample_id,
        "nodes": json.dumps(list(graph.nodes), ensure_ascii=False) if graph else None,
        "edges": json.dumps([list(edge) for edge in graph.edges], ensure_ascii=False) if graph else None,
        "phases": json.dumps([list(phase) for phase in graph.phases], ensure_ascii=False) if graph else None,
        "n_questions": len(sample.questions) if graph else 0,
        "status": sample.status,
        "reason": sample.reason,
    }


def qa_metrics(graphs: pd.DataFrame, qa: pd.DataFrame) -> dict[str, float]:
    """Graph and question counts, questions per level, and the share whose gold answer is yes."""
    metrics = {
        "samples": float(len(graphs)),
        "graphs": float((graphs["status"] == "ok").sum()),
        "skipped": float((graphs["status"] == "skipped").sum()),
        "failed": float((graphs["status"] == "failed").sum()),
        "graphs_with_phases": float((graphs["phases"].fillna("[]") != "[]").sum()),
        "questions": float(len(qa)),
        "gold_yes_share": float((qa["gold_answer"] == "yes").mean()) if len(qa) else 0.0,
    }
    metrics |= {f"questions_level{level}": float((qa["level"] == level).sum()) for level in LEVELS}
    return metrics


def graphs_and_questions(
    annotations: pd.DataFrame,
    curated: pd.DataFrame,
    annotator: VisionLanguageModel,
    settings: QuestionSettings,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``aibench_graphs`` and ``aibench_qa``: graphs from the method texts, then questions; each sample
    without questions is logged with the reason."""
    samples = sample_graphs(annotations, curated)
    ask_each_sample(
        annotator,
        "aibench graphs",
        [s for s in samples if s.status == "ok"],
        lambda s: build_graph_request(s.methods_text, s.caption, s.terms),
        take_graph,
    )
    ask_questions(annotator, [s for s in samples if s.status == "ok"], settings)
    for sample in samples:
        if sample.status != "ok":
            logger.info("aibench: no questions for %s", sample.reason)
    graphs = pd.DataFrame([graph_row(s) for s in samples], columns=list(GRAPH_COLUMNS))
    graphs = graphs.astype({"n_questions": "int64"})
    rows = [row for s in samples if s.status == "ok" for row in qa_rows(s.sample_id, s.questions)]
    qa = pd.DataFrame(rows, columns=list(QA_COLUMNS)).astype({"level": "int64"})
    return graphs, qa
