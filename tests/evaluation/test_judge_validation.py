"""Judge validation on a hand-made faulty drawing: which claims are violated, and exact rates."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from sciir.backends.plan_reference import PlanReferenceRenderer
from sciir.backends.programmatic import ProgrammaticGenerator
from sciir.evaluation.judge_validation import (
    VALIDATION_COLUMNS,
    ImageTruth,
    claim_violated,
    image_truth,
    question_truth,
    validation_metrics,
    validation_table,
    written,
)
from sciir.pipelines.generate.nodes import generate_images

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

# (question id, layer, track, kind, polarity, about); the question text is never read for the truth
QUESTIONS = [
    ("t1", 1, "text", "text", "positive", ["Coagulation"]),
    ("t2", 1, "text", "text", "positive", ["Disinfection"]),
    ("t3", 1, "text", "text", "positive", ["Filtration"]),
    ("t4", 1, "text", "text", "positive", ["Legend"]),
    ("e1", 2, "entity", "entity", "positive", ["Disinfection"]),
    ("e2", 2, "entity", "entity", "positive", ["Filtration"]),
    ("p1", 2, "process", "relation", "positive", ["Coagulation", "Sedimentation"]),
    ("p2", 2, "process", "relation", "negative", ["Sedimentation", "Coagulation"]),
    ("p3", 2, "process", "relation", "positive", ["Filtration", "Disinfection"]),
    ("l1", 2, "law", "law", "positive", ["Mass conservation"]),
]
# The judge's answers per model, in QUESTIONS order ("-" abstained, "!" failed request).
ANSWERS = {
    "correct": ["yes", "yes", "no", "yes", "yes", "-", "yes", "yes", "yes", "no"],
    "faulty": ["yes", "no", "no", "no", "yes", "-", "no", "yes", "!", "-"],
    "diffusers": ["no"] * 10,  # its manifest records nothing drawn: no truth, not counted
}

CHECKLISTS = pd.DataFrame(
    [
        (qid, layer, track, kind, polarity, json.dumps(about), "q", about[0] if kind == "text" else None)
        for qid, layer, track, kind, polarity, about in QUESTIONS
    ],
    columns=["question_id", "layer", "track", "kind", "polarity", "about", "question", "expected_text"],
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
        for (qid, layer, track, *_), answer in zip(QUESTIONS, answers, strict=True):
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
    assert claim_violated("entity", "positive", ["Pump"], truth) is None
    assert claim_violated("relation", "positive", ["Pump", "Filtration"], truth) is None
    assert claim_violated("relation", "positive", [], truth) is None
    assert claim_violated("layout", "positive", ["Filtration"], truth) is None  # a kind no record speaks to
    assert claim_violated("relation", "positive", ["Sedimentation", "Filtration"], truth) is False


def test_truth_comes_from_the_structured_fields_never_from_the_question_text():
    # The same wording with the fields swapped: the fields decide.
    checklists = CHECKLISTS.assign(question='Is there no arrow from "Coagulation" to "Sedimentation"?')
    truth = question_truth(verdicts(), checklists, BENCHMARK, MANIFEST)
    rows = truth[truth.model == "faulty"]
    faulty = dict(zip(rows.question_id, rows.violated, strict=True))
    assert faulty["p1"] is True and faulty["p2"] is True
    # A checklist made elsewhere, without the fields, has no known truth.
    bare = CHECKLISTS.drop(columns=["kind", "polarity", "about"])
    assert question_truth(verdicts(), bare, BENCHMARK, MANIFEST)["violated"].isna().all()


def test_negative_entity_and_law_claims_follow_what_was_drawn():
    doubled = image_truth(PLAN, {**CORRECT_META, "drawn_labels": [*PLAN["labels"], "Filtration"]})
    assert claim_violated("entity", "negative", ["Filtration"], doubled) is True
    assert claim_violated("entity", "negative", ["Coagulation"], doubled) is False
    ohm = {"labels": ["V = I R", "Resistor"], "edges": []}
    written = image_truth(ohm, {"drawn_labels": ["V = I R", "Resistor"], "drawn_edges": []})
    contradicted = image_truth(ohm, {"drawn_labels": ["V = I / R", "Resistor"], "drawn_edges": []})
    assert claim_violated("law", "positive", ["V = I R"], written) is False
    assert claim_violated("law", "negative", ["V = I R"], written) is False
    assert claim_violated("law", "positive", ["V = I R"], contradicted) is True
    assert claim_violated("law", "negative", ["V = I R"], contradicted) is True


def test_validation_rates_per_question_kind_and_polarity():
    table = validation_table(question_truth(verdicts(), CHECKLISTS, BENCHMARK, MANIFEST), "scripted")
    assert list(table.columns) == list(VALIDATION_COLUMNS)
    by_polarity = table.set_index(["question_kind", "polarity"])
    assert len(by_polarity) == 13 and set(table.judge) == {"scripted"}
    negative = by_polarity.loc[("relation", "negative")]
    assert (negative.n_questions, negative.n_faulty, negative.n_detected, negative.n_false_alarms) == (
        2,
        1,
        0,
        0,
    )
    positive = by_polarity.loc[("relation", "positive")]
    assert (positive.n_faulty, positive.n_faulty_judged, positive.n_detected) == (2, 1, 1)
    rows = table[table.polarity == "all"].set_index("question_kind")
    assert list(rows.index) == ["text", "entity", "relation", "law", "all"]
    text = rows.loc["text"]
    assert (text.n_questions, text.n_without_truth, text.n_faulty, text.n_detected) == (6, 2, 2, 2)
    assert text.detection_rate == 1.0 and text.false_alarm_rate == 0.25 and text.abstention_rate == 0.0
    entity = rows.loc["entity"]
    assert (
        math.isnan(entity.detection_rate) and entity.false_alarm_rate == 0.0 and entity.abstention_rate == 0.5
    )
    process = rows.loc["relation"]
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
    # 14 judged: 3 faults said "no", 1 missed, 2 false alarms, 8 correct said "yes". Precision of "no"
    # 3/5; Cohen's kappa (11/14 observed against (4*5 + 10*9)/14^2 by chance) = 44/86.
    assert overall.no_precision == pytest.approx(3 / 5)
    assert overall.cohen_kappa == pytest.approx(44 / 86)
    assert math.isnan(entity.no_precision) and math.isnan(entity.cohen_kappa)  # nothing said "no"


def test_validation_metrics_names():
    table = validation_table(question_truth(verdicts(), CHECKLISTS, BENCHMARK, MANIFEST), "scripted")
    metrics = validation_metrics(table)
    assert metrics["judge_validation.all.detection_rate"] == 0.75
    assert metrics["judge_validation.text.false_alarm_rate"] == 0.25
    assert metrics["judge_validation.all.cohen_kappa"] == pytest.approx(44 / 86)
    assert metrics["judge_validation.relation.n_faulty"] == 3.0
    assert metrics["judge_validation.relation.negative.n_faulty"] == 1.0


def test_a_drawing_without_faults_that_misses_part_of_the_plan_is_known_to_hold_no_law():
    # The prompt-only programmatic baseline on an abstract prompt: every label, no arrow.
    no_arrows = image_truth(PLAN, {"drawn_labels": PLAN["labels"], "drawn_edges": [], "planted_faults": []})
    law = ["Mass conservation"]
    assert claim_violated("law", "positive", law, no_arrows) is None
    assert claim_violated("text", "positive", ["Filtration"], no_arrows) is False
    assert claim_violated("relation", "positive", ["Coagulation", "Sedimentation"], no_arrows) is True
    extra = image_truth(PLAN, {**CORRECT_META, "drawn_labels": [*PLAN["labels"], "Pump"]})
    assert claim_violated("law", "positive", law, extra) is None
    exact = image_truth(PLAN, CORRECT_META)
    assert claim_violated("law", "positive", law, exact) is False


def test_truth_is_found_on_real_reference_and_contestant_drawings():
    """The generate node's own manifest: the reference renderer holds every claim, its faulty variant
    violates exactly what it planted, and the prompt-only baseline on an abstract prompt misses arrows."""
    benchmark = BENCHMARK.assign(
        prompt=['A water treatment flow showing "' + '", "'.join(PLAN["labels"]) + '".']
    )
    generators = {
        "reference_renderer": PlanReferenceRenderer(),
        "reference_renderer_faulty": PlanReferenceRenderer(faults={"misspell_labels": 1, "drop_nodes": 1}),
        "programmatic": ProgrammaticGenerator(),
    }
    _, _plans, manifest, _, _ = generate_images(benchmark, {}, generators, {"width": 256, "height": 256})
    assert dict(zip(manifest["model"], manifest["role"], strict=True)) == {
        "reference_renderer": "reference",
        "reference_renderer_faulty": "reference",
        "programmatic": "contestant",
    }
    answers = pd.concat(
        [verdicts()[verdicts().model == "correct"].assign(model=model, verdict="yes") for model in generators]
    )
    truth = question_truth(answers, CHECKLISTS, benchmark, manifest)
    violated = {
        model: dict(zip(rows.question_id, rows.violated, strict=True))
        for model, rows in truth.groupby("model")
    }
    assert set(violated["reference_renderer"].values()) == {False, None}
    assert violated["reference_renderer"]["l1"] is False

    faulty_meta = json.loads(manifest.set_index("model").loc["reference_renderer_faulty", "meta"])
    planted = {fault["label"] for fault in faulty_meta["planted_faults"]}
    texts = {
        qid: about[0]
        for qid, _, _, kind, _, about in QUESTIONS
        if kind == "text" and about[0] in PLAN["labels"]
    }
    assert {qid for qid in texts if violated["reference_renderer_faulty"][qid]} == {
        qid for qid, label in texts.items() if label in planted
    }
    assert violated["reference_renderer_faulty"]["l1"] is None

    contestant = violated["programmatic"]
    assert [contestant[q] for q in ("t1", "t2", "t3", "e1", "e2")] == [False] * 5  # every label quoted
    assert contestant["p1"] is True and contestant["p3"] is True and contestant["p2"] is False  # no arrows
    assert contestant["l1"] is None


# The default run's faulty drawings of three circuit and chemistry samples (generation manifest meta).
RC_LADDER = {
    "labels": ["RC ladder", "Rl", "C1", "R2", "Vin", "C2", "Time constants taul = R1 C1, tau2 = R2 C2"]
}
SERIES = {"labels": ["Series resistors", "Rl", "R2", "Vs", "R3", "Total resistance R = R1 + R2 + R3"]}
GLUCOSE = {"labels": ["Glucose phosphorylation", "OH", "HO", "p=", "HOw.", "Glucose", "Glucose 6-phosphate"]}


def _dropped(plan: dict, label: str, misspelt: tuple[str, str]) -> ImageTruth:
    """The plan drawn without ``label``'s node and with one label misspelt, as the faulty renderer records it."""
    drawn = [misspelt[1] if text == misspelt[0] else text for text in plan["labels"] if text != label]
    faults = [
        {"kind": "misspell", "label": misspelt[0], "drawn": misspelt[1]},
        {"kind": "drop_node", "label": label},
    ]
    truth = image_truth(plan, {"drawn_labels": drawn, "drawn_edges": [], "planted_faults": faults})
    assert truth is not None
    return truth


def test_a_dropped_nodes_text_question_holds_where_its_label_is_written_inside_another_label():
    ladder = _dropped(RC_LADDER, "C1", (RC_LADDER["labels"][-1], "Time constatns taul = R1 C1, tau2 = R2 C2"))
    series = _dropped(SERIES, "Rl", (SERIES["labels"][-1], "Total resistacne R = R1 + R2 + R3"))
    glucose = _dropped(GLUCOSE, "OH", ("Glucose 6-phosphate", "Glucose 6-pohsphate"))
    assert claim_violated("text", "positive", ["C1"], ladder) is False
    # "R1" is written: the judge's reading takes l and 1 alike, as OCR does.
    assert claim_violated("text", "positive", ["Rl"], series) is False
    # "HO", "HOw." and "pohsphate" are drawn: "OH" is in none of them as a word, with its case.
    assert claim_violated("text", "positive", ["OH"], glucose) is True
    assert claim_violated("text", "positive", ["Glucose 6-phosphate"], glucose) is True  # misspelt: a fault
    # None of the three nodes is drawn: their entity questions are the ones the faults violate.
    for label, truth in (("C1", ladder), ("Rl", series), ("OH", glucose)):
        assert claim_violated("entity", "positive", [label], truth) is True


def test_dropped_nodes_written_elsewhere_are_reported_under_their_entity_questions():
    """The judge reads "C1" in the law's label (yes) and finds no box holding it (no): the text question
    counts as a correct claim judged right, the entity question as a fault detected."""
    questions = [("t", 1, "text", "text", ["C1"]), ("e", 2, "entity", "entity", ["C1"])]
    checklists = pd.DataFrame(
        [
            (qid, layer, track, kind, "positive", json.dumps(about), "q", None)
            for qid, layer, track, kind, about in questions
        ],
        columns=["question_id", "layer", "track", "kind", "polarity", "about", "question", "expected_text"],
    ).assign(sample_id="s1")
    benchmark = pd.DataFrame({"sample_id": ["s1"], "plan": [json.dumps(RC_LADDER)]})
    drawn = [label for label in RC_LADDER["labels"] if label != "C1"]
    meta = {
        "drawn_labels": drawn,
        "drawn_edges": [],
        "planted_faults": [{"kind": "drop_node", "label": "C1"}],
    }
    manifest = pd.DataFrame(
        {"model": ["faulty"], "sample_id": ["s1"], "status": ["ok"], "meta": [json.dumps(meta)]}
    )
    verdicts = pd.DataFrame(
        [
            ("faulty", "s1", "t", 1, "text", "yes", "judged"),
            ("faulty", "s1", "e", 2, "entity", "no", "judged"),
        ],
        columns=["model", "sample_id", "question_id", "layer", "track", "verdict", "status"],
    )
    table = validation_table(question_truth(verdicts, checklists, benchmark, manifest), "scripted")
    rows = table[table.polarity == "all"].set_index("question_kind")
    assert (
        rows.loc["text", "n_faulty"],
        rows.loc["text", "n_correct"],
        rows.loc["text", "n_false_alarms"],
    ) == (0, 1, 0)
    assert (rows.loc["entity", "n_faulty"], rows.loc["entity", "n_detected"]) == (1, 1)


