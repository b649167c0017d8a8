"""Agreement between raters: Krippendorff's alpha and the mean pairwise Spearman correlation.

Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability") comes from the
``krippendorff`` package, at the level of measurement asked for (nominal, ordinal, interval, ratio), on
the reliability data (images x raters, missing ratings allowed). Images with a single rating are not
pairable and do not count.

With fewer than two raters, no pairable image or no variation at all, a value is NaN with a
logged reason (e.g. the embedded sample has one oracle rater: agreement is not applicable).
"""

from __future__ import annotations

import itertools
import logging
import math
from dataclasses import asdict, dataclass, replace
from typing import Literal

import krippendorff
import numpy as np
import pandas as pd

from sciir.stats.correlation import correlate

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


def pairable_values(units: np.ndarray) -> int:
    """How many ratings alpha is computed from: those of images rated by two raters or more."""
    per_image = (~np.isnan(units)).sum(axis=1)
    return int(per_image[per_image >= 2].sum())


def _not_applicable(n_raters: int) -> str:
    return f"only {n_raters} rater: agreement between raters is not applicable"


def krippendorff_alpha(units: np.ndarray, level: Level = "interval", warn: bool = True) -> Agreement:
    """Krippendorff's alpha of an images x raters array (NaN = missing) at the given level of measurement.

    An undefined alpha is logged as a warning, unless ``warn`` is off (the review app's page, which shows the
    reason itself at every view)."""
    n_units, n_raters = units.shape
    total = pairable_values(units)
    result = Agreement("krippendorff_alpha", level, math.nan, n_units, n_raters, total, "pairable values")
    paired = units[(~np.isnan(units)).sum(axis=1) >= 2]
    if n_raters < 2:
        reason = _not_applicable(n_raters)
    elif total < 2:
        reason = "no image was rated by two or more raters"
    elif np.unique(paired[~np.isnan(paired)]).size < 2:
        reason = f"all {total} pairable values are equal: no variation to agree on"
    else:
        value = krippendorff.alpha(reliability_data=units.T, level_of_measurement=level)
        return replace(result, value=float(value))
    if warn:
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
    """Krippendorff's alpha (at ``level``) and mean pairwise Spearman of a ratings table (image_id, rater_id,
    score)."""
    matrix = reliability_matrix(ratings)
    results = [krippendorff_alpha(matrix.to_numpy(dtype=float), level), mean_pairwise_spearman(matrix)]
    return pd.DataFrame([asdict(result) for result in results], columns=list(AGREEMENT_COLUMNS))
