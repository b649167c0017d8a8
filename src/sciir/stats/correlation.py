"""Correlation of an automatic metric with ratings: Pearson r, Spearman rho and Kendall tau.

``correlate`` gives the three coefficients (Kendall's variant ``b`` or ``c``, always named) with
two-tailed p-values from scipy.stats, over the pairs where neither value is missing. An undefined value
(fewer than three pairs, a constant side) is NaN with a logged ``reason``: an undefined correlation is
never reported as 0. The table of many metrics with bootstrap intervals and group averages is
``sciir.stats.correlation_table``; the comparison of two metrics is ``sciir.stats.metric_comparison``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

MIN_PAIRS = 3
Coefficient = Literal["pearson", "spearman", "kendall"]
KendallVariant = Literal["b", "c"]
COEFFICIENTS: tuple[Coefficient, ...] = get_args(Coefficient)


def value_column(coefficient: Coefficient, kendall_variant: KendallVariant = "b") -> str:
    """Table column of a coefficient; Kendall's names its variant (``kendall_tau_b`` / ``kendall_tau_c``)."""
    names = {"pearson": "pearson_r", "spearman": "spearman_rho", "kendall": f"kendall_tau_{kendall_variant}"}
    return names[coefficient]


@dataclass(frozen=True)
class Correlation:
    """The three coefficients with two-tailed p-values over ``n`` pairs; ``reason`` when undefined."""

    n: int
    kendall_variant: KendallVariant = "b"
    pearson_r: float = math.nan
    pearson_p: float = math.nan
    spearman_rho: float = math.nan
    spearman_p: float = math.nan
    kendall_tau: float = math.nan
    kendall_p: float = math.nan
    reason: str | None = None

    def value(self, coefficient: Coefficient) -> float:
        """The coefficient's value (``pearson_r``, ``spearman_rho`` or ``kendall_tau``)."""
        return {"pearson": self.pearson_r, "spearman": self.spearman_rho, "kendall": self.kendall_tau}[
            coefficient
        ]

    def pvalue(self, coefficient: Coefficient) -> float:
        """The coefficient's two-tailed p-value."""
        return {"pearson": self.pearson_p, "spearman": self.spearman_p, "kendall": self.kendall_p}[
            coefficient
        ]


def _as_floats(values: Iterable[Any]) -> np.ndarray:
    """Numbers (or booleans) as floats, missing values (None, NaN, NA) as NaN; text raises."""
    return pd.Series(list(values), dtype="Float64").to_numpy(dtype=float, na_value=np.nan)


def complete_columns_with_mask(*columns: Iterable[Any]) -> tuple[list[np.ndarray], np.ndarray]:
    """Each column as a float array restricted to the rows where no column is missing, and that row mask."""
    arrays = [_as_floats(column) for column in columns]
    if len({array.size for array in arrays}) > 1:
        raise ValueError(f"cannot pair columns of sizes {[array.size for array in arrays]}")
    keep = ~np.any([np.isnan(array) for array in arrays], axis=0)
    return [array[keep] for array in arrays], keep


def complete_columns(*columns: Iterable[Any]) -> list[np.ndarray]:
    """Each column as a float array, keeping only the rows where no column is missing."""
    return complete_columns_with_mask(*columns)[0]


def undefined_reason(columns: dict[str, np.ndarray]) -> str | None:
    """Why no correlation can be computed on these complete rows, or None when it can."""
    size = next(iter(columns.values())).size
    if size < MIN_PAIRS:
        return f"only {size} complete pairs (need at least {MIN_PAIRS})"
    constant = [name for name, values in columns.items() if np.all(values == values[0])]
    if constant:
        return f"{' and '.join(constant)} constant over all {size} pairs"
    return None


def scipy_result(coefficient: Coefficient, xs: np.ndarray, ys: np.ndarray, variant: KendallVariant) -> Any:
    """scipy's result (statistic, two-tailed pvalue) for one coefficient."""
    from scipy import stats

    if coefficient == "kendall":
        return stats.kendalltau(xs, ys, variant=variant)
    return {"pearson": stats.pearsonr, "spearman": stats.spearmanr}[coefficient](xs, ys)


def correlate(
    x: Iterable[float], y: Iterable[float], label: str = "metric", kendall_variant: KendallVariant = "b"
) -> Correlation:
    """Pearson, Spearman and Kendall (``kendall_variant``) between ``x`` and ``y`` with two-tailed p-values."""
    xs, ys = complete_columns(x, y)
    reason = undefined_reason({"metric": xs, "rating": ys})
    if reason is not None:
        logger.warning("correlation of %s undefined: %s", label, reason)
        return Correlation(n=int(xs.size), kendall_variant=kendall_variant, reason=reason)
    results = {c: scipy_result(c, xs, ys, kendall_variant) for c in COEFFICIENTS}
    return Correlation(
        n=int(xs.size),
        kendall_variant=kendall_variant,
        pearson_r=float(results["pearson"].statistic),
        pearson_p=float(results["pearson"].pvalue),
        spearman_rho=float(results["spearman"].statistic),
        spearman_p=float(results["spearman"].pvalue),
        kendall_tau=float(results["kendall"].statistic),
        kendall_p=float(results["kendall"].pvalue),
    )