def test_the_truth_of_a_real_faulty_drawing_reads_its_drawn_labels():
    """The faulty renderer drops "C1" (seed 0) and records the labels it drew; "C1" is still written in the
    law's label, a group's title counts as written too."""
    plan = {
        "labels": ["RC ladder", "C1", "C2", "Time constants tau1 = R1 C1, tau2 = R2 C2"],
        "edges": [["C1", "C2"]],
        "groups": [["Stage 1", ["RC ladder", "C1"]], ["Stage 2", ["C2"]]],
    }
    benchmark = pd.DataFrame({"sample_id": ["s1"], "plan": [json.dumps(plan)], "prompt": ["An RC ladder."]})
    faulty = {"faulty": PlanReferenceRenderer(faults={"drop_nodes": 1, "seed": 0})}
    _, _plans, manifest, _, _ = generate_images(benchmark, {}, faulty, {"width": 256, "height": 256})
    meta = json.loads(manifest["meta"].iloc[0])
    assert meta["planted_faults"] == [{"kind": "drop_node", "label": "C1"}]
    truth = image_truth(plan, meta)
    assert claim_violated("text", "positive", ["C1"], truth) is False
    assert claim_violated("entity", "positive", ["C1"], truth) is True
    assert claim_violated("relation", "positive", ["C1", "C2"], truth) is True
    assert written("Stage 2", truth.drawn_texts) is True
