"""Paired comparisons checked against scipy and statsmodels on fixed data (to 4 decimals), and against a
published exact McNemar p-value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.paired import (
    holm,
    mcnemar_exact,
    paired_bootstrap_interval,
    paired_permutation_test,
    weighted_mean_difference,
)


def _mean_difference(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _passes(a_only: int, b_only: int, both: int, neither: int) -> tuple[np.ndarray, np.ndarray]:
    """Pass / fail results of two models with these counts of the 2 x 2 table, in a fixed order."""
    a = [1] * a_only + [0] * b_only + [1] * both + [0] * neither
    b = [0] * a_only + [1] * b_only + [1] * both + [0] * neither
    return np.array(a, dtype=float), np.array(b, dtype=float)


# ---- the paired bootstrap


@pytest.mark.parametrize("seed", [0, 7])
def test_paired_bootstrap_is_scipys_paired_percentile_bootstrap_from_the_same_seed(seed):
    rng = np.random.default_rng(42)
    a, b = rng.random(40), rng.random(40) * 0.8
    config = BootstrapConfig(n_boot=2000, seed=seed)
    difference, low, high = paired_bootstrap_interval(a, b, config)
    reference = stats.bootstrap(
        (a, b),
        _mean_difference,
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=2000,
        rng=np.random.default_rng(seed),
    )
    assert difference == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    assert low == pytest.approx(reference.confidence_interval.low, abs=5e-5)
    assert high == pytest.approx(reference.confidence_interval.high, abs=5e-5)


def test_pairing_narrows_the_interval_when_the_models_succeed_on_the_same_items():
    rng = np.random.default_rng(1)
    hard = rng.random(200) < 0.5  # both models fail the hard items; B fails 10 more
    a = (~hard).astype(float)
    b = a.copy()
    b[np.flatnonzero(a)[:10]] = 0.0
    _, low, high = paired_bootstrap_interval(a, b, BootstrapConfig(n_boot=1000))
    unpaired = stats.bootstrap(
        (a, b), _mean_difference, vectorized=True, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert low > 0  # paired: B never passes an item A fails, so every resample has B behind
    assert unpaired.low < 0  # as two independent samples the same data show no difference
    assert high - low < (unpaired.high - unpaired.low) / 3


def test_weights_give_the_difference_of_pooled_means():
    # A: 1 of 1 and 2 of 4 correct (pooled 3/5); B: 0 of 1 and 4 of 4 (pooled 4/5).
    a, b = np.array([1.0, 0.5]), np.array([0.0, 1.0])
    weights = np.array([1.0, 4.0])
    assert weighted_mean_difference(a, b, weights, weights) == pytest.approx(-0.2)
    difference, low, high = paired_bootstrap_interval(a, b, BootstrapConfig(n_boot=500), weights, weights)
    assert difference == pytest.approx(-0.2) and low <= -0.2 <= high


def test_no_item_gives_no_difference_and_missing_results_are_refused():
    assert all(
        math.isnan(x) for x in paired_bootstrap_interval(np.array([]), np.array([]), BootstrapConfig())
    )
    with pytest.raises(ValueError, match="leave out the items"):
        paired_bootstrap_interval(np.array([1.0, np.nan]), np.array([1.0, 0.0]), BootstrapConfig())


# ---- exact McNemar


@pytest.mark.parametrize(
    "table", [(12, 3, 10, 5), (1, 7, 1, 12), (5, 5, 20, 20), (0, 6, 3, 3), (40, 25, 300, 100), (2, 0, 0, 0)]
)
def test_mcnemar_is_statsmodels_exact_mcnemar_and_scipys_binomial_test(table):
    a_only, b_only, both, neither = table
    result = mcnemar_exact(*_passes(a_only, b_only, both, neither))
    assert (result.a_only, result.b_only, result.discordant) == (a_only, b_only, a_only + b_only)
    reference = mcnemar(np.array([[both, a_only], [b_only, neither]]), exact=True).pvalue
    assert result.p_value == pytest.approx(reference, abs=5e-5)
    binomial = stats.binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert result.p_value == pytest.approx(binomial, abs=5e-5)


def test_mcnemar_reproduces_a_published_exact_p_value():
    # Fagerland, Lydersen and Laake (2013), "The McNemar test for binary matched-pairs data", BMC Medical
    # Research Methodology 13:91, Table 1 (from Bentur et al.): airway hyper-responsiveness before and after
    # stem cell transplantation in 21 children, 1 and 7 discordant pairs; the exact conditional p-value
    # 2 x binomcdf(1, 8, 0.5) = 2 x 9/256 = 0.0703, given as 0.070.
    result = mcnemar_exact(*_passes(a_only=1, b_only=7, both=1, neither=12))
    assert round(result.p_value, 3) == 0.070 and result.p_value == pytest.approx(18 / 256)


def test_mcnemar_without_a_discordant_item_finds_nothing_and_needs_pass_or_fail():
    assert mcnemar_exact(*_passes(0, 0, 5, 5)).p_value == 1.0
    with pytest.raises(ValueError, match="pass / fail"):
        mcnemar_exact(np.array([0.5, 1.0]), np.array([1.0, 0.0]))


# ---- the permutation test


def test_exact_permutation_test_is_scipys_on_twelve_items():
    rng = np.random.default_rng(5)
    a, b = rng.random(12), rng.random(12) + 0.25
    p = paired_permutation_test(a, b, n_resamples=9999)
    reference = stats.permutation_test(
        (a, b), _mean_difference, permutation_type="samples", vectorized=True, n_resamples=9999
    ).pvalue  # 2**12 = 4096 exchanges: exact
    assert p == pytest.approx(reference, abs=5e-5)


def test_weighted_permutation_test_is_the_enumeration_of_every_exchange():
    rng = np.random.default_rng(2)
    a, b = rng.random(8), rng.random(8) + 0.3
    wa, wb = rng.integers(1, 6, 8).astype(float), rng.integers(1, 6, 8).astype(float)
    observed = weighted_mean_difference(a, b, wa, wb)
    null = []
    for code in range(2**8):
        swap = np.array([(code >> i) & 1 for i in range(8)], dtype=bool)
        x, y = np.where(swap, b, a), np.where(swap, a, b)
        null.append(weighted_mean_difference(x, y, np.where(swap, wb, wa), np.where(swap, wa, wb)))
    null = np.array(null)
    expected = min(1.0, 2 * min(np.mean(null >= observed - 1e-12), np.mean(null <= observed + 1e-12)))
    assert paired_permutation_test(a, b, n_resamples=256, weights_a=wa, weights_b=wb) == pytest.approx(
        expected
    )


def test_monte_carlo_permutation_test_is_close_to_the_exact_one_and_repeatable():
    rng = np.random.default_rng(9)
    a, b = rng.random(14), rng.random(14) + 0.2
    exact = paired_permutation_test(a, b, n_resamples=2**14)
    sampled = paired_permutation_test(a, b, n_resamples=4000, seed=3)
    assert sampled == pytest.approx(exact, abs=0.02)
    assert sampled == paired_permutation_test(a, b, n_resamples=4000, seed=3)


def test_permutation_test_of_identical_results_and_of_no_item():
    a = np.array([0.2, 0.5, 0.9])
    assert paired_permutation_test(a, a.copy()) == 1.0
    assert math.isnan(paired_permutation_test(np.array([]), np.array([])))


# ---- Holm


def test_holm_is_statsmodels_holm_and_leaves_untested_pairs_out():
    p = np.array([0.01, 0.04, math.nan, 0.03, 0.2, 0.0001])
    adjusted = holm(p)
    tested = ~np.isnan(p)
    reference = multipletests(p[tested], method="holm")[1]
    assert np.allclose(adjusted[tested], reference, atol=5e-5) and math.isnan(adjusted[2])
    assert np.all(np.isnan(holm(np.array([math.nan, math.nan]))))


def test_holm_of_one_pair_is_its_own_p_value():
    assert holm(np.array([0.03]))[0] == 0.03
