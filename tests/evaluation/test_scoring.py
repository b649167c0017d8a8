"""SciIR scoring on hand-made verdict tables: exact veto pass rates, rule scores, intervals and coverage."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from sciir.evaluation.image_metrics import image_metrics
from sciir.evaluation.scoring import (
    LEADERBOARD_COLUMNS,
    breakdown_table,
    category_pass,
    final_pass,
    leaderboard,
    model_metrics,
    score_samples,
    score_table,
)
from sciir.stats.bootstrap import BootstrapConfig

BOOT = BootstrapConfig(n_boot=200, seed=0)

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["s1", "s2"],
        "group": ["All_Three", "Entity_Law"],
        "setting": ["instruction_following", "intrinsic_reasoning"],
        "tracks": ['["entity", "process", "law"]', '["entity", "law"]'],
    }
)

S1_QUESTIONS = [("t1", 1, "text"), ("t2", 1, "text"), ("e1", 2, "entity"), ("e2", 2, "entity")]
S1_QUESTIONS += [("p1", 2, "process"), ("p2", 2, "process"), ("l1", 2, "law")]
S2_QUESTIONS = [("t1", 1, "text"), ("e1", 2, "entity")]  # s2 is labelled law but has no law question

# (model, sample, question, layer, track, verdict, status)
ROWS = [
    # good/s1: text passes, entity vetoed by one "no", process is yes + abstained, law all abstained.
    ("good", "s1", "t1", 1, "text", "yes", "judged"),
    ("good", "s1", "t2", 1, "text", "yes", "judged"),
    ("good", "s1", "e1", 2, "entity", "yes", "judged"),
    ("good", "s1", "e2", 2, "entity", "no", "judged"),
    ("good", "s1", "p1", 2, "process", "yes", "judged"),
    ("good", "s1", "p2", 2, "process", None, "abstained"),
    ("good", "s1", "l1", 2, "law", None, "abstained"),
    # good/s2: text passes, entity's only question failed (request error), law has no question.
    ("good", "s2", "t1", 1, "text", "yes", "judged"),
    ("good", "s2", "e1", 2, "entity", None, "failed"),
    # blind: every image missing, so every question failed.
    *[("blind", "s1", qid, layer, track, None, "failed") for qid, layer, track in S1_QUESTIONS],
    *[("blind", "s2", qid, layer, track, None, "failed") for qid, layer, track in S2_QUESTIONS],
]


def verdict_table(rows: list[tuple]) -> pd.DataFrame:
    columns = ["model", "sample_id", "question_id", "layer", "track", "verdict", "status"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.assign(evidence=None, reasoning=None, reason=None)


def row_of(scores: pd.DataFrame, model: str, sample: str, track: str) -> pd.Series:
    row = scores[(scores.model == model) & (scores.sample_id == sample) & (scores.track == track)]
    assert len(row) == 1
    return row.iloc[0]


def passed_of(scores: pd.DataFrame, model: str, sample: str, track: str):
    value = row_of(scores, model, sample, track).passed
    return None if value is pd.NA else bool(value)


@pytest.mark.parametrize(
    ("counts", "policy", "expected"),
    [
        ((3, 3, 3), "exclude", True),
        ((3, 3, 2), "exclude", False),
        ((3, 2, 2), "exclude", None),  # yes + unjudged: never a pass
        ((3, 2, 1), "exclude", False),  # a "no" fails whatever is unjudged
        ((3, 0, 0), "exclude", None),
        ((0, 0, 0), "exclude", None),  # no question at all
        ((3, 2, 2), "fail", False),
        ((3, 0, 0), "fail", False),
        ((0, 0, 0), "fail", False),
        ((2, 2, 2), "fail", True),
    ],
)
def test_category_pass_rule(counts, policy, expected):
    assert category_pass(*counts, policy=policy) is expected


def test_final_pass_needs_every_category():
    assert final_pass([True, True]) is True
    assert final_pass([True, None, True]) is None
    assert final_pass([True, False, None]) is False
    assert final_pass([None, pd.NA]) is None
    assert final_pass([]) is None


def test_exclude_yes_plus_abstained_all_abstained_and_failed_request():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "exclude")
    assert passed_of(scores, "good", "s1", "text") is True
    assert passed_of(scores, "good", "s1", "entity") is False
    assert passed_of(scores, "good", "s1", "process") is None  # yes + abstained
    assert passed_of(scores, "good", "s1", "law") is None  # all abstained
    assert passed_of(scores, "good", "s1", "final") is False  # entity vetoes
    assert passed_of(scores, "good", "s2", "entity") is None  # failed request
    # text passes, but entity is unjudged and law has no question: final is unjudged, not a pass.
    assert passed_of(scores, "good", "s2", "final") is None
    assert passed_of(scores, "blind", "s1", "final") is None
    final = row_of(scores, "good", "s1", "final")
    assert (final.n_questions, final.n_judged, final.n_yes) == (7, 5, 4)
    assert final.group == "All_Three" and final.setting == "instruction_following"


def test_empty_labelled_track_is_a_reported_defect_never_a_pass():
    for policy, expected in (("exclude", None), ("fail", False)):
        scores = score_samples(verdict_table(ROWS), BENCHMARK, policy)
        law = row_of(scores, "good", "s2", "law")
        assert law.checklist_defect and law.n_questions == 0
        assert passed_of(scores, "good", "s2", "law") is expected
        assert bool(row_of(scores, "good", "s2", "final").checklist_defect)
        assert not row_of(scores, "good", "s1", "final").checklist_defect
    table = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"), BOOT)
    law = table[(table.model == "good") & (table.breakdown == "track") & (table.value == "law")].iloc[0]
    assert (law.n_samples, law.n_scored, law.n_defects) == (2, 0, 1)
    assert board_of(ROWS).set_index("model").loc["good", "checklist_defects"] == 1


def test_without_labels_only_tracks_with_questions_are_required():
    benchmark = BENCHMARK.drop(columns="tracks")
    scores = score_samples(verdict_table(ROWS), benchmark, "exclude")
    assert not scores.checklist_defect.any()
    assert set(scores[(scores.model == "good") & (scores.sample_id == "s2")].track) == {
        "final",
        "text",
        "entity",
    }


def test_policy_fail_counts_unjudged_as_failed():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "fail")
    assert passed_of(scores, "good", "s1", "process") is False
    assert passed_of(scores, "good", "s2", "final") is False
    assert passed_of(scores, "blind", "s2", "final") is False
    assert scores["passed"].notna().all()


def board_of(rows: list[tuple], policy: str = "exclude", rule="sciir_veto", roles=None):
    scores = score_table(score_samples(verdict_table(rows), BENCHMARK, policy, rule), BOOT)
    return leaderboard(scores, roles)


def test_leaderboard_exact_rates_samples_counted_and_coverage():
    board = board_of(ROWS)
    assert list(board.columns) == list(LEADERBOARD_COLUMNS)
    assert list(board.model) == ["good", "blind"]  # NaN final sorts last
    good = board.iloc[0]
    # final: s1 fails, s2 unjudged -> 0.0 over one sample; it is not the text score (1.0 over two).
    assert (good.final, good.final_n) == (0.0, 1) and (good.text, good.text_n) == (1.0, 2)
    assert (good.entity, good.entity_n) == (0.0, 1)
    assert math.isnan(good.process) and good.process_n == 0
    assert math.isnan(good.law) and math.isnan(good.law_lo) and good.law_n == 0
    assert good.coverage == pytest.approx(6 / 9)
    assert good.n_samples == 2 and good.aggregation == "sciir_veto" and good.role == "contestant"
    assert good["rank"] == 1


def test_model_with_every_image_missing():
    excluded = board_of(ROWS).set_index("model").loc["blind"]
    assert math.isnan(excluded.final) and excluded.final_n == 0 and excluded.text_n == 0
    assert excluded.coverage == 0.0 and excluded.n_samples == 2 and excluded["rank"] is pd.NA
    failed = board_of(ROWS, policy="fail").set_index("model").loc["blind"]
    assert (failed.final, failed.final_n, failed.text, failed.text_n) == (0.0, 2, 0.0, 2)


def test_leaderboard_intervals_bracket_the_score():
    board = board_of(ROWS, policy="fail").set_index("model")
    # good under fail: text passes on both samples; final fails on both.
    assert (board.loc["good", "text_lo"], board.loc["good", "text_hi"]) == (1.0, 1.0)
    assert (board.loc["good", "final_lo"], board.loc["good", "final_hi"]) == (0.0, 0.0)
    assert math.isnan(board_of(ROWS).set_index("model").loc["blind", "final_lo"])


def test_leaderboard_under_policy_fail():
    board = board_of(ROWS, policy="fail").set_index("model")
    assert (board.loc["good", "final"], board.loc["good", "final_n"]) == (0.0, 2)
    assert board.loc["good", "process"] == 0.0 and board.loc["good", "law"] == 0.0
    assert board.loc["blind", "final"] == 0.0
    assert board.loc["good", "coverage"] == pytest.approx(6 / 9)


def test_reference_is_marked_and_never_ranked():
    rows = [*ROWS, *[("ref", "s1", qid, layer, track, "yes", "judged") for qid, layer, track in S1_QUESTIONS]]
    board = board_of(rows, roles={"ref": "reference"}).set_index("model")
    assert board.loc["ref", "final"] == 1.0 and board.loc["ref", "role"] == "reference"
    assert list(board.index) == ["good", "blind", "ref"]  # the reference comes last whatever it scores
    assert board.loc["good", "rank"] == 1 and board.loc["blind", "rank"] is pd.NA
    assert board.loc["ref", "rank"] is pd.NA


def test_veto_score_is_the_veto_result():
    scores = score_samples(verdict_table(ROWS), BENCHMARK, "exclude")
    judged = scores[scores.passed.notna()]
    assert (judged.score == judged.passed.astype(float)).all() and (judged.weight == 1.0).all()
    unjudged = scores[scores.passed.isna()]
    assert unjudged.score.isna().all() and (unjudged.weight == 0.0).all()


@pytest.mark.parametrize(
    ("rule", "final", "entity"),
    [
        # good/s1: 4 of 5 judged yes; good/s2: 1 of 1. Entity: s1 1 of 2, s2 nothing judged.
        ("tifa", (4 / 5 + 1) / 2, 1 / 2),
        ("question_mean", 5 / 6, 1 / 2),
        ("sciir_veto", 0.0, 0.0),
    ],
)
def test_rules_give_exact_scores(rule, final, entity):
    board = board_of(ROWS, rule=rule).set_index("model")
    assert board.loc["good", "final"] == pytest.approx(final)
    assert board.loc["good", "entity"] == pytest.approx(entity)
    assert board.loc["good", "aggregation"] == rule


def test_several_rules_side_by_side():
    rules = ["sciir_veto", "tifa", "question_mean"]
    sample_scores = score_samples(verdict_table(ROWS), BENCHMARK, "exclude", rules)
    assert list(pd.unique(sample_scores.aggregation)) == rules
    # pass / fail and the counts are the rule's own business only in score and weight
    per_rule = [sample_scores[sample_scores.aggregation == rule].reset_index(drop=True) for rule in rules]
    assert all(frame.passed.equals(per_rule[0].passed) for frame in per_rule)
    board = leaderboard(score_table(sample_scores, BOOT))
    assert list(board.aggregation) == [
        "sciir_veto",
        "sciir_veto",
        "tifa",
        "tifa",
        "question_mean",
        "question_mean",
    ]
    finals = board[board.model == "good"].set_index("aggregation").final
    assert finals.to_dict() == pytest.approx({"sciir_veto": 0.0, "tifa": 0.9, "question_mean": 5 / 6})
    metrics = model_metrics(score_table(sample_scores, BOOT), "good")
    assert metrics["final"] == 0.0 and metrics["tifa.final"] == pytest.approx(0.9)
    assert metrics["question_mean.final"] == pytest.approx(5 / 6) and "tifa.coverage" not in metrics
    images = image_metrics(sample_scores).set_index("image_id")
    assert images.loc["good/s1", "tifa.final"] == pytest.approx(0.8)
    assert images.loc["good/s2", "tifa.final"] == 1.0 and math.isnan(
        images.loc["good/s2", "sciir_veto.final"]
    )
    assert images.loc["good/s1", "tifa.entity"] == 0.5


def test_coverage_per_track_and_breakdowns():
    scores = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"), BOOT)
    coverage = breakdown_table(scores, "track", "coverage").set_index("model")
    assert list(coverage.columns) == ["final", "text", "entity", "process", "law"]
    assert coverage.loc["good", "text"] == 1.0
    assert coverage.loc["good", "entity"] == pytest.approx(2 / 3)
    assert coverage.loc["good", "process"] == 0.5
    assert coverage.loc["good", "law"] == 0.0
    by_group = breakdown_table(scores, "group").set_index("model")
    assert by_group.loc["good", "All_Three"] == 0.0 and math.isnan(by_group.loc["good", "Entity_Law"])
    assert math.isnan(by_group.loc["blind", "All_Three"])
    by_setting = breakdown_table(scores, "setting").set_index("model")
    assert by_setting.loc["good", "instruction_following"] == 0.0
    assert math.isnan(by_setting.loc["good", "intrinsic_reasoning"])


def test_score_table_counts_scored_samples():
    scores = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "exclude"), BOOT)
    entity = scores[
        (scores.model == "good") & (scores.breakdown == "track") & (scores.value == "entity")
    ].iloc[0]
    assert (entity.n_samples, entity.n_scored, entity.n_questions, entity.n_judged) == (2, 1, 3, 2)


def test_model_metrics_names_and_values():
    scores = score_table(score_samples(verdict_table(ROWS), BENCHMARK, "fail"), BOOT)
    metrics = model_metrics(scores, "good")
    assert metrics["final"] == 0.0 and metrics["final.n_samples"] == 2.0
    assert metrics["text"] == 1.0 and metrics["text.ci_low"] == 1.0 and metrics["text.ci_high"] == 1.0
    assert metrics["coverage"] == pytest.approx(6 / 9) and metrics["coverage.process"] == 0.5
    assert metrics["group.Entity_Law"] == 0.0 and metrics["group.Entity_Law.n_samples"] == 1.0
    assert metrics["n_samples"] == 2.0 and metrics["checklist_defects"] == 1.0


def test_questions_of_unknown_track_count_in_final_only():
    rows = [("ext", "s1", "a", 0, "other", "yes", "judged"), ("ext", "s1", "b", 0, "other", "no", "judged")]
    benchmark = BENCHMARK.drop(columns="tracks")
    scores = score_samples(verdict_table(rows), benchmark, "exclude", "tifa")
    assert set(scores.track) == {"final", "other"}
    board = leaderboard(score_table(scores, BOOT))
    assert board.loc[0, "final"] == 0.5


def test_image_metrics_per_image():
    metrics = image_metrics(score_samples(verdict_table(ROWS), BENCHMARK, "exclude")).set_index("image_id")
    assert metrics.loc["good/s1", "checklist_pass_rate"] == pytest.approx(4 / 5)
    assert metrics.loc["good/s1", "text_pass"] == 1.0
    assert metrics.loc["good/s1", "final_pass"] == 0.0
    assert math.isnan(metrics.loc["good/s2", "final_pass"])
    assert metrics.loc["good/s1", "sciir_veto.final"] == 0.0
    assert math.isnan(metrics.loc["blind/s1", "checklist_pass_rate"])
    assert math.isnan(metrics.loc["blind/s2", "final_pass"])


def test_a_benchmarks_own_categories_are_scored_and_required_under_their_names():
    benchmark = pd.DataFrame(
        {
            "sample_id": ["a", "b"],
            "group": ["mechanics", "optics"],
            "setting": ["plain", "plain"],
            "tracks": ['["forces"]', '["forces", "rays"]'],  # b requires "rays" but has no such question
        }
    )
    rows = [
        ("m", "a", "t1", 1, "text", "yes", "judged"),
        ("m", "a", "f1", 2, "forces", "yes", "judged"),
        ("m", "b", "t1", 1, "text", "yes", "judged"),
        ("m", "b", "f1", 2, "forces", "no", "judged"),
    ]
    scores = score_samples(verdict_table(rows), benchmark, "exclude")
    assert passed_of(scores, "m", "a", "forces") is True and passed_of(scores, "m", "a", "final") is True
    assert passed_of(scores, "m", "b", "forces") is False
    assert bool(row_of(scores, "m", "b", "rays").checklist_defect)  # a required category without questions
    board = leaderboard(score_table(scores, BOOT)).iloc[0]
    assert (board["forces"], board["forces_n"], board["coverage_forces"]) == (0.5, 2, 1.0)
    assert board["rays_n"] == 0 and math.isnan(board["rays"])
    assert board["final"] == 0.5 and board["checklist_defects"] == 1
    assert list(board.index[-2:]) == ["coverage_forces", "coverage_rays"]  # after SciIR's columns
