"""Correlations, bootstrap intervals, group averages and metric comparisons against scipy and known values."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sciir.evaluation.rating_pairs import mean_ratings
from sciir.stats.bootstrap import BootstrapConfig, resample_indices, stratified_indices
from sciir.stats.correlation import correlate
from sciir.stats.correlation_table import (
    CorrelationSettings,
    average_correlations,
    correlation_columns,
    correlation_table,
)
from sciir.stats.metric_comparison import COMPARISON_COLUMNS, compare_pair, comparison_table, williams_test

FAST = CorrelationSettings(bootstrap=BootstrapConfig(n_boot=200, seed=3))


def noisy(seed: int, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """A rating y and a metric that is y plus Gaussian noise of the given size."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    return y, y + noise * rng.normal(size=n)


def test_perfectly_monotone_gives_one():
    result = correlate([1, 2, 3, 4, 5], [1, 4, 9, 16, 25])
    assert result.spearman_rho == pytest.approx(1.0)
    assert result.kendall_tau == pytest.approx(1.0)
    assert result.pearson_r < 1.0
    assert result.n == 5 and result.reason is None


def test_matches_scipy_with_ties_for_both_kendall_variants():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=40).astype(float)
    y = x + rng.integers(0, 3, size=40)
    result = correlate(x, y)
    assert result.pearson_r == pytest.approx(stats.pearsonr(x, y).statistic)
    assert result.spearman_p == pytest.approx(stats.spearmanr(x, y).pvalue)
    for variant in ("b", "c"):
        tau = stats.kendalltau(x, y, variant=variant)
        named = correlate(x, y, kendall_variant=variant)
        assert (named.kendall_tau, named.kendall_p) == pytest.approx((tau.statistic, tau.pvalue))
    assert correlate(x, y, kendall_variant="c").kendall_tau != pytest.approx(result.kendall_tau)


def test_missing_values_are_left_out_of_n():
    result = correlate([1.0, 2.0, None, 4.0, float("nan")], [2.0, 1.0, 3.0, 5.0, 4.0])
    assert result.n == 3
    assert result.pearson_r == pytest.approx(stats.pearsonr([1, 2, 4], [2, 1, 5]).statistic)


def test_constant_input_is_nan_with_a_logged_reason(caplog):
    with caplog.at_level(logging.WARNING):
        result = correlate([1, 1, 1, 1], [1, 2, 3, 4], label="final_pass")
    assert result.n == 4
    assert all(math.isnan(v) for v in (result.pearson_r, result.spearman_rho, result.kendall_tau))
    assert result.reason == "metric constant over all 4 pairs"
    assert "final_pass" in caplog.text and "constant" in caplog.text


def test_too_few_pairs_is_nan():
    result = correlate([1, 2], [2, 1])
    assert math.isnan(result.kendall_p) and "only 2 complete pairs" in result.reason


def test_mean_ratings_average_each_image_over_its_raters():
    ratings = pd.DataFrame({"image_id": ["a", "a", "b"], "rater_id": ["r1", "r2", "r1"], "score": [1, 4, 3]})
    consensus = mean_ratings(ratings).set_index("image_id")
    assert consensus.loc["a", "rating"] == 2.5 and consensus.loc["a", "n_raters"] == 2
    assert consensus.loc["b", "rating"] == 3.0


def test_resampling_is_seeded_and_stays_within_each_stratum():
    strata = np.array(["x", "x", "y", "y", "y", "z"])
    first = stratified_indices(strata, BootstrapConfig(n_boot=50, seed=7))
    assert np.array_equal(first, stratified_indices(strata, BootstrapConfig(n_boot=50, seed=7)))
    assert not np.array_equal(first, stratified_indices(strata, BootstrapConfig(n_boot=50, seed=8)))
    assert np.all(strata[first] == strata[None, :])
    assert set(first[:, 5]) == {5}
    one_stratum = BootstrapConfig(n_boot=30, seed=2)
    assert np.array_equal(stratified_indices(np.zeros(9), one_stratum), resample_indices(9, one_stratum))


def test_pooled_table_has_intervals_around_the_estimate_and_named_kendall_column():
    y, metric = noisy(1, 120, 1.0)
    frame = pd.DataFrame({"metric": metric, "flat": 1.0, "rating": y})
    settings = CorrelationSettings(kendall_variant="c", bootstrap=BootstrapConfig(n_boot=300, seed=0))
    table = correlation_table(frame, ["metric", "flat"], "rating", settings).set_index("metric")
    assert list(table.reset_index().columns) == correlation_columns("c")
    row = table.loc["metric"]
    assert row.kendall_tau_c == pytest.approx(stats.kendalltau(metric, y, variant="c").statistic)
    for coefficient, column in (
        ("pearson", "pearson_r"),
        ("spearman", "spearman_rho"),
        ("kendall", "kendall_tau_c"),
    ):
        low, high = row[f"{coefficient}_ci_low"], row[f"{coefficient}_ci_high"]
        assert low < row[column] < high and high - low < 0.4
    assert table.loc["metric", "scope"] == "pooled" and table.loc["metric", "averaging"] == "none"
    assert (
        math.isnan(table.loc["flat", "pearson_ci_low"]) and "metric constant" in table.loc["flat", "reason"]
    )
    again = correlation_table(frame, ["metric"], "rating", settings)
    assert again.loc[0, "spearman_ci_low"] == row.spearman_ci_low


def test_interval_matches_an_explicit_percentile_bootstrap():
    y, metric = noisy(2, 40, 0.7)
    table = correlation_table(pd.DataFrame({"m": metric, "r": y}), ["m"], "r", FAST)
    indices = stratified_indices(np.zeros(40), FAST.bootstrap)
    rhos = [stats.spearmanr(metric[row], y[row]).statistic for row in indices]
    assert (table.loc[0, "spearman_ci_low"], table.loc[0, "spearman_ci_high"]) == pytest.approx(
        tuple(np.quantile(rhos, [0.025, 0.975]))
    )


