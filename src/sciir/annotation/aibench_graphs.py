"""AIBench on the annotate side: each annotated figure's logic graph, from its article's method text, and
four levels of questions written from the graph, both asked of the annotator (tasks ``aibench_graph`` and
``aibench_questions``, ``sciir.tasks.registry``); the graphs and questions are ``sciir.aibench``'s.

A sample gets a graph when its annotation is ``ok`` and its article has method text; every other sample is
kept in ``aibench_graphs`` as ``skipped`` with the reason, and a sample whose graph or questions answer
is unusable as ``failed`` with the reason, so none disappears silently.

Both tasks of every sample go through one stream over the whole stage (``sciir.runs.follow_ups``): a
sample's questions are sent as soon as its graph arrives. Level 1's distractors are names the annotator
read off other articles' figures (``sciir.aibench.distractors``), known before any graph is asked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from sciir.aibench.distractors import DistractorPool
from sciir.aibench.graph import GRAPH_COLUMNS, LogicGraph
from sciir.aibench.questions import LEVELS, QA_COLUMNS, Question, QuestionSettings, qa_rows
from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.runs.follow_ups import stream_with_follow_ups
from sciir.runs.progress import Progress
from sciir.tasks.aibench_graph import GraphTaskError, build_graph_request, parse_graph_reply
from sciir.tasks.aibench_questions import build_questions_request, parse_questions_reply

logger = logging.getLogger(__name__)


@dataclass
class SampleGraph:
    """One sample on its way: its texts, then its graph and questions, or why it has none."""

    sample_id: str
    article: str  # DOI, else URL, else the sample itself: distractors come from other articles
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


def _article(texts: pd.DataFrame, sample_id: str) -> str:
    """The sample's article: its DOI, else its URL, else (neither known) the sample itself."""
    for column in ("doi", "url"):
        if column in texts.columns and (value := _text(texts.at[sample_id, column])):
            return value
    return sample_id


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
            _article(texts, sample_id) if known else sample_id,
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


def distractor_pool(samples: Sequence[SampleGraph]) -> DistractorPool:
    """The terms of every sample whose annotation is usable, with their articles."""
    return DistractorPool.of(
        (term, sample.article) for sample in samples if sample.status == "ok" for term in sample.terms
    )


class _GraphStream:
    """AIBench's jobs ``(sample, task)`` for :func:`stream_with_follow_ups`: a sample's graph is asked, and
    its questions are sent as soon as its graph arrives (no wait for the other samples' graphs: the
    distractors come from the annotations, known before the stage)."""

    def __init__(self, samples: Sequence[SampleGraph], settings: QuestionSettings) -> None:
        self.samples, self.settings = samples, settings
        self.pool = distractor_pool(samples)
        self.asked = [sample for sample in samples if sample.status == "ok"]
        self.distractors: dict[str, list[str]] = {}  # of the samples whose questions are in flight
        self.progress = Progress("aibench", 2 * len(self.asked))

    def first_jobs(self) -> Iterator[tuple[SampleGraph, str]]:
        return ((sample, "graph") for sample in self.asked)

    def request(self, job: tuple[SampleGraph, str]) -> VLMRequest:
        sample, task = job
        if task == "graph":
            return build_graph_request(sample.methods_text, sample.caption, sample.terms)
        graph = cast(LogicGraph, sample.graph)  # a questions job is made for a sample with its graph only
        distractors = self.distractors[sample.sample_id]
        return build_questions_request(sample.sample_id, graph, distractors, self.settings)

    def answered(self, job: tuple[SampleGraph, str], result: VLMResult) -> list[tuple[SampleGraph, str]]:
        """Parse the answer; a sample whose graph is usable gets its questions job."""
        sample, task = job
        self.progress.add(result)
        if task == "questions":
            distractors = self.distractors.pop(sample.sample_id)
            graph = cast(LogicGraph, sample.graph)  # a questions job is made for a sample with its graph only
            _parsed(
                sample,
                lambda: setattr(sample, "questions", parse_questions_reply(result, graph, distractors)),
            )
            return []
        _parsed(sample, lambda: take_graph(sample, result))
        if sample.status != "ok" or sample.graph is None:
            self.progress.not_needed(1)
            return []
        self.distractors[sample.sample_id] = self.pool.choose(
            sample.sample_id, sample.article, sample.graph, sample.own_texts, self.settings
        )
        return [(sample, "questions")]


def _parsed(sample: SampleGraph, parse: Callable[[], None]) -> None:
    """``parse()``; an unusable answer fails the sample with the reason."""
    try:
        parse()
    except GraphTaskError as error:
        sample.fail("failed", f"sample {sample.sample_id}: {error}")


def take_graph(sample: SampleGraph, result: VLMResult) -> None:
    sample.graph = parse_graph_reply(result)
    if not sample.graph.nodes:
        sample.fail("skipped", f"sample {sample.sample_id}: the method text names no component of the figure")


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
    """``aibench_graphs`` and ``aibench_qa``: graphs from the method texts, each sample's questions as
    soon as its graph arrives; each sample without questions is logged with the reason."""
    samples = sample_graphs(annotations, curated)
    stream = _GraphStream(samples, settings)
    with stream.progress:
        stream_with_follow_ups(annotator, stream.first_jobs(), stream.request, stream.answered)
    for sample in samples:
        if sample.status != "ok":
            logger.info("aibench: no questions for %s", sample.reason)
    graphs = pd.DataFrame([graph_row(s) for s in samples], columns=list(GRAPH_COLUMNS))
    graphs = graphs.astype({"n_questions": "int64"})
    rows = [row for s in samples if s.status == "ok" for row in qa_rows(s.sample_id, s.questions)]
    qa = pd.DataFrame(rows, columns=list(QA_COLUMNS)).astype({"level": "int64"})
    return graphs, qa
