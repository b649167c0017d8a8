"""Strict veto scoring on hand-made verdict tables: exact pass rates and coverage."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sciir.scoring import (
    LEADERBOARD_COLUMNS,
    category_pass,
    coverage_by_track,
    final_pass,
    final_pass_rate_by,
    image_metrics,
    leaderboard,
    score_samples,
)

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


def test_leaderboard_exact_rates_and_coverage():
    board = leaderboard(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"))
    assert list(board.columns) == list(LEADERBOARD_COLUMNS)
    assert list(board.model) == ["good", "blind"]  # NaN final sorts last
    good = board.iloc[0]
    assert good.final == 0.5 and good.text == 1.0 and good.entity == 0.0 and good.process == 1.0
    assert math.isnan(good.law)
    assert good.coverage == pytest.approx(6 / 9)
    assert good.n_samples == 2
    blind = board.iloc[1]
    assert math.isnan(blind.final) and blind.coverage == 0.0 and blind.n_samples == 2


def test_leaderboard_under_policy_fail():
    board = leaderboard(score_samples(verdict_table(ROWS), BENCHMARK, "fail")).set_index("model")
    assert board.loc["good", "final"] == 0.0
    assert board.loc["blind", "final"] == 0.0
    assert board.loc["good", "coverage"] == pytest.approx(6 / 9)


def test_coverage_per_track_and_breakdowns():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "exclude")
    coverage = coverage_by_track(scores).set_index("model")
    assert coverage.loc["good", "text"] == 1.0
    assert coverage.loc["good", "entity"] == pytest.approx(2 / 3)
    assert coverage.loc["good", "process"] == 0.5
    assert coverage.loc["good", "law"] == 0.0
    by_group = final_pass_rate_by(scores, "group").set_index("model")
    assert by_group.loc["good", "All_Three"] == 0.0 and by_group.loc["good", "Entity_Law"] == 1.0
    assert math.isnan(by_group.loc["blind", "All_Three"])


def test_image_metrics_per_image():
    metrics = image_metrics(score_samples(verdict_table(ROWS), BENCHMARK, "exclude")).set_index("image_id")
    assert metrics.loc["good/s1", "checklist_pass_rate"] == pytest.approx(4 / 5)
    assert metrics.loc["good/s1", "text_pass"] == 1.0
    assert metrics.loc["good/s1", "final_pass"] == 0.0
    assert metrics.loc["good/s2", "final_pass"] == 1.0
    assert math.isnan(metrics.loc["blind/s1", "checklist_pass_rate"])
    assert math.isnan(metrics.loc["blind/s2", "final_pass"])
