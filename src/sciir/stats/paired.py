"""Is model A better than model B on the same items? Paired comparisons and Holm's correction.

Two models scored on the same benchmark items are compared item by item, never as two independent
samples (Dror et al. 2018, "The hitchhiker's guide to testing statistical significance in NLP"):

- ``paired_bootstrap_interval``: the difference of the two (weighted) means with a percentile interval
  that resamples the *items* with replacement, each resample taking both models' results of the same
  items (the seeded indices of ``sciir.stats.bootstrap``; with unit weights this is
  ``scipy.stats.bootstrap(..., paired=True, method="percentile")`` drawing from the same seed);
- ``mcnemar_exact``: McNemar's test (McNemar 1947) of a binary outcome (pass / fail per item), exact: the
  items where exactly one model passes are binomial(b + c, 1/2) under "neither is better", and the
  p-value is the two-sided binomial test (``scipy.stats.binomtest``), as statsmodels'
  ``mcnemar(table, exact=True)``;
- ``paired_permutation_test``: for a score that is not binary (a checklist pass rate per item), the
  permutation test that swaps the two models' results within items (``scipy.stats.permutation_test``
  with ``permutation_type="samples"``): exact over every swap when they are few enough, else Monte Carlo;
- ``holm``: Holm's step-down correction (Holm 1979) of the p-values of every pair of one leaderboard,
  which keeps the chance of any false "A better than B" among them at or below alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sciir.stats.bootstrap import BootstrapConfig, resample_indices

# Rows of swap patterns evaluated at a time (bounds the memory of the permutation test).
_CHUNK = 2048


def _unit_weights(values: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    return np.ones(values.size) if weights is None else np.asarray(weights, dtype=float)


def _checked_pair(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired results need two 1-d arrays of one length, got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired results must be numbers: leave out the items a model has no result on")
    return a, b


def weighted_mean_difference(
    a: np.ndarray, b: np.ndarray, weights_a: np.ndarray | None = None, weights_b: np.ndarray | None = None
) -> float:
    """sum(a x w_a) / sum(w_a) - sum(b x w_b) / sum(w_b) over the same items (unit weights by default)."""
    a, b = _checked_pair(a, b)
    wa, wb = _unit_weights(a, weights_a), _unit_weights(b, weights_b)
    if a.size == 0 or wa.sum() <= 0 or wb.sum() <= 0:
        return math.nan
    return float((a * wa).sum() / wa.sum() - (b * wb).sum() / wb.sum())


def paired_bootstrap_interval(
    a: np.ndarray,
    b: np.ndarray,
    config: BootstrapConfig,
    weights_a: np.ndarray | None = None,
    weights_b: np.ndarray | None = None,
) -> tuple[float, float, float]:
    """(difference, low, high): the difference of the weighted means of ``a`` and ``b`` (results of the
    same items, position i of both is item i) and its ``config.confidence`` percentile interval over
    ``config.n_boot`` resamples of the items, drawn with ``resample_indices`` (so from ``config.seed``).

    Items must carry positive weights (leave out the items either model has no result on). A resample
    in which one side has no weight has no difference and is left out. (NaN, NaN, NaN) without items.
    """
    a, b = _checked_pair(a, b)
    wa, wb = _unit_weights(a, weights_a), _unit_weights(b, weights_b)
    difference = weighted_mean_difference(a, b, wa, wb)
    if math.isnan(difference):
        return math.nan, math.nan, math.nan
    indices = resample_indices(a.size, config)
    sums_a, sums_b = wa[indices].sum(axis=1), wb[indices].sum(axis=1)
    defined = (sums_a > 0) & (sums_b > 0)
    resampled = (a * wa)[indices].sum(axis=1)[defined] / sums_a[defined]
    resampled -= (b * wb)[indices].sum(axis=1)[defined] / sums_b[defined]
    tail = (1.0 - config.confidence) / 2.0
    low, high = np.quantile(resampled, [tail, 1.0 - tail])
    return difference, float(low), float(high)


@dataclass(frozen=True)
class McNemarResult:
    """Items where only A passes (``a_only``), only B passes (``b_only``), and the exact two-sided p."""

    a_only: int
    b_only: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> McNemarResult:
    """Exact McNemar test of two binary outcomes on the same items (``a[i]``, ``b[i]``: did each model
    pass item i). Items both pass or both fail say nothing about which is better; of the discordant
    items, how many A alone passes is binomial(discordant, 1/2) when neither is better. p is the
    two-sided binomial test, 1.0 when no item is discordant."""
    from scipy import stats

    a, b = _checked_pair(a, b)
    if not np.isin(a, (0.0, 1.0)).all() or not np.isin(b, (0.0, 1.0)).all():
        raise ValueError("McNemar's test needs pass / fail results (0 or 1) of both models")
    a_only = int(((a == 1) & (b == 0)).sum())
    b_only = int(((a == 0) & (b == 1)).sum())
    if a_only + b_only == 0:
        return McNemarResult(0, 0, 1.0)
    p_value = float(stats.binomtest(a_only, a_only + b_only, 0.5, alternative="two-sided").pvalue)
    return McNemarResult(a_only, b_only, min(p_value, 1.0))


def _swapped_differences(
    swaps: np.ndarray, a: np.ndarray, b: np.ndarray, wa: np.ndarray, wb: np.ndarray
) -> np.ndarray:
    """The weighted-mean difference for each row of ``swaps`` (1: item i's results exchanged). An exchange
    moves b_i w_b,i - a_i w_a,i from B's sums to A's (and w_b,i - w_a,i of weight), so each row's sums are
    the observed ones shifted by two matrix-vector products."""
    moved = swaps @ (b * wb - a * wa)
    moved_weight = swaps @ (wb - wa)
    mean_a = ((a * wa).sum() + moved) / (wa.sum() + moved_weight)
    mean_b = ((b * wb).sum() - moved) / (wb.sum() - moved_weight)
    return np.asarray(mean_a - mean_b)


def _random_swaps(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """``rows`` x ``n`` fair coin flips (0.0 / 1.0), drawn as random bytes."""
    packed = rng.integers(0, 256, size=(rows, (n + 7) // 8), dtype=np.uint8)
    return np.unpackbits(packed, axis=1, count=n).astype(float)


def paired_permutation_test(
    a: np.ndarray,
    b: np.ndarray,
    n_resamples: int = 9999,
    seed: int = 0,
    weights_a: np.ndarray | None = None,
    weights_b: np.ndarray | None = None,
) -> float:
    """Two-sided p of "A and B score alike" for results of the same items: each item's two results
    (with their weights) are exchanged or not, and the observed difference of weighted means is
    compared with the differences of all exchange patterns (exact, when 2**n <= ``n_resamples``) or of
    ``n_resamples`` random ones drawn from ``seed`` (then p = (k + 1) / (n_resamples + 1)). As
    ``scipy.stats.permutation_test``: p = 2 x the smaller one-sided p, at most 1. NaN without items."""
    a, b = _checked_pair(a, b)
    wa, wb = _unit_weights(a, weights_a), _unit_weights(b, weights_b)
    observed = weighted_mean_difference(a, b, wa, wb)
    if math.isnan(observed):
        return math.nan
    exact = a.size < 63 and 2**a.size <= n_resamples
    total = 2**a.size if exact else n_resamples
    rng = np.random.default_rng(seed)
    gamma = max(abs(observed), 1.0) * 1e-12  # equal up to rounding counts as equal, as scipy
    at_least = at_most = 0
    for start in range(0, total, _CHUNK):
        rows = min(_CHUNK, total - start)
        if exact:
            codes = np.arange(start, start + rows, dtype=np.int64)[:, None]
            swaps = ((codes >> np.arange(a.size, dtype=np.int64)) & 1).astype(float)
        else:
            swaps = _random_swaps(rng, rows, a.size)
        null = _swapped_differences(swaps, a, b, wa, wb)
        at_least += int((null >= observed - gamma).sum())
        at_most += int((null <= observed + gamma).sum())
    adjustment = 0 if exact else 1
    one_sided = min(at_least + adjustment, at_most + adjustment) / (total + adjustment)
    return min(2.0 * one_sided, 1.0)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm 1979): the i-th smallest of m p-values times (m - i + 1),
    kept non-decreasing and at most 1. A pair is declared different when its adjusted p is below alpha,
    which keeps the family-wise error rate at or below alpha. NaN entries (pairs not tested) stay NaN
    and are not counted in m."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, math.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = tested.size
    if m == 0:
        return adjusted
    order = tested[np.argsort(p[tested], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted
