"""The paired comparisons in words: each pair's verdict as a reader of a paper's table would say it, the
lines printed under the leaderboard (pairs, ranks not told apart, the difference the benchmark detects, each
adapter's fine-tuning effect), and the cells of the report's matrix (``sciir.evaluation.comparisons`` and
``sciir.evaluation.finetune_effect`` compute them)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from sciir.evaluation.comparisons import A_BETTER, B_BETTER, BINARY_RULE, NOT_TESTED, detectable_by_group
from sciir.evaluation.finetune_effect import as_pairwise
from sciir.evaluation.tracks import FINAL

TEST_NAMES = {"mcnemar_exact": "exact McNemar test", "permutation": "paired permutation test"}


def rank_words(rank: Any, low: Any, high: Any) -> str:
    """``2 [1, 3]``: a rank with its bootstrap interval; ``-`` for a model without a rank."""
    if pd.isna(rank):
        return "-"
    if pd.isna(low) or pd.isna(high):
        return str(int(rank))
    return f"{int(rank)} [{int(low)}, {int(high)}]"


def final_rows(pairwise: pd.DataFrame, rule: str) -> pd.DataFrame:
    """The ``final`` comparisons of one rule, in the table's (leaderboard) order."""
    return pairwise[
        (pairwise["aggregation"] == rule) & (pairwise["breakdown"] == "track") & (pairwise["value"] == FINAL)
    ]


def points(value: Any) -> str:
    """A difference of rates in percentage points, signed: ``+12.5`` (``+0.0``, never ``-0.0``)."""
    shown = round(100 * float(value), 1)
    return f"{shown + 0.0:+.1f}"  # adding 0.0 turns -0.0 into 0.0


def interval_points(low: Any, high: Any) -> str:
    return f"[{points(low)}, {points(high)}]"


def verdict_words(row: Any, first: str | None = None) -> str:
    """The verdict of one pair (a ``pairwise`` row) in words, naming the better model first:
    ``A better than B``, ``no detectable difference`` or ``not tested``. With ``first`` (one of the two
    models) the words are seen from its side: ``better`` / ``worse``."""
    if row.verdict == NOT_TESTED:
        return "not tested"
    if row.verdict not in (A_BETTER, B_BETTER):
        return "no detectable difference"
    winner, loser = (row.model_a, row.model_b) if row.verdict == A_BETTER else (row.model_b, row.model_a)
    if first is None:
        return f"{winner} better than {loser}"
    return "better" if first == winner else "worse"


def coverage_words(row: Any) -> str:
    """``5 samples shared, 7 left out`` (left out: a sample one of the two models has no result on)."""
    return f"{int(row.n_pairs)} samples shared, {int(row.n_left_out)} left out"


def evidence_words(row: Any, first: str | None = None) -> str:
    """The difference (from ``first``'s side, A's by default) with its interval and the p-values."""
    if row.verdict == NOT_TESTED:
        return f"{row.reason} ({coverage_words(row)})"
    sign = -1.0 if first is not None and first == row.model_b else 1.0
    low, high = sorted((sign * float(row.ci_low), sign * float(row.ci_high)))
    return (
        f"{points(sign * float(row.difference))} points {interval_points(low, high)}, "
        f"p = {float(row.p_value):.3g} (Holm {float(row.p_holm):.3g}); {coverage_words(row)}"
    )


def comparisons_text(pairwise: pd.DataFrame, rule: str) -> str:
    """The ``final`` comparisons of one rule: a heading saying how they were made, then one line per pair."""
    rows = final_rows(pairwise, rule)
    if rows.empty:
        return "Paired comparisons: fewer than two ranked models, nothing to compare."
    first = rows.iloc[0]
    m = int(first["m_pairs"])
    heading = (
        f"Paired comparisons of final ({TEST_NAMES[str(first['test'])]} on the samples both models were "
        f"scored on, Holm's correction over {m} pair{'s' if m != 1 else ''}, alpha {float(first['alpha']):g}; "
        "difference in percentage points with its 95% paired bootstrap interval):"
    )
    lines = [
        f"  {row.model_a} vs {row.model_b}: {verdict_words(row)}: {evidence_words(row)}"
        for row in rows.itertuples(index=False)
    ]
    return "\n".join([heading, *lines])


def _not_separated_pairs(board: pd.DataFrame) -> list[tuple[str, str]]:
    """The pairs of ranked models in each other's ``not_separated_from``, each once, in name order."""
    found: set[tuple[str, str]] = set()
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in board[board["rank"].notna()].itertuples(index=False):
        others = "" if pd.isna(row.not_separated_from) else str(row.not_separated_from)
        found |= {
            (min(str(row.model), other), max(str(row.model), other)) for other in others.split("; ") if other
        }
    return sorted(found)


