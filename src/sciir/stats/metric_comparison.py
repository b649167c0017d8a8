"""Is one metric closer to the ratings than another, on the same images?

``comparison_table`` compares each pair of metrics: Williams' T2 test (Steiger 1980, eq. 7) of "both
correlate equally with the ratings" and a paired bootstrap of the difference of their coefficients.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sciir.stats.bootstrap import percentile_interval, stratified_indices
from sciir.stats.correlation import (
    Coefficient,
    complete_columns,
    scipy_result,
    undefined_reason,
    value_column,
)
from sciir.stats.correlation_table import CorrelationSettings
from sciir.stats.resampled_coefficients import resampled

logger = logging.getLogger(__name__)

COMPARISON_COLUMNS = (
    "metric_a",
    "metric_b",
    "coefficient",
    "n",
    "r_a",
    "r_b",
    "r_ab",
    "difference",
    "williams_t",
    "williams_df",
    "williams_p",
    "bootstrap_ci_low",
    "bootstrap_ci_high",
    "bootstrap_p",
    "reason",
)


def williams_test(r_a: float, r_b: float, r_ab: float, n: int) -> tuple[float, float]:
    """Williams' T2 (Steiger 1980, eq. 7) for H0: rho(y, a) == rho(y, b), both measured on the same n images.

    ``r_a`` and ``r_b`` correlate the two metrics with the shared variable y (the ratings), ``r_ab``
    the metrics with each other. Returns (t, two-tailed p) with n - 3 degrees of freedom. Raises
    ValueError when the test is undefined (n <= 3, or metrics that agree perfectly: r_ab = 1).
    """
    from scipy import stats

    if n <= 3:
        raise ValueError(f"Williams' test needs more than 3 images, got {n}")
    determinant = 1 - r_a**2 - r_b**2 - r_ab**2 + 2 * r_a * r_b * r_ab
    mean = (r_a + r_b) / 2
    denominator = 2 * (n - 1) / (n - 3) * determinant + mean**2 * (1 - r_ab) ** 3
    if denominator <= 0 or 1 + r_ab <= 0:
        raise ValueError(f"Williams' test undefined for r_a={r_a:.4g}, r_b={r_b:.4g}, r_ab={r_ab:.4g}")
    t = (r_a - r_b) * math.sqrt((n - 1) * (1 + r_ab) / denominator)
    return t, float(2 * stats.t.sf(abs(t), n - 3))


def _bootstrap_difference(
    a: np.ndarray,
    b: np.ndarray,
    y: np.ndarray,
    coefficient: Coefficient,
    settings: CorrelationSettings,
    label: str,
) -> tuple[float, float, float]:
    """Paired bootstrap of r(a, y) - r(b, y) on shared resamples: (low, high, two-sided p of "no difference")."""
    indices = stratified_indices(np.zeros(y.size), settings.bootstrap)
    differences = resampled(coefficient, a, y, indices, settings.kendall_variant) - resampled(
        coefficient, b, y, indices, settings.kendall_variant
    )
    low, high = percentile_interval(differences, settings.bootstrap.confidence, label)
    finite = differences[np.isfinite(differences)]
    if finite.size == 0:
        return low, high, math.nan
    # (k + 1) / (B + 1): a p-value from B resamples is never below 1 / (B + 1).
    tail = min(np.sum(finite <= 0), np.sum(finite >= 0))
    return low, high, float(min(1.0, 2 * (tail + 1) / (finite.size + 1)))


def compare_pair(
    names: tuple[str, str],
    a: Iterable[float],
    b: Iterable[float],
    y: Iterable[float],
    coefficient: Coefficient,
    settings: CorrelationSettings,
) -> dict[str, Any]:
    """Does metric a correlate with ratings y better than metric b, on the images where all three exist?

    Williams' test applies to Pearson-type coefficients: Pearson r, and Spearman rho (Pearson r of
    ranks, the usual practice). For Kendall's tau only the paired bootstrap is given.
    """
    column = value_column(coefficient, settings.kendall_variant)
    xa, xb, ys = complete_columns(a, b, y)
    row: dict[str, Any] = dict.fromkeys(COMPARISON_COLUMNS, math.nan)
    row |= {
        "metric_a": names[0],
        "metric_b": names[1],
        "coefficient": column,
        "n": int(ys.size),
        "reason": None,
    }
    reason = undefined_reason({names[0]: xa, names[1]: xb, "rating": ys})
    if reason is not None:
        logger.warning("comparison of %s and %s undefined: %s", *names, reason)
        return row | {"reason": reason}

    def point(u: np.ndarray, v: np.ndarray) -> float:
        return float(scipy_result(coefficient, u, v, settings.kendall_variant).statistic)

    row |= {"r_a": point(xa, ys), "r_b": point(xb, ys), "r_ab": point(xa, xb)}
    row["difference"] = row["r_a"] - row["r_b"]
    label = f"{names[0]} vs {names[1]} {column} difference"
    row["bootstrap_ci_low"], row["bootstrap_ci_high"], row["bootstrap_p"] = _bootstrap_difference(
        xa, xb, ys, coefficient, settings, label
    )
    if coefficient == "kendall":
        return row | {"reason": "Williams' test needs Pearson-type coefficients; see the paired bootstrap"}
    try:
        row["williams_t"], row["williams_p"] = williams_test(row["r_a"], row["r_b"], row["r_ab"], ys.size)
        row["williams_df"] = ys.size - 3
    except ValueError as exc:
        logger.warning("%s vs %s: %s", *names, exc)
        row["reason"] = str(exc)
    return row


def comparison_table(
    frame: pd.DataFrame,
    metrics: Sequence[str],
    rating: str,
    coefficient: Coefficient = "pearson",
    settings: CorrelationSettings | None = None,
) -> pd.DataFrame:
    """Every pair of metrics compared on their correlation with ``rating`` (columns: ``COMPARISON_COLUMNS``)."""
    settings = settings or CorrelationSettings()
    rows = [
        compare_pair((a, b), frame[a], frame[b], frame[rating], coefficient, settings)
        for a, b in itertools.combinations(metrics, 2)
    ]
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
