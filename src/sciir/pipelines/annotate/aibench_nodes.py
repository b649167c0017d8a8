"""AIBench on the annotate side: each annotated figure's logic graph, from its article's method text, and
four levels of questions written from the graph, both asked of the annotator
(``sciir.annotation.aibench_graphs``).

A sample gets a graph when its annotation is ``ok`` and its article has method text; every other sample is
kept in ``aibench_graphs`` as ``skipped`` with the reason, and a sample whose graph or questions answer
is unusable as ``failed`` with the reason, so none disappears silently.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from kedro.pipeline import Pipeline, node

from sciir.aibench.params import AIBenchParams
from sciir.annotation.aibench_graphs import graphs_and_questions, qa_metrics
from sciir.backends.base import VisionLanguageModel


def build_aibench_qa(
    annotations: pd.DataFrame, curated: pd.DataFrame, annotator: VisionLanguageModel, params: dict[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """``aibench_graphs``, ``aibench_qa`` and their metrics: graphs from the method texts, then questions."""
    settings = AIBenchParams.model_validate(params).questions
    graphs, qa = graphs_and_questions(annotations, curated, annotator, settings)
    return graphs, qa, qa_metrics(graphs, qa)


def create_aibench_pipeline(**kwargs: Any) -> Pipeline:
    """Annotate-side AIBench (inputs: annotations, curated, annotator, params:aibench; outputs:
    aibench_graphs, aibench_qa, aibench_qa_metrics)."""
    return Pipeline(
        [
            node(
                build_aibench_qa,
                ["annotations", "curated", "annotator", "params:aibench"],
                ["aibench_graphs", "aibench_qa", "aibench_qa_metrics"],
                name="build_aibench_qa",
            )
        ]
    )