def not_separated_text(board: pd.DataFrame) -> str | None:
    """One sentence naming the ranked models (of one rule's leaderboard) whose ranks the paired test cannot
    tell apart, saying where their bootstrap rank intervals nevertheless do not overlap (None if none)."""
    if "not_separated_from" not in board:
        return None
    pairs = _not_separated_pairs(board)
    if not pairs:
        return None
    ranked = board[board["rank"].notna()]
    lows = dict(zip(ranked["model"].astype(str), ranked["rank_lo"].astype(int), strict=True))
    highs = dict(zip(ranked["model"].astype(str), ranked["rank_hi"].astype(int), strict=True))
    note = (
        " (their rank intervals do not overlap, but the test on the samples both were scored on finds none)"
    )
    listed = [f"{a} and {b}{note if highs[a] < lows[b] or highs[b] < lows[a] else ''}" for a, b in pairs]
    return (
        "Ranks not told apart (the paired test of final finds no detectable difference, or the two share no "
        f"scored sample): {'; '.join(listed)}."
    )


def _samples(n: int) -> str:
    return f"{n} sample{'s' if n != 1 else ''}"


def _detectable_line(row: Any) -> str:
    """One group's line (a ``detectable_by_group`` itertuples row)."""
    if int(row.pairs_tested) == 0:
        return f"  {row.group}: n/a ({_samples(int(row.n_samples))}): {row.reason}"
    found = "n/a" if pd.isna(row.detectable_diff) else f"{100 * float(row.detectable_diff):.1f} points"
    fewest, most = int(row.n_pairs_min), int(row.n_pairs_max)
    shared = f"{fewest}" if fewest == most else f"{fewest}-{most}"
    level = f"alpha {float(row.alpha) * int(row.m_pairs):g} / {int(row.m_pairs)}"
    reason = f": {row.reason}" if row.reason else ""
    return (
        f"  {row.group}: {found} ({shared} of {_samples(int(row.n_samples))} shared, "
        f"discordance {float(row.discordance):.0%}, {level}){reason}"
    )


def detectable_text(pairwise: pd.DataFrame) -> str | None:
    """Per group, the smallest difference of final pass rate the benchmark detects, in words."""
    table = detectable_by_group(pairwise, BINARY_RULE)
    if table.empty:
        return None
    powers = table["power"].dropna()
    power = f"{float(powers.iloc[0]):.0%} power" if len(powers) else "the configured power"
    heading = (
        f"Smallest difference of final pass rate the benchmark detects with {power} (exact McNemar at alpha "
        "divided by the pairs tested, Holm's first step), from the discordance observed (the share of shared "
        "samples that one model passes and the other fails):"
    )
    return "\n".join([heading, *(_detectable_line(row) for row in table.itertuples(index=False))])


def _rate(value: Any) -> str:
    return "n/a" if pd.isna(value) else f"{100 * float(value):.1f}%"


def effect_verdict_words(row: Any) -> str:
    """One adapter's verdict (a ``finetune_effect`` row in the pairwise table's names: ``as_pairwise``), and
    for pass / fail without a detectable difference how large a difference its samples would miss."""
    if row.verdict == NOT_TESTED:
        return "not tested"
    if row.verdict in (A_BETTER, B_BETTER):
        return "the adapter is better" if row.verdict == A_BETTER else "the base is better"
    if row.test != "mcnemar_exact":
        return "no detectable difference"
    if pd.isna(row.detectable_diff):
        return "no detectable difference; too few samples to say how large a difference would go unnoticed"
    return (
        f"no detectable difference; a difference under {100 * float(row.detectable_diff):.1f} points "
        "would usually go unnoticed on these samples"
    )


def effect_words(row: Any) -> str:
    """One adapter's effect (a ``finetune_effect`` row in the pairwise table's names): its base's score and
    its own, the difference with its interval and p-values, and the verdict."""
    if row.verdict == NOT_TESTED:
        return f"not tested: {evidence_words(row)}"
    return f"{_rate(row.score_b)} -> {_rate(row.score_a)}, {evidence_words(row)}: {effect_verdict_words(row)}"


def finetune_effect_text(table: pd.DataFrame, rule: str) -> str | None:
    """Each adapter's fine-tuning effect on ``final`` under ``rule`` (a ``finetune_effect`` table), in words:
    a heading saying how it was measured, then one line per adapter; None without an adapter."""
    rows = as_pairwise(table)
    rows = rows[(rows["aggregation"] == rule) & (rows["value"] == FINAL)]
    if rows.empty:
        return None
    first = rows.iloc[0]
    heading = (
        "Fine-tuning effect on final (each LoRA adapter against its base model, both drawn with the same prompts "
        f"and seed; {TEST_NAMES[str(first['test'])]} on the samples both were scored on, Holm over the adapters "
        f"tested, alpha {float(first['alpha']):g}; base -> adapter, and the adapter's score minus its base's in "
        "percentage points with its 95% paired bootstrap interval):"
    )
    lines = [
        f"  {row.model_a} against {row.model_b}: {effect_words(row)}" for row in rows.itertuples(index=False)
    ]
    return "\n".join([heading, *lines])
