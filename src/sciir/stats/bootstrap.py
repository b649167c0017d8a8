"""Seeded percentile bootstrap: resampled indices (plain, or within strata) and percentile intervals.

Every score of the leaderboard is a weighted mean over samples: sum(score x weight) / sum(weight)
(see ``sciir.evaluation.aggregation``). Its interval resamples the samples with replacement and takes the
equal-tailed percentiles of the statistic over the resamples; a resample in which no sample carries
weight has no statistic and is left out. Correlations (``sciir.stats.correlation_table``) resample
images within strata (``stratified_indices``) and take the interval over the resamples where the
coefficient is defined (``percentile_interval``).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

logger = logging.getLogger(__name__)


class BootstrapConfig(BaseModel):
    """``n_boot`` resamples drawn from ``seed``; a ``confidence`` equal-tailed percentile interval."""

    model_config = ConfigDict(extra="forbid")

    n_boot: int = Field(default=1000, ge=1)
    seed: int = 0
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)


def resample_indices(n_units: int, config: BootstrapConfig) -> np.ndarray:
    """``n_boot`` rows of ``n_units`` unit indices drawn with replacement, from the configured seed.

    The same seed gives the same rows for every table of the same size, so intervals are repeatable
    and do not depend on the order in which tables are processed.
    """
    rng = np.random.default_rng(config.seed)
    return rng.integers(0, n_units, size=(config.n_boot, n_units))


def weighted_mean_interval(
    values: np.ndarray, weights: np.ndarray, config: BootstrapConfig
) -> tuple[float, float]:
    """Percentile interval of sum(value x weight) / sum(weight) when the units are resampled.

    Units with zero weight (e.g. samples with nothing judged) are resampled too, so the number of
    scored samples varies between resamples as it would between benchmarks. NaN values must carry
    zero weight. Returns (NaN, NaN) when no resample has weight.
    """
    values = np.nan_to_num(np.asarray(values, dtype=float))
    weights = np.asarray(weights, dtype=float)
    if weights.size == 0 or weights.sum() <= 0:
        return math.nan, math.nan
    indices = resample_indices(weights.size, config)
    numerators = (values * weights)[indices].sum(axis=1)
    denominators = weights[indices].sum(axis=1)
    defined = denominators > 0
    statistics = numerators[defined] / denominators[defined]
    tail = (1.0 - config.confidence) / 2.0
    low, high = np.quantile(statistics, [tail, 1.0 - tail])
    return float(low), float(high)


def stratified_indices(strata: np.ndarray, config: BootstrapConfig) -> np.ndarray:
    """``config.n_boot`` rows of image indices drawn with replacement within each stratum.

    Column j always draws from the stratum of image j, so the columns of one stratum form a
    resample of that stratum alone and its size stays fixed. With one stratum the rows are those
    of ``resample_indices`` for the same seed.
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
