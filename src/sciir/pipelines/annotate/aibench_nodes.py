"""AIBench on the annotate side: each annotated sample's logic graph and its four levels of questions.

A sample gets a graph when its annotation is ``ok`` and names terms or relations; any other sample
is kept in ``aibench_graphs`` as ``skipped`` with the reason, so none disappears silently.
Distractors for level 1 are drawn from the components of all the other graphs.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import pandas as pd
from kedro.pipeline import Pipeline, node

from sciir.aibench.graph import GRAPH_COLUMNS, LogicGraph, build_logic_graph
from sciir.aibench.params import AIBenchParams
from sciir.aibench.questions import LEVELS, QA_COLUMNS, aibench_questions, choose_distractors, qa_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SampleGraph:
    """One sample's logic graph and the texts its distractors must not appear in."""

    sample_id: str
    graph: LogicGraph
    own_texts: tuple[str, ...]


def _json_list(value: Any) -> list[Any]:
    return json.loads(value) if isinstance(value, str) and value else []


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def skip_reason(row: pd.Series) -> str | None:
    """Why a sample gets no logic graph (None when it gets one)."""
    if row["status"] != "ok":
        return f"sample {row['sample_id']}: annotation {row['status']} ({row['reason']})"
    if not _json_list(row["terms"]) and not _json_list(row["relations"]):
        return f"sample {row['sample_id']}: the annotation names no terms and no relations"
    return None


def sample_graph(row: pd.Series) -> SampleGraph:
    graph = build_logic_graph(_json_list(row["terms"]), _json_list(row["relations"]))
    texts = (*_json_list(row["required_text"]), _text(row["sci_rcot"]), _text(row["abstract_prompt"]))
    return SampleGraph(str(row["sample_id"]), graph, texts)


def graph_row(
    sample_id: str, graph: LogicGraph | None, n_questions: int, reason: str | None
) -> dict[str, Any]:
    """One ``aibench_graphs`` row; a skipped sample has null graph columns and its reason."""
    return {
        "sample_id": sample_id,
        "nodes": json.dumps(list(graph.nodes), ensure_ascii=False) if graph else None,
        "edges": json.dumps([list(edge) for edge in graph.edges], ensure_ascii=False) if graph else None,
        "phases": json.dumps([list(phase) for phase in graph.phases], ensure_ascii=False) if graph else None,
        "n_questions": n_questions,
        "status": "skipped" if graph is None else "ok",
        "reason": reason,
    }


def qa_metrics(graphs: pd.DataFrame, qa: pd.DataFrame) -> dict[str, float]:
    """Graph and question counts, questions per level, and the share whose gold answer is yes."""
    metrics = {
        "samples": float(len(graphs)),
        "graphs": float((graphs["status"] == "ok").sum()),
        "skipped": float((graphs["status"] == "skipped").sum()),
        "questions": float(len(qa)),
        "gold_yes_share": float((qa["gold_answer"] == "yes").mean()) if len(qa) else 0.0,
    }
    metrics |= {f"questions_level{level}": float((qa["level"] == level).sum()) for level in LEVELS}
    return metrics


def build_aibench_qa(
    annotations: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """``aibench_graphs``, ``aibench_qa`` and their metrics from the annotations."""
    settings = AIBenchParams.model_validate(params).questions
    reasons = {str(row["sample_id"]): skip_reason(row) for _, row in annotations.iterrows()}
    samples = [
        sample_graph(row) for _, row in annotations.iterrows() if reasons[str(row["sample_id"])] is None
    ]
    pool = sorted({name for sample in samples for name in sample.graph.nodes})
    questions: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        distractors = choose_distractors(sample.sample_id, sample.graph, sample.own_texts, pool, settings)
        questions[sample.sample_id] = qa_rows(
            sample.sample_id, aibench_questions(sample.sample_id, sample.graph, distractors, settings)
        )
    graphs_by_id = {sample.sample_id: sample.graph for sample in samples}
    graph_rows = [
        graph_row(sample_id, graphs_by_id.get(sample_id), len(questions.get(sample_id, [])), reason)
        for sample_id, reason in reasons.items()
    ]
    for reason in filter(None, reasons.values()):
        logger.info("aibench: no logic graph for %s", reason)
    graphs = pd.DataFrame(graph_rows, columns=list(GRAPH_COLUMNS)).astype({"n_questions": "int64"})
    qa = pd.DataFrame([row for rows in questions.values() for row in rows], columns=list(QA_COLUMNS))
    qa = qa.astype({"level": "int64"})
    return graphs, qa, qa_metrics(graphs, qa)


def create_aibench_pipeline(**kwargs: Any) -> Pipeline:
    """Annotate-side AIBench (inputs: annotations, params:aibench; outputs: aibench_graphs, aibench_qa,
    aibench_qa_metrics)."""
    return Pipeline(
        [
            node(
                build_aibench_qa,
                ["annotations", "params:aibench"],
                ["aibench_graphs", "aibench_qa", "aibench_qa_metrics"],
                name="build_aibench_qa",
            )
        ]
    )
