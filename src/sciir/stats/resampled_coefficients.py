"""Correlation coefficients of many bootstrap resamples at once, one resample a row of two matrices.

Pearson r of each row pair is computed in one vectorised pass, Spearman rho as Pearson r of the
(average-tie) ranks; Kendall tau calls scipy per row. A row where one side is constant is NaN, so the
interval over the resamples (``sciir.stats.bootstrap.percentile_interval``) counts it as undefined.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from sciir.stats.correlation import Coefficient, KendallVariant


def _constant_rows(matrix: np.ndarray) -> np.ndarray:
    constant: np.ndarray = np.ptp(matrix, axis=1) == 0
    return constant


def _pearson_rows(xs: np.ndarray, ys: np.ndarray, _variant: KendallVariant) -> np.ndarray:
    """Pearson r of each row pair; NaN where a row is constant."""
    xc = xs - xs.mean(axis=1, keepdims=True)
    yc = ys - ys.mean(axis=1, keepdims=True)
    undefined = _constant_rows(xs) | _constant_rows(ys)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    return np.where(undefined, np.nan, np.clip(r, -1.0, 1.0))


def _spearman_rows(xs: np.ndarray, ys: np.ndarray, variant: KendallVariant) -> np.ndarray:
    """Spearman rho of each row pair: Pearson r of the (average-tie) ranks."""
    from scipy import stats

    return _pearson_rows(stats.rankdata(xs, axis=1), stats.rankdata(ys, axis=1), variant)


def _kendall_rows(xs: np.ndarray, ys: np.ndarray, variant: KendallVariant) -> np.ndarray:
    """Kendall tau (``variant``) of each row pair; NaN where a row is constant."""
    from scipy import stats

    undefined = _constant_rows(xs) | _constant_rows(ys)
    return np.array(
        [
            math.nan if skip else stats.kendalltau(x, y, variant=variant).statistic
            for x, y, skip in zip(xs, ys, undefined, strict=True)
        ]
    )


_ROWS: dict[Coefficient, Callable[[np.ndarray, np.ndarray, KendallVariant], np.ndarray]] = {
    "pearson": _pearson_rows,
    "spearman": _spearman_rows,
    "kendall": _kendall_rows,
}


def resampled(
    coefficient: Coefficient, xs: np.ndarray, ys: np.ndarray, indices: np.ndarray, variant: KendallVariant
) -> np.ndarray:
    """The coefficient on each resample (one row of ``indices`` per resample)."""
    return _ROWS[coefficient](xs[indices], ys[indices], variant)
