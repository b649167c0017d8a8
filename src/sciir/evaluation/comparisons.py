"""Is A better than B? Every pair of ranked models compared on the samples both were scored on, ranks with
intervals, and the smallest difference the benchmark can detect.

**Pairs** (``pairwise_table``): per aggregation rule, for every pair of contestants (references and the
blank baseline are never compared; pairs in leaderboard order, the better-placed model as A) and every
track (``final`` included), group and setting, the samples where both models have a result under that
rule (``weight`` > 0 in ``sample_scores``) are the pair's items; samples where one of them has none are
left out of the pair and counted (``n_left_out``, ``n_unscored_a`` / ``_b``). On those items: both scores,
their difference with a paired bootstrap interval (``sciir.stats.paired``), and a paired test: exact
McNemar when the rule's per-sample score is pass / fail (``sciir_veto``), otherwise a permutation test.
The p-values of all pairs of one rule and one track, group or setting are corrected together by Holm's
method; the verdict is "A better than B" only when the corrected p is below ``alpha`` *and* the interval
excludes 0 (then ``a_better`` or ``b_better``), else ``no_detectable_difference``; a pair without a shared
item is ``not_tested`` and outside the correction. For pass / fail, ``detectable_diff`` is the smallest
difference McNemar's test detects with the configured power on the pair's items at the observed
discordance, at level alpha / m (Holm's first step; ``sciir.stats.power``).

**Rank intervals** (``with_rank_intervals``): each ranked model's rank over bootstrap resamples of the
samples (``sciir.stats.ranks``), and the ranked models the paired test of ``final`` does not tell apart
from it.

**Detectable difference per group** (``detectable_by_group``): per group (and over all samples) the
smallest difference of ``final`` pass rate detected with the configured power, from the discordance
pooled over the tested pairs and the fewest items a pair has.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

from sciir.backends.base import CONTESTANT
from sciir.evaluation.params import ComparisonParams
from sciir.evaluation.scoring import UNASSIGNED
from sciir.evaluation.tracks import FINAL
from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.paired import holm, mcnemar_exact, paired_bootstrap_interval, paired_permutation_test
from sciir.stats.power import detectable_difference, undetectable_reason
from sciir.stats.ranks import rank_intervals

# The rule whose per-sample score is pass / fail (McNemar); every other rule is tested by permutation.
BINARY_RULE = "sciir_veto"
PAIRWISE_COLUMNS = (
    "aggregation",
    "breakdown",
    "value",
    "model_a",
    "model_b",
    "n_items",
    "n_pairs",
    "n_left_out",
    "n_unscored_a",
    "n_unscored_b",
    "score_a",
    "score_b",
    "difference",
    "ci_low",
    "ci_high",
    "n_a_better",
    "n_b_better",
    "discordance",
    "test",
    "p_value",
    "m_pairs",
    "p_holm",
    "alpha",
    "verdict",
    "detectable_diff",
    "power",
    "reason",
)
RANK_COLUMNS = ("rank_lo", "rank_hi", "not_separated_from")
DETECTABLE_COLUMNS = (
    "group",
    "n_samples",
    "pairs_tested",
    "n_pairs_min",
    "n_pairs_max",
    "discordance",
    "m_pairs",
    "alpha",
    "power",
    "detectable_diff",
    "reason",
)
A_BETTER, B_BETTER, NO_DIFFERENCE, NOT_TESTED = (
    "a_better",
    "b_better",
    "no_detectable_difference",
    "not_tested",
)
NO_SHARED_ITEM = "no sample scored for both models"
NO_PAIR_SHARES = "no pair of ranked models shares a scored sample"
# Model names joined in the leaderboard's not_separated_from column.
NAME_SEPARATOR = "; "
# The detectable difference over every sample, listed before the groups'.
ALL_SAMPLES = "all samples"


def contestants(board: pd.DataFrame, rule: str) -> list[str]:
    """The contestants of one rule's leaderboard, in its order (ranked first, best first)."""
    rows = board[(board["aggregation"] == rule) & (board["role"] == CONTESTANT)]
    return [str(model) for model in rows["model"]]


def sample_families(sample_scores: pd.DataFrame) -> list[tuple[tuple[str, str, str], pd.DataFrame]]:
    """The sample rows of each (rule, breakdown, value): per track (final included) and, from the final rows,
    per group and per setting (as ``sciir.evaluation.scoring.score_table`` groups them)."""
    finals = sample_scores[sample_scores["track"] == FINAL].fillna(
        {"group": UNASSIGNED, "setting": UNASSIGNED}
    )
    sources = {"track": sample_scores, "group": finals, "setting": finals}
    return [
        ((str(rule), breakdown, str(value)), rows)
        for breakdown, frame in sources.items()
        for (rule, value), rows in frame.groupby(["aggregation", breakdown], sort=False)
    ]


