"""Ranks with bootstrap intervals, as Chatbot Arena reports them (Chiang et al. 2024, "Chatbot Arena").

Each model's score is a weighted mean over the benchmark items (``sciir.stats.bootstrap``). The items are
resampled with replacement, the same resample for every model (the seeded indices of
``resample_indices``), every model's score is recomputed on it and the models are ranked: a model's rank
is 1 + the number of models whose score is higher (tied models share the better rank). A model's rank
interval is the equal-tailed range of its ranks over the resamples (the lower and higher order
statistics, so its ends are ranks). The interval says how stable a model's place is when the items
change; whether two models differ is the paired test's question (``sciir.stats.paired``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from sciir.stats.bootstrap import BootstrapConfig, resample_indices

logger = logging.getLogger(__name__)

# Scores closer than this are a tie (one sum of the same weights can round differently).
_TIE = 1e-12


@dataclass(frozen=True)
class RankIntervals:
    """Per model (in the columns' order): its rank on all items, the ends of its rank interval, and the
    number of resamples the interval is over (those where every model has a score)."""

    rank: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_resamples: int


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1 + the number of higher scores, along the last axis (ties share the better rank)."""
    scores = np.asarray(scores, dtype=float)
    higher = scores[..., None, :] > scores[..., :, None] + _TIE
    return np.asarray(1 + higher.sum(axis=-1))


def rank_intervals(scores: np.ndarray, weights: np.ndarray, config: BootstrapConfig) -> RankIntervals:
    """Rank intervals of the models (columns) from their results on the items (rows): ``scores[i, j]``
    is model j's score on item i and ``weights[i, j]`` its weight (0 where it has no result; its score
    is then ignored). A resample in which a model has no weight leaves every model's rank undefined
    there; the intervals are over the other resamples (how many are left out is logged). Every model
    needs a result on at least one item."""
    scores = np.nan_to_num(np.asarray(scores, dtype=float))
    weights = np.asarray(weights, dtype=float)
    if scores.shape != weights.shape or scores.ndim != 2:
        raise ValueError(f"scores and weights are items x models, got {scores.shape} and {weights.shape}")
    if (weights.sum(axis=0) <= 0).any():
        raise ValueError("every ranked model needs a result on at least one item")
    observed = (scores * weights).sum(axis=0) / weights.sum(axis=0)
    indices = resample_indices(scores.shape[0], config)
    numerators = np.stack(
        [(scores[:, j] * weights[:, j])[indices].sum(axis=1) for j in range(scores.shape[1])]
    )
    denominators = np.stack([weights[:, j][indices].sum(axis=1) for j in range(scores.shape[1])])
    defined = (denominators > 0).all(axis=0)
    if not defined.all():
        logger.warning(
            "rank intervals: %d of %d resamples leave a model without a scored item; intervals over the other %d",
            int((~defined).sum()),
            defined.size,
            int(defined.sum()),
        )
    resampled = (numerators[:, defined] / denominators[:, defined]).T
    ranks = competition_ranks(resampled)
    tail = (1.0 - config.confidence) / 2.0
    if ranks.shape[0] == 0:
        nan = np.full(scores.shape[1], math.nan)
        return RankIntervals(competition_ranks(observed), nan, nan, 0)
    low = np.quantile(ranks, tail, axis=0, method="lower")
    high = np.quantile(ranks, 1.0 - tail, axis=0, method="higher")
    return RankIntervals(competition_ranks(observed), low, high, int(ranks.shape[0]))
