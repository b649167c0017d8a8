"""Correlation of an automatic metric with ratings: Pearson r, Spearman rho and Kendall tau-b.

Each coefficient comes with its two-tailed p-value (scipy.stats) and the number of pairs used.
Pairs with a missing value on either side are left out of n. When a coefficient is undefined
(fewer than three pairs, or one side constant) every value is NaN and the reason is logged and
returned: an undefined correlation is never reported as 0.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

logger = logging.getLogger(__name__)

MIN_PAIRS = 3
CORRELATION_COLUMNS = (
    "metric",
    "n",
    "pearson_r",
    "pearson_p",
    "spearman_rho",
    "spearman_p",
    "kendall_tau_b",
    "kendall_p",
)


@dataclass(frozen=True)
class Correlation:
    """Three correlation coefficients with two-tailed p-values over ``n`` pairs; ``reason`` when undefined."""

    n: int
    pearson_r: float = math.nan
    pearson_p: float = math.nan
    spearman_rho: float = math.nan
    spearman_p: float = math.nan
    kendall_tau_b: float = math.nan
    kendall_p: float = math.nan
    reason: str | None = None


def _as_floats(values: Sequence[float]) -> np.ndarray:
    """Numbers (or booleans) as floats, missing values (None, NaN, NA) as NaN; text raises."""
    return pd.Series(list(values), dtype="Float64").to_numpy(dtype=float, na_value=np.nan)


def _paired(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Both sides as float arrays, keeping only pairs where neither value is missing."""
    xs, ys = _as_floats(x), _as_floats(y)
    if xs.shape != ys.shape:
        raise ValueError(f"cannot correlate {xs.size} values with {ys.size} values")
    keep = ~(np.isnan(xs) | np.isnan(ys))
    return xs[keep], ys[keep]


def _undefined_reason(xs: np.ndarray, ys: np.ndarray) -> str | None:
    """Why no correlation can be computed on these pairs, or None when it can."""
    if xs.size < MIN_PAIRS:
        return f"only {xs.size} complete pairs (need at least {MIN_PAIRS})"
    constant = [name for name, values in (("metric", xs), ("rating", ys)) if np.all(values == values[0])]
    if constant:
        return f"{' and '.join(constant)} constant over all {xs.size} pairs"
    return None


def correlate(x: Sequence[float], y: Sequence[float], label: str = "metric") -> Correlation:
    """Pearson, Spearman and Kendall tau-b between ``x`` and ``y`` with two-tailed p-values."""
    xs, ys = _paired(x, y)
    reason = _undefined_reason(xs, ys)
    if reason is not None:
        logger.warning("correlation of %s undefined: %s", label, reason)
        return Correlation(n=int(xs.size), reason=reason)
    pearson = stats.pearsonr(xs, ys)
    spearman = stats.spearmanr(xs, ys)
    kendall = stats.kendalltau(xs, ys, variant="b")
    return Correlation(
        n=int(xs.size),
        pearson_r=float(pearson.statistic),
        pearson_p=float(pearson.pvalue),
        spearman_rho=float(spearman.statistic),
        spearman_p=float(spearman.pvalue),
        kendall_tau_b=float(kendall.statistic),
        kendall_p=float(kendall.pvalue),
    )


def correlation_table(frame: pd.DataFrame, metrics: Sequence[str], rating: str) -> pd.DataFrame:
    """One row per metric column of ``frame`` correlated with its ``rating`` column (columns as the contract)."""
    rows = []
    for metric in metrics:
        result = asdict(correlate(frame[metric], frame[rating], label=metric))
        result.pop("reason")
        rows.append({"metric": metric, **result})
    return pd.DataFrame(rows, columns=list(CORRELATION_COLUMNS))


def mean_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """Consensus per image: the mean score over its raters (columns image_id, rating, n_raters)."""
    grouped = ratings.groupby("image_id", sort=True)["score"]
    return pd.DataFrame({"rating": grouped.mean(), "n_raters": grouped.size()}).reset_index()