def _pair_row(
    keys: tuple[str, str, str],
    scores: pd.DataFrame,
    weights: pd.DataFrame,
    pair: tuple[str, str],
    settings: ComparisonParams,
    bootstrap: BootstrapConfig,
) -> dict[str, Any]:
    """One pair's comparison on one family's samples (pivot tables: samples x models, NaN without a row)."""
    a, b = pair
    has = weights[a].notna() | weights[b].notna()
    scored_a, scored_b = weights[a].fillna(0.0) > 0, weights[b].fillna(0.0) > 0
    paired = has & scored_a & scored_b
    row: dict[str, Any] = dict(zip(("aggregation", "breakdown", "value"), keys, strict=True)) | {
        "model_a": a,
        "model_b": b,
        "n_items": int(has.sum()),
        "n_pairs": int(paired.sum()),
        "n_left_out": int((has & ~paired).sum()),
        "n_unscored_a": int((has & ~scored_a).sum()),
        "n_unscored_b": int((has & ~scored_b).sum()),
        "alpha": settings.alpha,
        "power": settings.power,
    }
    binary = keys[0] == BINARY_RULE
    row["test"] = "mcnemar_exact" if binary else "permutation"
    if not paired.any():
        return row | {"verdict": NOT_TESTED, "reason": NO_SHARED_ITEM}
    values_a, values_b = scores.loc[paired, a].to_numpy(float), scores.loc[paired, b].to_numpy(float)
    weights_a, weights_b = weights.loc[paired, a].to_numpy(float), weights.loc[paired, b].to_numpy(float)
    diff, low, high = paired_bootstrap_interval(values_a, values_b, bootstrap, weights_a, weights_b)
    row |= {
        "score_a": float(np.average(values_a, weights=weights_a)),
        "score_b": float(np.average(values_b, weights=weights_b)),
        "difference": diff,
        "ci_low": low,
        "ci_high": high,
        "n_a_better": int((values_a > values_b).sum()),
        "n_b_better": int((values_a < values_b).sum()),
    }
    row["discordance"] = (row["n_a_better"] + row["n_b_better"]) / row["n_pairs"]
    if binary:
        row["p_value"] = mcnemar_exact(values_a, values_b).p_value
    else:
        row["p_value"] = paired_permutation_test(
            values_a, values_b, settings.n_permutations, bootstrap.seed, weights_a, weights_b
        )
    return row


def _verdict(row: pd.Series) -> str:
    if pd.isna(row["p_holm"]):
        return NOT_TESTED
    if row["p_holm"] < row["alpha"] and row["ci_low"] > 0:
        return A_BETTER
    if row["p_holm"] < row["alpha"] and row["ci_high"] < 0:
        return B_BETTER
    return NO_DIFFERENCE


def _corrected(family: pd.DataFrame) -> pd.DataFrame:
    """Holm's correction over one family's pairs, the verdicts, and (pass / fail) the detectable difference."""
    family = family.copy()
    family["p_holm"] = holm(family["p_value"].to_numpy(float))
    m = int(family["p_value"].notna().sum())
    family["m_pairs"] = m
    family["verdict"] = [_verdict(row) for _, row in family.iterrows()]
    family["detectable_diff"] = [_detectable(row, m) for row in family.itertuples()]
    return family


def _detectable(row: Any, m: int) -> float:
    """A tested pass / fail pair's detectable difference at level alpha / m (an itertuples row)."""
    if row.test != "mcnemar_exact" or row.verdict == NOT_TESTED:
        return math.nan
    return detectable_difference(
        float(row.discordance), int(row.n_pairs), float(row.alpha) / m, float(row.power)
    )


def compare_pairs(
    keys: tuple[str, str, str],
    units: pd.DataFrame,
    pairs: list[tuple[str, str]],
    settings: ComparisonParams,
    bootstrap: BootstrapConfig,
) -> pd.DataFrame:
    """The ``pairs`` (A, B) compared on the sample rows of one rule and one track, group or setting
    (``keys``: rule, breakdown, value; ``units``: its rows of ``sample_scores``, columns model, sample_id,
    score, weight; a model without rows shares no sample), Holm's correction over the pairs tested: rows
    of the ``pairwise`` table."""
    models = list(dict.fromkeys(model for pair in pairs for model in pair))
    scores, weights = (
        units.pivot(index="sample_id", columns="model", values=column).reindex(columns=models).sort_index()
        for column in ("score", "weight")
    )
    rows = [_pair_row(keys, scores, weights, pair, settings, bootstrap) for pair in pairs]
    return _corrected(pd.DataFrame(rows, columns=list(PAIRWISE_COLUMNS))).astype({"m_pairs": "int64"})


