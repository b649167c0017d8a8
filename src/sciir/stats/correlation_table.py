"""The ``correlations`` table: per metric, coefficients with ratings and their bootstrap intervals.

``correlation_table`` gives, per metric, the pooled coefficients (``sciir.stats.correlation``) with
seeded percentile-bootstrap intervals (images resampled with replacement); with a grouping column, also
one row per group and one row averaging the groups, by Fisher z (tanh of the mean arctanh) or, on
request, by the common shortcut that skips arctanh (tanh of the mean raw coefficient), so published
numbers that used it can be matched.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from sciir.stats.bootstrap import BootstrapConfig, percentile_interval, stratified_indices
from sciir.stats.correlation import (
    COEFFICIENTS,
    Coefficient,
    Correlation,
    KendallVariant,
    complete_columns_with_mask,
    correlate,
    value_column,
)
from sciir.stats.resampled_coefficients import resampled

logger = logging.getLogger(__name__)

FisherZ = Literal["arctanh", "skip_arctanh"]
POOLED, GROUP, GROUP_AVERAGE = "pooled", "group", "group_average"


@dataclass(frozen=True)
class CorrelationSettings:
    """How coefficients are computed, averaged over groups and given intervals."""

    kendall_variant: KendallVariant = "b"
    fisher_z: FisherZ = "arctanh"
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)


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


def _tanh_mean(values: np.ndarray, fisher_z: FisherZ, axis: int | None = None) -> np.ndarray:
    """tanh of the mean of arctanh(values) (Fisher z) or, with ``skip_arctanh``, of the raw values."""
    with np.errstate(divide="ignore"):
        transformed = values if fisher_z == "skip_arctanh" else np.arctanh(values)
    averaged: np.ndarray = np.tanh(transformed.mean(axis=axis))
    return averaged


def average_correlations(values: Sequence[float], fisher_z: FisherZ = "arctanh") -> float:
    """Average of per-group coefficients: tanh(mean(arctanh r)) or, with ``skip_arctanh``, tanh(mean r).

    ``skip_arctanh`` reproduces a common mistake (the arctanh step left out); use it only to match
    published numbers that were computed that way.
    """
    return float(_tanh_mean(np.asarray(values, dtype=float), fisher_z))


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
        reason: str | None = f"no group has a defined correlation (of {n_groups} groups)"
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
    x: Iterable[float],
    y: Iterable[float],
    settings: CorrelationSettings,
    groups: Iterable[Any] | None = None,
) -> list[dict[str, Any]]:
    """Rows of ``correlation_table`` for one metric: pooled, then per group and their average when grouped."""
    (xs, ys), keep = complete_columns_with_mask(x, y)
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
