"""Paired comparisons of a leaderboard's contestants on hand-made sample scores: which pairs, which samples,
the tests and Holm's correction, verdicts, rank intervals, the detectable difference and the metrics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sciir.evaluation.comparisons import (
    PAIRWISE_COLUMNS,
    RANK_COLUMNS,
    detectable_by_group,
    pairwise_metrics,
    pairwise_table,
    with_rank_intervals,
)
from sciir.evaluation.params import ComparisonParams
from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.paired import holm, paired_bootstrap_interval
from sciir.stats.power import detectable_difference

BOOT = BootstrapConfig(n_boot=300, seed=0)
SETTINGS = ComparisonParams()
N = 40
GROUPS = ["All_Three", "Entity_Law"] * (N // 2)


def finals(model: str, passed: list[float | None], rule: str = "sciir_veto") -> pd.DataFrame:
    """``final`` rows of one model: None is a sample without a result (weight 0)."""
    return pd.DataFrame(
        {
            "aggregation": rule,
            "model": model,
            "sample_id": [f"s{i:02d}" for i in range(len(passed))],
            "group": GROUPS[: len(passed)],
            "setting": "instruction_following",
            "track": "final",
            "score": [math.nan if value is None else value for value in passed],
            "weight": [0.0 if value is None else 1.0 for value in passed],
        }
    )


def board(models: list[str], roles: dict[str, str] | None = None, rule: str = "sciir_veto") -> pd.DataFrame:
    roles = roles or {}
    role = [roles.get(model, "contestant") for model in models]
    ranked = [model for model, r in zip(models, role, strict=True) if r == "contestant"]
    rank = [ranked.index(model) + 1 if model in ranked else pd.NA for model in models]
    return pd.DataFrame({"aggregation": rule, "model": models, "role": role, "rank": pd.array(rank, "Int64")})


def strong_weak_none() -> pd.DataFrame:
    """strong passes 30 of 40, weak 10 of the same 40 (weak passes only samples strong passes), none has
    no result on any sample, and the reference and blank pass everything / nothing."""
    strong = [1.0] * 30 + [0.0] * 10
    weak = [1.0] * 10 + [0.0] * 30
    return pd.concat(
        [
            finals("strong", strong),
            finals("weak", weak),
            finals("none", [None] * N),
            finals("reference_renderer", [1.0] * N),
            finals("blank", [0.0] * N),
        ],
        ignore_index=True,
    )


def final_pairs(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[(table.breakdown == "track") & (table.value == "final")]
    return rows.set_index(["model_a", "model_b"])


def test_every_pair_of_contestants_in_leaderboard_order_and_never_a_reference():
    scores = strong_weak_none()
    lead = board(
        ["strong", "weak", "none", "reference_renderer", "blank"],
        {"reference_renderer": "reference", "blank": "reference"},
    )
    table = pairwise_table(scores, lead, SETTINGS, BOOT)
    assert list(table.columns) == list(PAIRWISE_COLUMNS)
    pairs = final_pairs(table)
    assert list(pairs.index) == [("strong", "weak"), ("strong", "none"), ("weak", "none")]
    assert set(table.breakdown) == {"track", "group", "setting"}
    assert set(table[table.breakdown == "group"].value) == {"All_Three", "Entity_Law"}


def test_a_clear_difference_is_a_better_than_b_with_mcnemar_and_the_paired_interval():
    table = pairwise_table(strong_weak_none(), board(["strong", "weak", "none"]), SETTINGS, BOOT)
    row = final_pairs(table).loc[("strong", "weak")]
    assert (row.n_items, row.n_pairs, row.n_left_out) == (40, 40, 0)
    assert (row.score_a, row.score_b, row.difference) == (0.75, 0.25, 0.5)
    assert (row.n_a_better, row.n_b_better, row.discordance) == (20, 0, 0.5)
    assert row.test == "mcnemar_exact"
    assert row.p_value == pytest.approx(stats.binomtest(20, 20, 0.5).pvalue)
    a = np.array([1.0] * 30 + [0.0] * 10)
    b = np.array([1.0] * 10 + [0.0] * 30)
    assert (row.ci_low, row.ci_high) == pytest.approx(paired_bootstrap_interval(a, b, BOOT)[1:])
    # One pair tested (none shares no sample): Holm over m = 1 is the p-value itself.
    assert row.m_pairs == 1 and row.p_holm == row.p_value and row.verdict == "a_better"
    assert row.detectable_diff == pytest.approx(detectable_difference(0.5, 40, 0.05, 0.8))


def test_a_pair_without_a_shared_sample_is_not_tested_and_counts_what_it_left_out():
    table = pairwise_table(strong_weak_none(), board(["strong", "weak", "none"]), SETTINGS, BOOT)
    row = final_pairs(table).loc[("strong", "none")]
    assert row.verdict == "not_tested" and row.reason == "no sample scored for both models"
    assert (row.n_pairs, row.n_left_out, row.n_unscored_a, row.n_unscored_b) == (0, 40, 0, 40)
    assert math.isnan(row.p_value) and math.isnan(row.p_holm) and math.isnan(row.difference)


def test_samples_one_model_has_no_result_on_are_left_out_of_that_pair_only():
    a = [1.0, 1.0, 0.0, None, 1.0, 0.0]
    b = [0.0, None, 0.0, None, 1.0, 1.0]
    c = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    scores = pd.concat([finals("a", a), finals("b", b), finals("c", c)], ignore_index=True)
    pairs = final_pairs(pairwise_table(scores, board(["c", "a", "b"]), SETTINGS, BOOT))
    ab = pairs.loc[("a", "b")]
    assert (ab.n_items, ab.n_pairs, ab.n_left_out, ab.n_unscored_a, ab.n_unscored_b) == (6, 4, 2, 1, 2)
    assert (ab.score_a, ab.score_b, ab.n_a_better, ab.n_b_better) == (0.5, 0.5, 1, 1)
    assert pairs.loc[("c", "a"), "n_pairs"] == 5 and pairs.loc[("c", "b"), "n_pairs"] == 4


def test_holm_corrects_over_the_tested_pairs_of_one_family():
    rng = np.random.default_rng(3)
    models = {
        name: (rng.random(N) < p).astype(float).tolist() for name, p in (("x", 0.8), ("y", 0.5), ("z", 0.3))
    }
    scores = pd.concat([finals(name, passed) for name, passed in models.items()], ignore_index=True)
    pairs = final_pairs(pairwise_table(scores, board(list(models)), SETTINGS, BOOT))
    assert (pairs.m_pairs == 3).all()
    assert np.allclose(pairs.p_holm, holm(pairs.p_value.to_numpy()))
    for row in pairs.itertuples():
        significant = row.p_holm < 0.05 and (row.ci_low > 0 or row.ci_high < 0)
        assert (row.verdict != "no_detectable_difference") == significant


def test_the_better_model_listed_second_is_b_better():
    table = pairwise_table(strong_weak_none(), board(["weak", "strong"]), SETTINGS, BOOT)
    row = final_pairs(table).loc[("weak", "strong")]
    assert row.difference == -0.5 and row.verdict == "b_better"


def test_a_rule_with_scores_between_0_and_1_is_tested_by_permutation():
    rng = np.random.default_rng(0)
    scores = pd.concat(
        [finals("p", rng.random(12).tolist(), "tifa"), finals("q", (rng.random(12) * 0.5).tolist(), "tifa")],
        ignore_index=True,
    )
    row = final_pairs(pairwise_table(scores, board(["p", "q"], rule="tifa"), SETTINGS, BOOT)).iloc[0]
    assert row.test == "permutation" and 0 < row.p_value < 0.05
    assert math.isnan(row.detectable_diff)  # the detectable difference is McNemar's


def test_fewer_than_two_contestants_give_an_empty_table_with_its_columns():
    table = pairwise_table(finals("only", [1.0, 0.0]), board(["only"]), SETTINGS, BOOT)
    assert table.empty and list(table.columns) == list(PAIRWISE_COLUMNS)


def test_rank_intervals_and_the_models_not_told_apart():
    rng = np.random.default_rng(5)
    a = (rng.random(N) < 0.5).astype(float)
    close = a.copy()
    close[np.flatnonzero(a == 0)[:1]] = 1.0  # one pass more: no detectable difference
    scores = pd.concat(
        [
            finals("close", close.tolist()),
            finals("a", a.tolist()),
            finals("far", [0.0] * N),
            finals("reference_renderer", [1.0] * N),
        ],
        ignore_index=True,
    )
    lead = board(["close", "a", "far", "reference_renderer"], {"reference_renderer": "reference"})
    table = pairwise_table(scores, lead, SETTINGS, BOOT)
    ranked = with_rank_intervals(lead, scores, table, BOOT).set_index("model")
    assert list(ranked.columns[list(ranked.columns).index("rank") + 1 :][:3]) == list(RANK_COLUMNS)
    assert ranked.loc["close", "rank_lo"] == 1 and ranked.loc["a", "rank_hi"] == 2
    assert ranked.loc["far", ["rank_lo", "rank_hi"]].tolist() == [3, 3]
    assert (
        ranked.loc["close", "not_separated_from"] == "a" and ranked.loc["a", "not_separated_from"] == "close"
    )
    assert ranked.loc["far", "not_separated_from"] == ""
    assert pd.isna(ranked.loc["reference_renderer", "rank_lo"])
    assert ranked.loc["reference_renderer", "not_separated_from"] == ""


def test_detectable_difference_per_group_pools_the_discordance():
    table = pairwise_table(strong_weak_none(), board(["strong", "weak", "none"]), SETTINGS, BOOT)
    groups = detectable_by_group(table).set_index("group")
    assert list(groups.index) == ["all samples", "All_Three", "Entity_Law"]
    overall = groups.loc["all samples"]
    assert (overall.pairs_tested, overall.n_pairs_min, overall.discordance, overall.m_pairs) == (
        1,
        40,
        0.5,
        1,
    )
    assert overall.detectable_diff == pytest.approx(detectable_difference(0.5, 40))
    assert groups.loc["All_Three", "n_pairs_min"] == 20 and groups.loc["All_Three", "reason"] == ""


def test_detectable_difference_says_why_when_there_is_none():
    scores = pd.concat([finals("a", [1.0, 0.0, 1.0]), finals("b", [0.0, 0.0, 1.0])], ignore_index=True)
    groups = detectable_by_group(pairwise_table(scores, board(["a", "b"]), SETTINGS, BOOT)).set_index("group")
    assert math.isnan(groups.loc["all samples", "detectable_diff"])
    assert groups.loc["all samples", "reason"].startswith("too few samples")


def test_pairwise_metrics_name_each_pair_and_carry_the_verdict_as_a_sign():
    table = pairwise_table(strong_weak_none(), board(["strong", "weak", "none"]), SETTINGS, BOOT)
    metrics = pairwise_metrics(table, "sciir_veto")
    assert metrics["pairwise.strong_vs_weak.final.difference"] == 0.5
    assert metrics["pairwise.strong_vs_weak.final.verdict"] == 1.0
    assert metrics["pairwise.strong_vs_weak.final.n_pairs"] == 40.0
    assert metrics["pairwise.strong_vs_none.final.n_left_out"] == 40.0
    assert math.isnan(metrics["pairwise.strong_vs_none.final.verdict"])  # not tested: no number
    assert "pairwise.strong_vs_weak.group.All_Three.p_holm" in metrics
    assert "pairwise.strong_vs_weak.group.All_Three.ci_low" not in metrics  # the full set is final's
    other = pairwise_metrics(table.assign(aggregation="tifa"), "sciir_veto")
    assert "pairwise.tifa.strong_vs_weak.final.difference" in other
