"""Judge validation on a hand-made faulty drawing: which claims are violated, and exact rates."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from sciir.judge_validation import (
    VALIDATION_COLUMNS,
    claim_violated,
    image_truth,
    question_truth,
    validation_metrics,
    validation_table,
)

PLAN = {
    "labels": ["Coagulation", "Sedimentation", "Filtration", "Disinfection"],
    "edges": [
        ["Coagulation", "Sedimentation"],
        ["Sedimentation", "Filtration"],
        ["Filtration", "Disinfection"],
    ],
}
FAULTY_META = {
    "drawn_labels": ["Coagulation", "Sedimentation", "Disinfectin"],
    "drawn_edges": [["Sedimentation", "Coagulation"]],
    "planted_faults": [
        {"kind": "misspell", "label": "Disinfection", "drawn": "Disinfectin"},
        {"kind": "reverse_edge", "edge": ["Coagulation", "Sedimentation"]},
        {"kind": "drop_node", "label": "Filtration"},
    ],
}
CORRECT_META = {"drawn_labels": PLAN["labels"], "drawn_edges": PLAN["edges"], "planted_faults": []}

# (question id, layer, track, question, expected text)
QUESTIONS = [
    ("t1", 1, "text", 'Is the text "Coagulation" rendered exactly?', "Coagulation"),
    ("t2", 1, "text", 'Is the text "Disinfection" rendered exactly?', "Disinfection"),
    ("t3", 1, "text", 'Is the text "Filtration" rendered exactly?', "Filtration"),
    ("t4", 1, "text", 'Is the text "Legend" rendered exactly?', "Legend"),
    ("e1", 2, "entity", 'Is "Disinfection" drawn as a distinct, identifiable component?', None),
    ("e2", 2, "entity", 'Is "Filtration" drawn as a distinct, identifiable component?', None),
    ("p1", 2, "process", 'Is there an arrow from "Coagulation" to "Sedimentation"?', None),
    (
        "p2",
        2,
        "process",
        'Is there no arrow from "Sedimentation" to "Coagulation" (the flow is not reversed)?',
        None,
    ),
    ("p3", 2, "process", 'Is there an arrow from "Filtration" to "Disinfection"?', None),
    (
        "l1",
        2,
        "law",
        'Does the figure obey "Mass conservation", with nothing drawn that contradicts it?',
        None,
    ),
]
# The judge's answers per model, in QUESTIONS order ("-" abstained, "!" failed request).
ANSWERS = {
    "correct": ["yes", "yes", "no", "yes", "yes", "-", "yes", "yes", "yes", "no"],
    "faulty": ["yes", "no", "no", "no", "yes", "-", "no", "yes", "!", "-"],
    "diffusers": ["no"] * 10,  # its manifest records nothing drawn: no truth, not counted
}

CHECKLISTS = pd.DataFrame(
    QUESTIONS, columns=["question_id", "layer", "track", "question", "expected_text"]
).assign(sample_id="s1")
BENCHMARK = pd.DataFrame({"sample_id": ["s1"], "plan": [json.dumps(PLAN)]})
MANIFEST = pd.DataFrame(
    {
        "model": ["correct", "faulty", "diffusers"],
        "sample_id": ["s1"] * 3,
        "status": ["ok"] * 3,
        "meta": [json.dumps(CORRECT_META), json.dumps(FAULTY_META), "{}"],
    }
)


def verdicts() -> pd.DataFrame:
    rows = []
    for model, answers in ANSWERS.items():
        for (qid, layer, track, _, _), answer in zip(QUESTIONS, answers, strict=True):
            status = {"-": "abstained", "!": "failed"}.get(answer, "judged")
            verdict = answer if status == "judged" else None
            rows.append((model, "s1", qid, layer, track, verdict, status))
    return pd.DataFrame(
        rows, columns=["model", "sample_id", "question_id", "layer", "track", "verdict", "status"]
    )


def truth_of(model: str) -> dict:
    truth = question_truth(verdicts(), CHECKLISTS, BENCHMARK, MANIFEST)
    rows = truth[truth.model == model]
    return dict(zip(rows.question_id, rows.violated, strict=True))


def test_truth_of_a_correct_drawing_holds_everywhere_it_is_known():
    assert truth_of("correct") == {
        "t1": False, "t2": False, "t3": False, "t4": None, "e1": False, "e2": False,
        "p1": False, "p2": False, "p3": False, "l1": False,
    }  # fmt: skip


def test_truth_of_the_faulty_drawing_follows_the_planted_faults():
    assert truth_of("faulty") == {
        "t1": False, "t2": True, "t3": True, "t4": None,  # misspelled and dropped texts
        "e1": False, "e2": True,  # a misspelled node is still drawn; a dropped one is not
        "p1": True, "p2": True, "p3": True,  # reversed edge (both checks), dropped endpoint
        "l1": None,  # a faulty drawing may or may not contradict a law
    }  # fmt: skip


def test_images_without_drawn_labels_take_no_part():
    assert truth_of("diffusers") == {}
    assert image_truth(PLAN, {"backend": "diffusers"}) is None


def test_claims_about_names_outside_the_plan_are_unknown():
    truth = image_truth(PLAN, CORRECT_META)
    assert claim_violated("entity", 'Is "Pump" drawn?', None, truth) is None
    assert claim_violated("process", 'Is there an arrow from "Pump" to "Filtration"?', None, truth) is None
    assert claim_violated("process", "Does the flow go left to right?", None, truth) is None
    assert (
        claim_violated("process", 'Is there an arrow from "Sedimentation" to "Filtration"?', None, truth)
        is False
    )


def test_validation_rates_per_question_type():
    table = validation_table(question_truth(verdicts(), CHECKLISTS, BENCHMARK, MANIFEST), "scripted")
    assert list(table.columns) == list(VALIDATION_COLUMNS)
    rows = table.set_index("question_type")
    assert list(rows.index) == ["text", "entity", "process", "law", "all"] and set(rows.judge) == {"scripted"}
    text = rows.loc["text"]
    assert (text.n_questions, text.n_without_truth, text.n_faulty, text.n_detected) == (6, 2, 2, 2)
    assert text.detection_rate == 1.0 and text.false_alarm_rate == 0.25 and text.abstention_rate == 0.0
    entity = rows.loc["entity"]
    assert (
        math.isnan(entity.detection_rate) and entity.false_alarm_rate == 0.0 and entity.abstention_rate == 0.5
    )
    process = rows.loc["process"]
    assert (process.n_faulty, process.n_faulty_judged, process.n_detected) == (3, 2, 1)
    assert process.detection_rate == 0.5 and process.abstention_rate == pytest.approx(1 / 6)
    law = rows.loc["law"]
    assert (law.n_questions, law.n_without_truth, law.false_alarm_rate) == (1, 1, 1.0)
    overall = rows.loc["all"]
    assert (overall.n_questions, overall.n_faulty, overall.n_correct, overall.n_without_truth) == (
        17,
        6,
        11,
        3,
    )
    assert overall.detection_rate == 0.75 and overall.false_alarm_rate == 0.2
    assert overall.abstention_rate == pytest.approx(3 / 17)


def test_validation_metrics_names():
    table = validation_table(question_truth(verdicts(), CHECKLISTS, BENCHMARK, MANIFEST), "scripted")
    metrics = validation_metrics(table)
    assert metrics["judge_validation.all.detection_rate"] == 0.75
    assert metrics["judge_validation.text.false_alarm_rate"] == 0.25
    assert metrics["judge_validation.process.n_faulty"] == 3.0
