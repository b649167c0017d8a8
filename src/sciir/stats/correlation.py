"""Correlation of automatic metrics with ratings: coefficients, intervals, group averages, comparisons.

- ``correlate``: Pearson r, Spearman rho and Kendall tau (variant ``b`` or ``c``, always named) with
  two-tailed p-values from scipy.stats, over the pairs where neither value is missing.
- ``correlation_table``: per metric, the pooled coefficients with seeded percentile-bootstrap intervals
  (images resampled with replacement); with a grouping column, also one row per group and one row
  averaging the groups, by Fisher z (tanh of the mean arctanh) or, on request, by the common shortcut
  that skips arctanh (tanh of the mean raw coefficient), so published numbers that used it can be matched.
- ``comparison_table``: for each pair of metrics on the same images, Williams' T2 test (Steiger 1980,
  eq. 7) of "both correlate equally with the ratings" and a paired bootstrap of the difference.

An undefined value (fewer than three pairs, a constant side) is NaN with a logged ``reason``: an
undefined correlation is never reported as 0.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
import pandas as pd
from scipy import stats

from sciir.stats.bootstrap import BootstrapConfig

logger = logging.getLogger(__name__)

MIN_PAIRS = 3
Coefficient = Literal["pearson", "spearman", "kendall"]
KendallVariant = Literal["b", "c"]
FisherZ = Literal["arctanh", "skip_arctanh"]
COEFFICIENTS: tuple[Coefficient, ...] = get_args(Coefficient)
POOLED, GROUP, GROUP_AVERAGE = "pooled", "group", "group_average"
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


@dataclass(frozen=True)
class CorrelationSettings:
    """How coefficients are computed, averaged over groups and given intervals."""

    kendall_variant: KendallVariant = "b"
    fisher_z: FisherZ = "arctanh"
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)


def value_column(coefficient: Coefficient, kendall_variant: KendallVariant = "b") -> str:
    """Table column of a coefficient; Kendall's names its variant (``kendall_tau_b`` / ``kendall_tau_c``)."""
    names = {"pearson": "pearson_r", "spearman": "spearman_rho", "kendall": f"kendall_tau_{kendall_variant}"}
    return names[coefficient]


def correlation_columns(kendall_variant: KendallVariant = "b") -> list[str]:
    """Columns of ``correlation_table``: per coefficient its value, p-value and interval."""
    columns = ["metric", "scope", "group", "averaging", "n"]
    for coefficient in COEFFICIENTS:
        columns += [
            value_column(coefficient, kendall_variant),
            f"{coefficient}_p",
            f"{coefficient}_ci_low",
            f"{coefficient}_ci_high",
        ]
    return [*columns, "reason"]


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


def _as_floats(values: Sequence[Any]) -> np.ndarray:
    """Numbers (or booleans) as floats, missing values (None, NaN, NA) as NaN; text raises."""
    return pd.Series(list(values), dtype="Float64").to_numpy(dtype=float, na_value=np.nan)


def _complete_rows(*columns: Sequence[Any]) -> tuple[list[np.ndarray], np.ndarray]:
    """Each column as a float array restricted to the rows where no column is missing, and that row mask."""
    arrays = [_as_floats(column) for column in columns]
    if len({array.size for array in arrays}) > 1:
        raise ValueError(f"cannot pair columns of sizes {[array.size for array in arrays]}")
    keep = ~np.any([np.isnan(array) for array in arrays], axis=0)
    return [array[keep] for array in arrays], keep


def _complete(*columns: Sequence[Any]) -> list[np.ndarray]:
    """Each column as a float array, keeping only the rows where no column is missing."""
    return _complete_rows(*columns)[0]


def _undefined_reason(columns: dict[str, np.ndarray]) -> str | None:
    """Why no correlation can be computed on these complete rows, or None when it can."""
    size = next(iter(columns.values())).size
    if size < MIN_PAIRS:
        return f"only {size} complete pairs (need at least {MIN_PAIRS})"
    constant = [name for name, values in columns.items() if np.all(values == values[0])]
    if constant:
        return f"{' and '.join(constant)} constant over all {size} pairs"
    return None


