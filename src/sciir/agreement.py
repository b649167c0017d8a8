"""Agreement between raters: Krippendorff's alpha and the mean pairwise Spearman correlation.

Krippendorff's alpha follows its definition (Krippendorff 2011, "Computing Krippendorff's
Alpha-Reliability"): from the reliability data (images x raters, missing ratings allowed) build the
coincidence matrix o_ck of pairable values (each image with m >= 2 ratings adds 1 / (m - 1) for every
ordered pair of its values), its marginals n_c and total n, then

    alpha = 1 - (n - 1) * sum_ck o_ck delta2_ck / sum_ck n_c n_k delta2_ck

with the difference function delta2 of the level of measurement: nominal (c != k), ordinal
(sum of the marginals from c to k minus half of n_c and n_k, squared), interval ((c - k)^2) or ratio
(((c - k) / (c + k))^2). Images with a single rating are not pairable and do not count.

With fewer than two raters, no pairable image or no variation at all, a value is NaN with a
logged reason (e.g. the embedded sample has one oracle rater: agreement is not applicable).
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from sciir.statistics import correlate

logger = logging.getLogger(__name__)

Level = Literal["nominal", "ordinal", "interval", "ratio"]
AGREEMENT_COLUMNS = ("statistic", "level", "value", "n_units", "n_raters", "n_used", "used", "reason")


@dataclass(frozen=True)
class Agreement:
    """One agreement statistic; ``n_used`` counts what it was computed from (``used`` says what)."""

    statistic: str
    level: str | None
    value: float
    n_units: int
    n_raters: int
    n_used: int
    used: str
    reason: str | None = None


def reliability_matrix(ratings: pd.DataFrame) -> pd.DataFrame:
    """Images x raters table of scores (NaN where a rater did not rate an image).

    Raises ValueError naming the pairs when a rater rated the same image more than once.
    """
    duplicated = ratings[ratings.duplicated(["image_id", "rater_id"], keep=False)]
    if not duplicated.empty:
        pairs = sorted(set(zip(duplicated["image_id"], duplicated["rater_id"], strict=True)))
        raise ValueError(f"raters rated the same image more than once: {pairs[:5]} ({len(pairs)} pairs)")
    return ratings.pivot(index="image_id", columns="rater_id", values="score").astype(float)


def coincidence_matrix(units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values and the coincidence matrix of an images x raters array (NaN = missing)."""
    values = np.unique(units[~np.isnan(units)])
    # counts[u, c]: how many raters gave value c to image u
    counts = np.stack([(units == value).sum(axis=1) for value in values], axis=1).astype(float)
    pairable = counts.sum(axis=1)
    counts = counts[pairable >= 2]
    weights = counts / (counts.sum(axis=1, keepdims=True) - 1)
    # sum over images of n_uc * n_uk / (m_u - 1), minus the pairings of a value with itself
    return values, counts.T @ weights - np.diag(weights.sum(axis=0))


def _nominal(values: np.ndarray, _marginals: np.ndarray) -> np.ndarray:
    return (values[:, None] != values[None, :]).astype(float)


def _ordinal(_values: np.ndarray, marginals: np.ndarray) -> np.ndarray:
    index = np.arange(marginals.size)
    low, high = np.minimum.outer(index, index), np.maximum.outer(index, index)
    cumulative = np.cumsum(marginals)
    between = cumulative[high] - cumulative[low] + marginals[low]  # sum of n_g for g from low to high
    return (between - (marginals[low] + marginals[high]) / 2) ** 2


def _interval(values: np.ndarray, _marginals: np.ndarray) -> np.ndarray:
    return (values[:, None] - values[None, :]) ** 2


def _ratio(values: np.ndarray, _marginals: np.ndarray) -> np.ndarray:
    total = values[:, None] + values[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = ((values[:, None] - values[None, :]) / total) ** 2
    return np.where(total == 0, 0.0, delta)


DIFFERENCES: dict[Level, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "nominal": _nominal,
    "ordinal": _ordinal,
    "interval": _interval,
    "ratio": _ratio,
}


def _not_applicable(n_raters: int) -> str:
    return f"only {n_raters} rater: agreement between raters is not applicable"


def krippendorff_alpha(units: np.ndarray, level: Level = "interval") -> Agreement:
    """Krippendorff's alpha of an images x raters array (NaN = missing) at the given level of measurement."""
    n_units, n_raters = units.shape
    values, coincidences = coincidence_matrix(units)
    marginals = coincidences.sum(axis=1)
    total = float(marginals.sum())
    result = Agreement(
        "krippendorff_alpha", level, math.nan, n_units, n_raters, round(total), "pairable values"
    )
    reason = None
    if n_raters < 2:
        reason = _not_applicable(n_raters)
    elif total < 2:
        reason = "no image was rated by two or more raters"
    else:
        delta = DIFFERENCES[level](values, marginals)
        expected = float(marginals @ delta @ marginals)
        if expected > 0:
            return replace(result, value=1 - (total - 1) * float((coincidences * delta).sum()) / expected)
        reason = f"all {round(total)} pairable values are equal: no variation to agree on"
    logger.warning("Krippendorff's alpha undefined: %s", reason)
    return replace(result, reason=reason)


def mean_pairwise_spearman(matrix: pd.DataFrame) -> Agreement:
    """Arithmetic mean of Spearman's rho over all pairs of raters, each on the images both rated.

    Pairs whose correlation is undefined (fewer than three shared images, a constant rater) are
    left out and counted in ``reason``.
    """
    raters = list(matrix.columns)
    pairs = list(itertools.combinations(raters, 2))
    rhos = [correlate(matrix[a], matrix[b], label=f"raters {a} vs {b}").spearman_rho for a, b in pairs]
    defined = [rho for rho in rhos if not math.isnan(rho)]
    reason = None
    if len(raters) < 2:
        reason = _not_applicable(len(raters))
    elif not defined:
        reason = f"no pair of raters has a defined Spearman correlation (of {len(pairs)} pairs)"
    elif len(defined) < len(pairs):
        reason = f"{len(pairs) - len(defined)} of {len(pairs)} rater pairs undefined and left out"
    if not defined:
        logger.warning("mean pairwise Spearman undefined: %s", reason)
    value = float(np.mean(defined)) if defined else math.nan
    return Agreement(
        "mean_pairwise_spearman", None, value, len(matrix), len(raters), len(defined), "rater pairs", reason
    )


def agreement_table(ratings: pd.DataFrame, level: Level = "interval") -> pd.DataFrame:
    """Krippendorff's alpha (at ``level``) and mean pairwise Spearman of a ratings table (image_id, rater_id, score)."""
    matrix = reliability_matrix(ratings)
    results = [krippendorff_alpha(matrix.to_numpy(dtype=float), level), mean_pairwise_spearman(matrix)]
    return pd.DataFrame([asdict(result) for result in results], columns=list(AGREEMENT_COLUMNS))
