"""SciIR scoring on hand-made verdict tables: exact veto pass rates, rule scores, intervals and coverage."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sciir.bootstrap import BootstrapConfig
from sciir.scoring import (
    LEADERBOARD_COLUMNS,
    breakdown_table,
    category_pass,
    final_pass,
    image_metrics,
    leaderboard,
    model_metrics,
    score_samples,
    score_table,
)

BOOT = BootstrapConfig(n_boot=200, seed=0)

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["s1", "s2"],
        "group": ["All_Three", "Entity_Law"],
        "setting": ["instruction_following", "intrinsic_reasoning"],
    }
)

# (model, sample, question, layer, track, verdict, status)
ROWS = [
    # good/s1: text passes, entity vetoed by one "no", process passes on its one judged question,
    # law has only an abstention.
    ("good", "s1", "t1", 1, "text", "yes", "judged"),
    ("good", "s1", "t2", 1, "text", "yes", "judged"),
    ("good", "s1", "e1", 2, "entity", "yes", "judged"),
    ("good", "s1", "e2", 2, "entity", "no", "judged"),
    ("good", "s1", "p1", 2, "process", "yes", "judged"),
    ("good", "s1", "p2", 2, "process", None, "abstained"),
    ("good", "s1", "l1", 2, "law", None, "abstained"),
    # good/s2: text passes, entity's only question failed (request error).
    ("good", "s2", "t1", 1, "text", "yes", "judged"),
    ("good", "s2", "e1", 2, "entity", None, "failed"),
    # blind/*: no image, every question failed.
    ("blind", "s1", "t1", 1, "text", None, "failed"),
    ("blind", "s1", "e1", 2, "entity", None, "failed"),
    ("blind", "s2", "t1", 1, "text", None, "failed"),
]


def verdict_table(rows: list[tuple]) -> pd.DataFrame:
    columns = ["model", "sample_id", "question_id", "layer", "track", "verdict", "status"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(evidence=None, reasoning=None, reason=None)


def passed_of(scores: pd.DataFrame, model: str, sample: str, track: str):
    row = scores[(scores.model == model) & (scores.sample_id == sample) & (scores.track == track)]
    assert len(row) == 1
    value = row.passed.iloc[0]
    return None if value is pd.NA else bool(value)


@pytest.mark.parametrize(
    ("counts", "policy", "expected"),
    [
        ((3, 3, 3), "exclude", True),
        ((3, 3, 2), "exclude", False),
        ((3, 2, 2), "exclude", True),
        ((3, 0, 0), "exclude", None),
        ((3, 2, 2), "fail", False),
        ((3, 0, 0), "fail", False),
        ((2, 2, 2), "fail", True),
    ],
)
def test_category_pass_rule(counts, policy, expected):
    assert category_pass(*counts, policy=policy) is expected


def test_final_pass_leaves_out_unjudged_categories():
    assert final_pass([True, None, True]) is True
    assert final_pass([True, False, None]) is False
    assert final_pass([None, pd.NA]) is None


def test_score_samples_veto_and_exclusion():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "exclude")
    assert passed_of(scores, "good", "s1", "text") is True
    assert passed_of(scores, "good", "s1", "entity") is False
    assert passed_of(scores, "good", "s1", "process") is True
    assert passed_of(scores, "good", "s1", "law") is None
    assert passed_of(scores, "good", "s1", "final") is False
    assert passed_of(scores, "good", "s2", "entity") is None
    assert passed_of(scores, "good", "s2", "final") is True
    assert passed_of(scores, "blind", "s1", "final") is None
    final = scores[(scores.model == "good") & (scores.sample_id == "s1") & (scores.track == "final")].iloc[0]
    assert (final.n_questions, final.n_judged, final.n_yes) == (7, 5, 4)
    assert final.group == "All_Three" and final.setting == "instruction_following"


def test_policy_fail_counts_unjudged_as_failed():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "fail")
    assert passed_of(scores, "good", "s1", "process") is False
    assert passed_of(scores, "good", "s2", "final") is False
    assert passed_of(scores, "blind", "s2", "final") is False
    assert scores["passed"].notna().all()


def board_of(rows: list[tuple], policy: str = "exclude", rule: str = "sciir_veto"):
    scores = score_table(score_samples(verdict_table(rows), BENCHMARK, policy, rule), BOOT)
    return leaderboard(scores, rule)


def test_leaderboard_exact_rates_and_coverage():
    board = board_of(ROWS)
    assert list(board.columns) == list(LEADERBOARD_COLUMNS)
    assert list(board.model) == ["good", "blind"]  # NaN final sorts last
    good = board.iloc[0]
    assert good.final == 0.5 and good.text == 1.0 and good.entity == 0.0 and good.process == 1.0
    assert math.isnan(good.law) and math.isnan(good.law_lo)
    assert good.coverage == pytest.approx(6 / 9)
    assert good.n_samples == 2 and good.aggregation == "sciir_veto"
    blind = board.iloc[1]
    assert math.isnan(blind.final) and blind.coverage == 0.0 and blind.n_samples == 2


def test_leaderboard_intervals_bracket_the_score():
    board = board_of(ROWS).set_index("model")
    # good: s1 fails, s2 passes -> resamples give 0, 1/2 or 1.
    assert (board.loc["good", "final_lo"], board.loc["good", "final_hi"]) == (0.0, 1.0)
    assert (board.loc["good", "text_lo"], board.loc["good", "text_hi"]) == (1.0, 1.0)
    assert math.isnan(board.loc["blind", "final_lo"])


def test_leaderboard_under_policy_fail():
    board = board_of(ROWS, policy="fail").set_index("model")
    assert board.loc["good", "final"] == 0.0
    assert board.loc["blind", "final"] == 0.0
    assert board.loc["good", "coverage"] == pytest.approx(6 / 9)


def test_veto_score_is_the_veto_result():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "exclude")
    judged = scores[scores.passed.notna()]
    assert (judged.score == judged.passed.astype(float)).all() and (judged.weight == 1.0).all()
    assert scores[scores.passed.isna()].score.isna().all()


@pytest.mark.parametrize(
    ("rule", "final", "entity"),
    [
        # good/s1: 4 of 5 judged yes; good/s2: 1 of 1. Entity: s1 1 of 2, s2 nothing judged.
        ("tifa", (4 / 5 + 1) / 2, 1 / 2),
        ("question_mean", 5 / 6, 1 / 2),
        ("sciir_veto", 1 / 2, 0.0),
    ],
)
def test_rules_give_exact_scores(rule, final, entity):
    board = board_of(ROWS, rule=rule).set_index("model")
    assert board.loc["good", "final"] == pytest.approx(final)
    assert board.loc["good", "entity"] == pytest.approx(entity)
    assert board.loc["good", "aggregation"] == rule


def test_coverage_per_track_and_breakdowns():
    scores = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"), BOOT)
    coverage = breakdown_table(scores, "track", "coverage").set_index("model")
    assert list(coverage.columns) == ["final", "text", "entity", "process", "law"]
    assert coverage.loc["good", "text"] == 1.0
    assert coverage.loc["good", "entity"] == pytest.approx(2 / 3)
    assert coverage.loc["good", "process"] == 0.5
    assert coverage.loc["good", "law"] == 0.0
    by_group = breakdown_table(scores, "group").set_index("model")
    assert by_group.loc["good", "All_Three"] == 0.0 and by_group.loc["good", "Entity_Law"] == 1.0
    assert math.isnan(by_group.loc["blind", "All_Three"])
    by_setting = breakdown_table(scores, "setting").set_index("model")
    assert by_setting.loc["good", "intrinsic_reasoning"] == 1.0


def test_score_table_counts_scored_samples():
    scores = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"), BOOT)
    entity = scores[
        (scores.model == "good") & (scores.breakdown == "track") & (scores.value == "entity")
    ].iloc[0]
    assert (entity.n_samples, entity.n_scored, entity.n_questions, entity.n_judged) == (2, 1, 3, 2)


def test_model_metrics_names_and_values():
    scores = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"), BOOT)
    metrics = model_metrics(scores, "good")
    assert metrics["final"] == 0.5 and metrics["final.ci_low"] == 0.0 and metrics["final.ci_high"] == 1.0
    assert metrics["coverage"] == pytest.approx(6 / 9) and metrics["coverage.process"] == 0.5
    assert metrics["group.Entity_Law"] == 1.0 and metrics["setting.instruction_following"] == 0.0
    assert metrics["n_samples"] == 2.0


def test_questions_of_unknown_track_count_in_final_only():
    rows = [("ext", "s1", "a", 0, "other", "yes", "judged"), ("ext", "s1", "b", 0, "other", "no", "judged")]
    scores = score_samples(verdict_table(rows), BENCHMARK, "exclude", "tifa")
    assert set(scores.track) == {"final", "other"}
    assert board_of(rows, rule="tifa").loc[0, "final"] == 0.5


def test_image_metrics_per_image():
    metrics = image_metrics(score_samples(verdict_table(ROWS), BENCHMARK, "exclude")).set_index("image_id")
    assert metrics.loc["good/s1", "checklist_pass_rate"] == pytest.approx(4 / 5)
    assert metrics.loc["good/s1", "text_pass"] == 1.0
    assert metrics.loc["good/s1", "final_pass"] == 0.0
    assert metrics.loc["good/s2", "final_pass"] == 1.0
    assert math.isnan(metrics.loc["blind/s1", "checklist_pass_rate"])
    assert math.isnan(metrics.loc["blind/s2", "final_pass"])
