"""The AIBench references on the offline solver: a logic graph drawn exactly is answered at levels 1-2
(component existence by OCR, local topology by arrows), the same graph with planted faults scores lower,
and both are scored as references, never among the contestants."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sciir.aibench.graph import build_logic_graph
from sciir.aibench.level_accuracy import metrics_from_table, score_answers
from sciir.aibench.questions import QuestionSettings, aibench_questions, qa_rows
from sciir.aibench.reference_plan import NoGraphPlan, graph_plan, graph_plans
from sciir.backends.base import PlanRequest
from sciir.backends.offline import OfflineVLM
from sciir.backends.plan_reference import PlanReferenceRenderer
from sciir.tasks.aibench_qa import (
    answer_rows,
    answers_frame,
    build_solver_request,
    parse_solver_reply,
    solver_items,
)
from sciir.tasks.registry import rule_book

GRAPH = build_logic_graph(
    ["Tokenizer", "Encoder", "Decoder", "Classifier"],
    [("Tokenizer", "Encoder"), ("Encoder", "Decoder"), ("Decoder", "Classifier")],
    [["Tokenizer"], ["Encoder", "Decoder"], ["Classifier"]],
)
ROW = pd.Series(
    {
        "sample_id": "p1",
        "nodes": json.dumps(list(GRAPH.nodes)),
        "edges": json.dumps([list(edge) for edge in GRAPH.edges]),
        "phases": json.dumps([list(phase) for phase in GRAPH.phases]),
        "status": "ok",
        "reason": None,
    }
)
FAULTS = {"misspell_labels": 1, "reverse_edges": 1, "drop_nodes": 1, "seed": 0}


def test_the_plan_of_a_paper_is_its_logic_graph_with_phases_as_stages() -> None:
    assert graph_plan(ROW) == {
        "labels": ["Tokenizer", "Encoder", "Decoder", "Classifier"],
        "edges": [["Tokenizer", "Encoder"], ["Encoder", "Decoder"], ["Decoder", "Classifier"]],
        "groups": [
            ["Stage 1", ["Tokenizer"]],
            ["Stage 2", ["Encoder", "Decoder"]],
            ["Stage 3", ["Classifier"]],
        ],
    }
    failed = ROW.copy()
    failed[["status", "reason"]] = ["failed", "reply broke its schema"]
    with pytest.raises(NoGraphPlan, match=r"sample p1 has no logic graph \(failed: reply broke its schema\)"):
        graph_plan(failed)
    garbled = ROW.copy()
    garbled["edges"] = "{not json"
    with pytest.raises(NoGraphPlan, match="aibench_graphs edges of sample p1 is not JSON"):
        graph_plan(garbled)
    plans, reasons = graph_plans(pd.DataFrame([ROW]), ["p1", "p2"])
    assert set(plans) == {"p1"} and reasons == {"p2": "aibench_graphs has no row for AIBench sample p2"}


@pytest.fixture(scope="module")
def scores() -> pd.DataFrame:
    """The exact and the faulty reference drawing the graph, examined by the offline solver."""
    qa = pd.DataFrame(
        qa_rows("p1", aibench_questions("p1", GRAPH, ["Retriever", "Vocoder"], QuestionSettings()))
    )
    request = build_solver_request(solver_items(qa))
    solver, rows = OfflineVLM(rule_book("offline")), []
    for model, faults in {"exact": None, "faulty": FAULTS}.items():
        drawing = PlanRequest(sample_id="p1", prompt="p", width=512, height=512, plan=graph_plan(ROW))
        [image] = PlanReferenceRenderer(faults=faults).generate([drawing])
        [reply] = solver.generate([request.model_copy(update={"images": [image.image]})])
        outcomes, _ = parse_solver_reply(reply, list(qa["question_id"]), f"{model}/p1")
        rows += answer_rows(model, "p1", qa, outcomes)
    roles = {"exact": "reference", "faulty": "reference"}
    return score_answers(answers_frame(rows), roles).set_index("model")


@pytest.mark.slow
def test_the_exact_reference_is_answered_right_at_levels_1_and_2(scores: pd.DataFrame) -> None:
    exact = scores.loc["exact"]
    assert exact["level1"] == 1.0 and exact["level2"] == 1.0
    assert exact["coverage_level2"] == 1.0  # every arrow read, in its direction
    assert exact["coverage_level1"] > 0.5  # each component found; a distractor's absence may stay in doubt
    assert exact["coverage_level3"] == 0.0 and exact["coverage_level4"] == 0.0  # no rule reads those


def test_the_faulty_reference_scores_lower(scores: pd.DataFrame) -> None:
    exact, faulty = scores.loc["exact"], scores.loc["faulty"]
    # the dropped component is answered "no" against the gold "yes"; misspelt ends leave arrows in doubt
    assert faulty["level1"] < exact["level1"]
    assert faulty["coverage_level2"] < exact["coverage_level2"]
    assert faulty["overall"] < exact["overall"]


def test_references_are_marked_and_listed_after_contestants() -> None:
    answers = answers_frame(
        [
            {"model": name, "sample_id": "p1", "question_id": "q", "level": 1, "gold_answer": "yes",
             "answer": "yes", "correct": True, "status": "answered", "evidence": None, "reason": None}
            for name in ("a_reference", "b_contestant", "c_unlisted")
        ]
    )  # fmt: skip
    table = score_answers(answers, {"a_reference": "reference", "b_contestant": "contestant"})
    assert list(zip(table["model"], table["role"], strict=True)) == [
        ("b_contestant", "contestant"),
        ("c_unlisted", "contestant"),
        ("a_reference", "reference"),
    ]
    metrics = metrics_from_table(table, lambda model, column: f"{model}.{column}")
    assert "a_reference.role" not in metrics and metrics["a_reference.level1"] == 1.0