def compare_family(
    keys: tuple[str, str, str],
    units: pd.DataFrame,
    models: list[str],
    settings: ComparisonParams,
    bootstrap: BootstrapConfig,
) -> pd.DataFrame:
    """Every pair of ``models`` (in that order, the earlier as A) compared on one family's sample rows
    (:func:`compare_pairs`)."""
    return compare_pairs(keys, units, list(itertools.combinations(models, 2)), settings, bootstrap)


def pairwise_table(
    sample_scores: pd.DataFrame,
    board: pd.DataFrame,
    settings: ComparisonParams,
    bootstrap: BootstrapConfig,
) -> pd.DataFrame:
    """The ``pairwise`` table (columns ``PAIRWISE_COLUMNS``): every pair of contestants of each rule's
    leaderboard compared on every track, group and setting (module docstring). Empty (with its columns)
    when a rule has fewer than two contestants."""
    families = []
    for keys, units in sample_families(sample_scores):
        models = [model for model in contestants(board, keys[0]) if model in set(units["model"])]
        if len(models) >= 2:
            families.append(compare_family(keys, units, models, settings, bootstrap))
    if not families:
        return pd.DataFrame(columns=list(PAIRWISE_COLUMNS))
    return pd.concat(families, ignore_index=True)[list(PAIRWISE_COLUMNS)]


def not_separated(pairwise: pd.DataFrame, rule: str, model: str, ranked: list[str]) -> list[str]:
    """The ranked models whose ``final`` comparison with ``model`` under ``rule`` tells nothing apart: no
    detectable difference, or no sample shared (not tested)."""
    finals = pairwise[
        (pairwise["aggregation"] == rule) & (pairwise["breakdown"] == "track") & (pairwise["value"] == FINAL)
    ]
    undecided = finals[~finals["verdict"].isin([A_BETTER, B_BETTER])]
    others = {str(b) for b in undecided.loc[undecided["model_a"] == model, "model_b"]}
    others |= {str(a) for a in undecided.loc[undecided["model_b"] == model, "model_a"]}
    return [other for other in ranked if other in others]


def _rank_cells(
    rule: str, models: list[str], finals: pd.DataFrame, pairwise: pd.DataFrame, bootstrap: BootstrapConfig
) -> dict[tuple[str, str], tuple[int, int, str]]:
    """(rule, model) -> (rank_lo, rank_hi, not_separated_from) of one rule's ranked models."""
    units = finals[(finals["aggregation"] == rule) & finals["model"].isin(models)]
    tables = [
        units.pivot(index="sample_id", columns="model", values=column).reindex(columns=models).sort_index()
        for column in ("score", "weight")
    ]
    scores, weights = (table.fillna(0.0).to_numpy(float) for table in tables)
    intervals = rank_intervals(scores, weights, bootstrap)
    return {
        (rule, model): (
            int(intervals.low[index]),
            int(intervals.high[index]),
            NAME_SEPARATOR.join(not_separated(pairwise, rule, model, models)),
        )
        for index, model in enumerate(models)
    }


def with_rank_intervals(
    board: pd.DataFrame, sample_scores: pd.DataFrame, pairwise: pd.DataFrame, bootstrap: BootstrapConfig
) -> pd.DataFrame:
    """The leaderboard with, after ``rank``, ``rank_lo`` / ``rank_hi`` (the rank's bootstrap interval,
    resampling samples: ``sciir.stats.ranks``) and ``not_separated_from`` (the ranked models that the
    paired, corrected test of ``final`` does not tell apart from this one, ``; ``-joined); empty for
    models without a rank (references, the blank baseline, a model with no final score)."""
    found: dict[tuple[str, str], tuple[int, int, str]] = {}
    finals = sample_scores[sample_scores["track"] == FINAL]
    for rule, rows in board[board["rank"].notna()].groupby("aggregation", sort=False):
        found |= _rank_cells(str(rule), [str(model) for model in rows["model"]], finals, pairwise, bootstrap)
    keys = list(zip(board["aggregation"].astype(str), board["model"].astype(str), strict=True))
    cells = [found.get(key, (pd.NA, pd.NA, "")) for key in keys]
    board = board.copy()
    at = list(board.columns).index("rank") + 1
    for offset, name in enumerate(RANK_COLUMNS):
        values = [cell[offset] for cell in cells]
        column = pd.Series(values, index=board.index, dtype="Int64" if offset < 2 else object)
        board.insert(at + offset, name, column)
    return board


