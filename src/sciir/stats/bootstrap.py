"""Seeded percentile bootstrap over benchmark samples for weighted means.

Every score of the leaderboard is a weighted mean over samples: sum(score x weight) / sum(weight)
(see ``sciir.evaluation.aggregation``). Its interval resamples the samples with replacement and takes the
equal-tailed percentiles of the statistic over the resamples; a resample in which no sample carries
weight has no statistic and is left out.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


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