def _scipy_result(coefficient: Coefficient, xs: np.ndarray, ys: np.ndarray, variant: KendallVariant) -> Any:
    """scipy's result (statistic, two-tailed pvalue) for one coefficient."""
    if coefficient == "kendall":
        return stats.kendalltau(xs, ys, variant=variant)
    return {"pearson": stats.pearsonr, "spearman": stats.spearmanr}[coefficient](xs, ys)


def correlate(
    x: Sequence[float], y: Sequence[float], label: str = "metric", kendall_variant: KendallVariant = "b"
) -> Correlation:
    """Pearson, Spearman and Kendall (``kendall_variant``) between ``x`` and ``y`` with two-tailed p-values."""
    xs, ys = _complete(x, y)
    reason = _undefined_reason({"metric": xs, "rating": ys})
    if reason is not None:
        logger.warning("correlation of %s undefined: %s", label, reason)
        return Correlation(n=int(xs.size), kendall_variant=kendall_variant, reason=reason)
    results = {c: _scipy_result(c, xs, ys, kendall_variant) for c in COEFFICIENTS}
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


# ---- coefficients of many resamples at once (rows of two matrices)


def _constant_rows(matrix: np.ndarray) -> np.ndarray:
    return np.ptp(matrix, axis=1) == 0


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
    return _pearson_rows(stats.rankdata(xs, axis=1), stats.rankdata(ys, axis=1), variant)


def _kendall_rows(xs: np.ndarray, ys: np.ndarray, variant: KendallVariant) -> np.ndarray:
    """Kendall tau (``variant``) of each row pair; NaN where a row is constant."""
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


def stratified_indices(strata: np.ndarray, config: BootstrapConfig) -> np.ndarray:
    """``config.n_boot`` rows of image indices drawn with replacement within each stratum.

    Column j always draws from the stratum of image j, so the columns of one stratum form a
    resample of that stratum alone and its size stays fixed. With one stratum the rows are those
    of ``sciir.stats.bootstrap.resample_indices`` for the same seed.
    """
    rng = np.random.default_rng(config.seed)
    indices = np.empty((config.n_boot, strata.size), dtype=np.intp)
    for stratum in pd.unique(strata):
        members = np.flatnonzero(strata == stratum)
        indices[:, members] = members[rng.integers(0, members.size, size=(config.n_boot, members.size))]
    return indices


def percentile_interval(samples: np.ndarray, confidence: float, label: str) -> tuple[float, float]:
    """Equal-tailed percentile interval over the defined resamples (undefined ones are counted in the log)."""
    finite = samples[np.isfinite(samples)]
    if finite.size < samples.size:
        logger.warning(
            "%s: %d of %d bootstrap resamples undefined (a constant side); interval over the other %d",
            label,
            samples.size - finite.size,
            samples.size,
            finite.size,
        )
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


# ---- averaging over groups


def _tanh_mean(values: np.ndarray, fisher_z: FisherZ, axis: int | None = None) -> np.ndarray:
    """tanh of the mean of arctanh(values) (Fisher z) or, with ``skip_arctanh``, of the raw values."""
    with np.errstate(divide="ignore"):
        transformed = values if fisher_z == "skip_arctanh" else np.arctanh(values)
    return np.tanh(transformed.mean(axis=axis))


def average_correlations(values: Sequence[float], fisher_z: FisherZ = "arctanh") -> float:
    """Average of per-group coefficients: tanh(mean(arctanh r)) or, with ``skip_arctanh``, tanh(mean r).

    ``skip_arctanh`` reproduces a common mistake (the arctanh step left out); use it only to match
    published numbers that were computed that way.
    """
    return float(_tanh_mean(np.asarray(values, dtype=float), fisher_z))


# ---- the correlation table


