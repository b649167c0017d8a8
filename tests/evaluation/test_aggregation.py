"""Aggregation rules on hand-made verdict tables: exact TIFA, question-mean, DSG and veto scores."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sciir.evaluation.aggregation import (
    aggregate_by_model,
    dependency_correctness,
    dsg_score,
    parse_parent_ids,
    prompt_scores,
    question_correctness,
    question_mean_score,
    tifa_score,
    veto_score,
)

# One system, four prompts:
#   p1: yes, yes, no            -> mean 2/3
#   p2: yes                     -> mean 1
#   p3: no, abstained           -> mean 0 (exclude: 0/1; fail: 0/2)
#   p4: failed                  -> no score (exclude) / 0 (fail)
PROMPTS = pd.DataFrame(
    [
        ("p1", "q1", "yes", "judged"),
        ("p1", "q2", "yes", "judged"),
        ("p1", "q3", "no", "judged"),
        ("p2", "q1", "yes", "judged"),
        ("p3", "q1", "no", "judged"),
        ("p3", "q2", None, "abstained"),
        ("p4", "q1", None, "failed"),
    ],
    columns=["sample_id", "question_id", "verdict", "status"],
)


def chain(rows: list[tuple]) -> pd.DataFrame:
    """A one-prompt table (question, verdict, parent ids) for dependency tests."""
    frame = pd.DataFrame(rows, columns=["question_id", "verdict", "parent_ids"])
    return frame.assign(sample_id="d")


def test_tifa_is_the_mean_of_per_prompt_means():
    assert tifa_score(PROMPTS) == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert tifa_score(PROMPTS, policy="fail") == pytest.approx((2 / 3 + 1 + 0 + 0) / 4)


def test_question_mean_pools_all_counted_questions():
    assert question_mean_score(PROMPTS) == pytest.approx(3 / 5)
    assert question_mean_score(PROMPTS, policy="fail") == pytest.approx(3 / 7)


def test_veto_passes_a_prompt_only_when_every_counted_question_is_yes():
    assert veto_score(PROMPTS) == pytest.approx(1 / 3)
    assert veto_score(PROMPTS, policy="fail") == pytest.approx(1 / 4)


def test_unjudged_is_nan_or_a_fail_never_a_yes():
    exclude = question_correctness(PROMPTS).tolist()
    assert exclude[:5] == [1.0, 1.0, 0.0, 1.0, 0.0] and math.isnan(exclude[5]) and math.isnan(exclude[6])
    assert question_correctness(PROMPTS, "fail").tolist() == [1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]


def test_a_table_without_status_judges_by_the_verdict_alone():
    table = PROMPTS.drop(columns=["status"])
    assert tifa_score(table) == pytest.approx(tifa_score(PROMPTS))


def test_prompt_without_counted_questions_has_no_score_and_no_weight():
    scores = prompt_scores(PROMPTS, "question_mean").set_index("sample_id")
    assert scores.loc["p1", ["n_questions", "n_counted", "n_correct", "weight"]].tolist() == [3, 3, 2.0, 3.0]
    assert math.isnan(scores.loc["p4", "score"]) and scores.loc["p4", "weight"] == 0.0


def test_dsg_failed_parent_fails_its_direct_children_only():
    # q1 fails; q2 depends on q1 and q3 on q2 (a chain), q4 stands alone. As DSG's reference code, q3
    # reads its own parent's answer (q2: yes), so the grandparent's "no" does not reach it.
    table = chain([("q1", "no", "[]"), ("q2", "yes", '["q1"]'), ("q3", "yes", '["q2"]'), ("q4", "yes", "[]")])
    assert dependency_correctness(table).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert tifa_score(table) == pytest.approx(3 / 4)
    assert dsg_score(table) == pytest.approx(2 / 4)


def test_dsg_a_child_with_two_parents_fails_when_either_was_answered_no():
    table = chain([("a", "yes", "[]"), ("b", "no", "[]"), ("c", "yes", '["a", "b"]'), ("d", "yes", '["a"]')])
    assert dependency_correctness(table).tolist() == [1.0, 0.0, 0.0, 1.0]
    assert dsg_score(table) == pytest.approx(2 / 4)


def test_dsg_unjudged_parent_fails_nothing_unless_counted_as_failed():
    table = chain([("q1", None, "[]"), ("q2", "yes", '["q1"]'), ("q3", "yes", '["q2"]'), ("q4", "yes", "[]")])
    assert dsg_score(table) == pytest.approx(1.0)
    # under fail q1 counts as a "no": its child q2 fails, the grandchild q3 does not
    assert dependency_correctness(table, policy="fail").tolist() == [0.0, 0.0, 1.0, 1.0]
    assert dsg_score(table, policy="fail") == pytest.approx(2 / 4)


def test_dsg_counts_an_unjudged_child_of_a_failed_parent_as_failed():
    table = chain([("q1", "no", "[]"), ("q2", None, ["q1"]), ("q3", "yes", [])])
    assert tifa_score(table) == pytest.approx(1 / 2)
    assert dsg_score(table) == pytest.approx(1 / 3)


def test_dsg_survives_unknown_parents_and_cycles():
    table = chain([("q1", "no", '["q2"]'), ("q2", "yes", '["q1"]'), ("q3", "yes", '["missing"]')])
    assert dependency_correctness(table).tolist() == [0.0, 0.0, 1.0]


def test_dsg_needs_parent_ids():
    with pytest.raises(ValueError, match="parent_ids"):
        dsg_score(PROMPTS)


def test_parse_parent_ids_accepts_lists_json_and_missing():
    assert parse_parent_ids('["a", "b"]') == ["a", "b"]
    assert parse_parent_ids(["a"]) == ["a"]
    assert (
        parse_parent_ids(None) == [] and parse_parent_ids("") == [] and parse_parent_ids(float("nan")) == []
    )
    with pytest.raises(ValueError, match="list of question ids"):
        parse_parent_ids('{"a": 1}')


def test_scores_per_model_and_a_mixed_table_is_refused():
    table = pd.concat(
        [PROMPTS.assign(model="m1"), PROMPTS.assign(model="m2", verdict="yes", status="judged")]
    )
    scores = aggregate_by_model(table, "tifa").set_index("model")
    assert scores.loc["m1", "score"] == pytest.approx(5 / 9) and scores.loc["m1", "n_scored"] == 3
    assert scores.loc["m2", "score"] == 1.0 and scores.loc["m2", "n_scored"] == 4
    with pytest.raises(ValueError, match="several models"):
        tifa_score(table)