def _detectable_row(group: str, family: pd.DataFrame) -> dict[str, Any]:
    """One group's row of ``detectable_by_group`` from its ``final`` comparisons."""
    row: dict[str, Any] = {"group": group, "n_samples": int(family["n_items"].max())}
    pairs = family[family["verdict"] != NOT_TESTED]
    if pairs.empty:
        return row | {
            "pairs_tested": 0,
            "n_pairs_min": 0,
            "n_pairs_max": 0,
            "m_pairs": 0,
            "reason": NO_PAIR_SHARES,
        }
    discordance = float((pairs["n_a_better"] + pairs["n_b_better"]).sum() / pairs["n_pairs"].sum())
    fewest, power, m = (
        int(pairs["n_pairs"].min()),
        float(pairs["power"].iloc[0]),
        int(pairs["m_pairs"].iloc[0]),
    )
    alpha = float(pairs["alpha"].iloc[0]) / m
    return row | {
        "pairs_tested": len(pairs),
        "n_pairs_min": fewest,
        "n_pairs_max": int(pairs["n_pairs"].max()),
        "discordance": discordance,
        "m_pairs": m,
        "alpha": alpha,
        "power": power,
        "detectable_diff": detectable_difference(discordance, fewest, alpha, power),
        "reason": undetectable_reason(discordance, fewest, alpha, power) or "",
    }


def detectable_by_group(pairwise: pd.DataFrame, rule: str = BINARY_RULE) -> pd.DataFrame:
    """Per group (``all samples`` first) of the pass / fail rule's ``final`` comparisons (columns
    ``DETECTABLE_COLUMNS``): the samples, the pairs tested, the fewest and most samples a pair shares, the
    discordance pooled over the tested pairs, and the smallest difference of final pass rate detected with
    the configured power at level alpha / m on the fewest shared samples at that discordance, or NaN and
    the reason (``sciir.stats.power``; a group where no pair was tested has only its reason). Empty when the
    rule has no pair."""
    rows = pairwise[pairwise["aggregation"] == rule]
    overall = rows[(rows["breakdown"] == "track") & (rows["value"] == FINAL)].assign(value=ALL_SAMPLES)
    families = pd.concat([overall, rows[rows["breakdown"] == "group"]]).groupby("value", sort=False)
    found = [_detectable_row(str(group), family) for group, family in families]
    counts = ("n_samples", "pairs_tested", "n_pairs_min", "n_pairs_max", "m_pairs")
    return pd.DataFrame(found, columns=list(DETECTABLE_COLUMNS)).astype(dict.fromkeys(counts, "int64"))


def pairwise_metrics(pairwise: pd.DataFrame, primary: str) -> dict[str, float]:
    """Per pair, as MLflow metrics: ``pairwise.<A>_vs_<B>.<track>`` (``group.<group>``, ``setting.<setting>``)
    ``.difference``, ``.p_holm`` and ``.verdict`` (1: A better, -1: B better, 0: no detectable difference), and for
    ``final`` also ``.ci_low``, ``.ci_high``, ``.p_value``, ``.n_pairs``, ``.n_left_out`` and ``.detectable_diff``;
    a rule other than the primary one named after ``pairwise.`` (``pairwise.tifa.<A>_vs_<B>...``)."""
    signs = {A_BETTER: 1.0, B_BETTER: -1.0, NO_DIFFERENCE: 0.0}
    metrics: dict[str, float] = {}
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in pairwise.itertuples(index=False):
        rule = "" if row.aggregation == primary else f"{row.aggregation}."
        value = row.value if row.breakdown == "track" else f"{row.breakdown}.{row.value}"
        name = f"pairwise.{rule}{row.model_a}_vs_{row.model_b}.{value}"
        fields = ["difference", "p_holm"]
        if row.breakdown == "track" and row.value == FINAL:
            fields += ["ci_low", "ci_high", "p_value", "n_pairs", "n_left_out", "detectable_diff"]
        metrics |= {f"{name}.{field}": float(getattr(row, field)) for field in fields}
        metrics[f"{name}.verdict"] = signs.get(row.verdict, math.nan)
    return metrics