def _row(
    metric: str,
    scope: str,
    group: Any,
    averaging: str,
    result: Correlation,
    intervals: dict[Coefficient, Any],
) -> dict[str, Any]:
    """One table row from a Correlation and its intervals."""
    row: dict[str, Any] = {"metric": metric, "scope": scope, "group": group, "averaging": averaging}
    row["n"] = result.n
    for coefficient in COEFFICIENTS:
        low, high = intervals.get(coefficient, (math.nan, math.nan))
        row[value_column(coefficient, result.kendall_variant)] = result.value(coefficient)
        row[f"{coefficient}_p"] = result.pvalue(coefficient)
        row[f"{coefficient}_ci_low"], row[f"{coefficient}_ci_high"] = low, high
    row["reason"] = result.reason
    return row


def _intervals(
    xs: np.ndarray, ys: np.ndarray, indices: np.ndarray, settings: CorrelationSettings, label: str
) -> dict[Coefficient, tuple[float, float]]:
    """Bootstrap interval of each coefficient over the given resamples."""
    return {
        c: percentile_interval(
            resampled(c, xs, ys, indices, settings.kendall_variant),
            settings.bootstrap.confidence,
            f"{label} {value_column(c, settings.kendall_variant)}",
        )
        for c in COEFFICIENTS
    }


def _group_rows(
    metric: str, xs: np.ndarray, ys: np.ndarray, groups: np.ndarray, settings: CorrelationSettings
) -> list[dict[str, Any]]:
    """One row per group and one row averaging the groups where the correlation is defined.

    Images without a group label are left out of these rows (they stay in the pooled row); their
    number is logged.
    """
    labelled = ~pd.isna(groups)
    if not labelled.all():
        logger.warning(
            "%s: %d images have no group and are left out of the group rows", metric, (~labelled).sum()
        )
        xs, ys, groups = xs[labelled], ys[labelled], groups[labelled]
    indices = stratified_indices(groups, settings.bootstrap)
    rows, defined = [], []
    for group in sorted(pd.unique(groups), key=str):
        members = np.flatnonzero(groups == group)
        label = f"{metric} [{group}]"
        result = correlate(xs[members], ys[members], label, settings.kendall_variant)
        columns = indices[:, members]
        intervals = {} if result.reason else _intervals(xs, ys, columns, settings, label)
        rows.append(_row(metric, GROUP, group, "none", result, intervals))
        if result.reason is None:
            defined.append((result, columns))
    rows.append(_average_row(metric, xs, ys, defined, len(rows), settings))
    return rows


def _average_row(
    metric: str,
    xs: np.ndarray,
    ys: np.ndarray,
    defined: list[tuple[Correlation, np.ndarray]],
    n_groups: int,
    settings: CorrelationSettings,
) -> dict[str, Any]:
    """The group-average row: coefficients averaged as configured, p-values NaN (no test of an average)."""
    averaging = f"fisher_z:{settings.fisher_z}"
    if not defined:
        reason = f"no group has a defined correlation (of {n_groups} groups)"
        logger.warning("group average of %s undefined: %s", metric, reason)
        undefined = Correlation(n=0, kendall_variant=settings.kendall_variant, reason=reason)
        return _row(metric, GROUP_AVERAGE, None, averaging, undefined, {})
    excluded = n_groups - len(defined)
    reason = f"{excluded} of {n_groups} groups undefined and left out of the average" if excluded else None
    values, intervals = {}, {}
    for coefficient in COEFFICIENTS:
        values[coefficient] = average_correlations(
            [r.value(coefficient) for r, _ in defined], settings.fisher_z
        )
        per_group = [resampled(coefficient, xs, ys, cols, settings.kendall_variant) for _, cols in defined]
        intervals[coefficient] = percentile_interval(
            _tanh_mean(np.vstack(per_group), settings.fisher_z, axis=0),
            settings.bootstrap.confidence,
            f"{metric} average",
        )
    average = Correlation(
        n=sum(result.n for result, _ in defined),
        kendall_variant=settings.kendall_variant,
        pearson_r=values["pearson"],
        spearman_rho=values["spearman"],
        kendall_tau=values["kendall"],
        reason=reason,
    )
    return _row(metric, GROUP_AVERAGE, None, averaging, average, intervals)