def test_fisher_z_average_and_the_skip_arctanh_shortcut():
    values = [0.2, 0.5, 0.9]
    assert average_correlations(values) == pytest.approx(math.tanh(np.mean(np.arctanh(values))))
    assert average_correlations(values, "skip_arctanh") == pytest.approx(math.tanh(np.mean(values)))
    assert average_correlations(values) > average_correlations(values, "skip_arctanh")
    assert average_correlations([0.4, 0.4]) == pytest.approx(0.4)


def test_grouped_table_has_a_row_per_group_and_an_average_that_names_its_averaging():
    y1, m1 = noisy(3, 30, 0.5)
    y2, m2 = noisy(4, 30, 2.0)
    frame = pd.DataFrame(
        {
            "m": np.concatenate([m1, m2, [1.0, 1.0, 1.0]]),
            "r": np.concatenate([y1, y2, [1.0, 2.0, 3.0]]),
            "model": ["a"] * 30 + ["b"] * 30 + ["flat"] * 3,
        }
    )
    rows = {
        fisher_z: correlation_table(
            frame,
            ["m"],
            "r",
            CorrelationSettings(fisher_z=fisher_z, bootstrap=BootstrapConfig(n_boot=100)),
            "model",
        )
        for fisher_z in ("arctanh", "skip_arctanh")
    }
    table = rows["arctanh"]
    assert list(table.scope) == ["pooled", "group", "group", "group", "group_average"]
    assert list(table.group[1:4]) == ["a", "b", "flat"]
    groups = table.set_index("group")
    assert groups.loc["a", "pearson_r"] == pytest.approx(stats.pearsonr(m1, y1).statistic)
    assert "constant" in groups.loc["flat", "reason"]
    rho_a, rho_b = stats.spearmanr(m1, y1).statistic, stats.spearmanr(m2, y2).statistic
    for fisher_z, expected in (
        ("arctanh", math.tanh((math.atanh(rho_a) + math.atanh(rho_b)) / 2)),
        ("skip_arctanh", math.tanh((rho_a + rho_b) / 2)),
    ):
        average = rows[fisher_z].iloc[-1]
        assert average.averaging == f"fisher_z:{fisher_z}"
        assert average.spearman_rho == pytest.approx(expected)
        assert average.n == 60 and "1 of 3 groups undefined" in average.reason
        assert math.isnan(average.spearman_p)
        assert average.spearman_ci_low < average.spearman_rho < average.spearman_ci_high


def test_williams_test_matches_a_published_worked_example():
    # bruceR::cor_diff documentation: r(X,Y) = .20, r(X,Z) = .45, r(Y,Z) = .80, N = 100 -> t(97) = -4.56.
    t, p = williams_test(0.20, 0.45, 0.80, 100)
    assert round(t, 2) == -4.56 and p < 1e-4
    assert williams_test(0.45, 0.20, 0.80, 100)[0] == pytest.approx(-t)
    assert williams_test(0.5, 0.5, 0.3, 50) == (0.0, 1.0)
    with pytest.raises(ValueError, match="more than 3"):
        williams_test(0.5, 0.4, 0.3, 3)


def test_a_closer_metric_is_significantly_better_and_identical_ones_are_not():
    rng = np.random.default_rng(5)
    y = rng.normal(size=150)
    close, far = y + 0.3 * rng.normal(size=150), y + 1.5 * rng.normal(size=150)
    row = compare_pair(("close", "far"), close, far, y, "pearson", FAST)
    assert row["r_a"] == pytest.approx(stats.pearsonr(close, y).statistic)
    assert row["r_ab"] == pytest.approx(stats.pearsonr(close, far).statistic)
    assert row["williams_df"] == 147 and row["williams_t"] > 0 and row["williams_p"] < 0.001
    assert 0 < row["bootstrap_ci_low"] < row["difference"] < row["bootstrap_ci_high"]
    assert row["bootstrap_p"] == pytest.approx(
        2 / 201
    )  # no resample at or below 0: (0 + 1) / (200 + 1), two-sided
    same = compare_pair(("a", "b"), close, close, y, "spearman", FAST)
    assert same["difference"] == 0 and same["bootstrap_p"] == 1.0


def test_comparison_table_covers_every_pair_and_explains_what_it_cannot_test():
    y, a = noisy(6, 60, 0.5)
    frame = pd.DataFrame({"a": a, "b": a[::-1], "c": 1.0, "r": y})
    table = comparison_table(frame, ["a", "b", "c"], "r", "kendall", FAST)
    assert list(table.columns) == list(COMPARISON_COLUMNS)
    assert list(zip(table.metric_a, table.metric_b, strict=True)) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert set(table.coefficient) == {"kendall_tau_b"}
    first = table.iloc[0]
    assert math.isnan(first.williams_t) and "Williams' test needs Pearson-type" in first.reason
    assert first.bootstrap_ci_low > 0
    assert "c constant" in table.iloc[1].reason and math.isnan(table.iloc[1].r_a)


def test_images_without_a_group_stay_pooled_but_leave_the_group_rows(caplog):
    y, metric = noisy(7, 20, 1.0)
    frame = pd.DataFrame({"m": metric, "r": y, "model": ["a"] * 8 + ["b"] * 8 + [None] * 4})
    with caplog.at_level(logging.WARNING):
        table = correlation_table(frame, ["m"], "r", FAST, group_by="model")
    assert list(table.n) == [20, 8, 8, 16]
    assert list(table.group[1:3]) == ["a", "b"]
    assert "4 images have no group" in caplog.text