def metric_rows(
    metric: str,
    x: Sequence[float],
    y: Sequence[float],
    settings: CorrelationSettings,
    groups: Sequence[Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``correlation_table`` for one metric: pooled, then per group and their average when grouped."""
    (xs, ys), keep = _complete_rows(x, y)
    pooled = correlate(xs, ys, metric, settings.kendall_variant)
    intervals = {}
    if pooled.reason is None:
        indices = stratified_indices(np.zeros(xs.size), settings.bootstrap)
        intervals = _intervals(xs, ys, indices, settings, metric)
    rows = [_row(metric, POOLED, None, "none", pooled, intervals)]
    if groups is not None:
        labels = np.asarray(list(groups), dtype=object)[keep]
        rows += _group_rows(metric, xs, ys, labels, settings)
    return rows


def correlation_table(
    frame: pd.DataFrame,
    metrics: Sequence[str],
    rating: str,
    settings: CorrelationSettings | None = None,
    group_by: str | None = None,
) -> pd.DataFrame:
    """Each metric column of ``frame`` against its ``rating`` column (columns: ``correlation_columns``)."""
    settings = settings or CorrelationSettings()
    groups = frame[group_by] if group_by else None
    rows = [
        row
        for metric in metrics
        for row in metric_rows(metric, frame[metric], frame[rating], settings, groups)
    ]
    return pd.DataFrame(rows, columns=correlation_columns(settings.kendall_variant))


# ---- is one metric closer to the ratings than another?


def williams_test(r_a: float, r_b: float, r_ab: float, n: int) -> tuple[float, float]:
    """Williams' T2 (Steiger 1980, eq. 7) for H0: rho(y, a) == rho(y, b), both measured on the same n images.

    ``r_a`` and ``r_b`` correlate the two metrics with the shared variable y (the ratings), ``r_ab``
    the metrics with each other. Returns (t, two-tailed p) with n - 3 degrees of freedom. Raises
    ValueError when the test is undefined (n <= 3, or metrics that agree perfectly: r_ab = 1).
    """
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
    a: Sequence[float],
    b: Sequence[float],
    y: Sequence[float],
    coefficient: Coefficient,
    settings: CorrelationSettings,
) -> dict[str, Any]:
    """Does metric a correlate with ratings y better than metric b, on the images where all three exist?

    Williams' test applies to Pearson-type coefficients: Pearson r, and Spearman rho (Pearson r of
    ranks, the usual practice). For Kendall's tau only the paired bootstrap is given.
    """
    column = value_column(coefficient, settings.kendall_variant)
    xa, xb, ys = _complete(a, b, y)
    row: dict[str, Any] = dict.fromkeys(COMPARISON_COLUMNS, math.nan)
    row |= {
        "metric_a": names[0],
        "metric_b": names[1],
        "coefficient": column,
        "n": int(ys.size),
        "reason": None,
    }
    reason = _undefined_reason({names[0]: xa, names[1]: xb, "rating": ys})
    if reason is not None:
        logger.warning("comparison of %s and %s undefined: %s", *names, reason)
        return row | {"reason": reason}

    def point(u: np.ndarray, v: np.ndarray) -> float:
        return float(_scipy_result(coefficient, u, v, settings.kendall_variant).statistic)

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


def mean_ratings(ratings: pd.DataFrame) -> pd.DataFrame:
    """Consensus per image: the mean score over its raters (columns image_id, rating, n_raters)."""
    grouped = ratings.groupby("image_id", sort=True)["score"]
    return pd.DataFrame({"rating": grouped.mean(), "n_raters": grouped.size()}).reset_index()
