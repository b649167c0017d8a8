"""The report's paired comparisons: per rule a models x models matrix of the ``final`` comparisons ("is
the row's model better than the column's?"), the comparisons per track, group and setting, the
smallest difference the benchmark detects per group, and each LoRA adapter against its base model
(``sciir.evaluation.comparisons`` and ``sciir.evaluation.finetune_effect`` compute them,
``sciir.evaluation.comparison_text`` words them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from sciir.evaluation.comparison_text import (
    TEST_NAMES,
    effect_verdict_words,
    evidence_words,
    final_rows,
    verdict_words,
)
from sciir.evaluation.comparisons import NOT_TESTED, detectable_by_group
from sciir.evaluation.finetune_effect import as_pairwise
from sciir.evaluation.plots import Plot
from sciir.evaluation.report import Table

# The class of a matrix cell (its colour in the page) by its words.
CELL_KINDS = {
    "better": "better",
    "worse": "worse",
    "no detectable difference": "same",
    "not tested": "untested",
}


@dataclass(frozen=True)
class MatrixCell:
    """One comparison seen from the row's model: its words (``better``, ``worse``, ``no detectable
    difference``, ``not tested``), the evidence (difference, interval, p-values, samples) and its class."""

    text: str
    detail: str
    kind: str


@dataclass(frozen=True)
class ComparisonMatrix:
    """The ``final`` comparisons of one rule as a models x models matrix (the row's model against the
    column's), with a note on how they were made; shown among the summary page's tables."""

    title: str
    note: str
    models: list[str]
    rows: list[tuple[str, list[MatrixCell]]]
    plot: Plot | None = None
    is_matrix: bool = True


def _cell(pairs: dict[tuple[str, str], Any], row_model: str, column_model: str) -> MatrixCell:
    if row_model == column_model:
        return MatrixCell("", "", "self")
    pair = pairs.get((row_model, column_model)) or pairs.get((column_model, row_model))
    if pair is None:
        return MatrixCell("not compared", "", "untested")
    words = verdict_words(pair, row_model)
    return MatrixCell(words, evidence_words(pair, row_model), CELL_KINDS[words])


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def comparison_matrix(pairwise: pd.DataFrame, rule: str, label: str) -> ComparisonMatrix | None:
    """The matrix of one rule's ``final`` comparisons, None when the rule has fewer than two ranked models."""
    rows = final_rows(pairwise, rule)
    if rows.empty:
        return None
    models = list(dict.fromkeys([*map(str, rows["model_a"]), *map(str, rows["model_b"])]))
    pairs = {(str(row.model_a), str(row.model_b)): row for row in rows.itertuples(index=False)}
    first = rows.iloc[0]
    m = int(first["m_pairs"])
    note = (
        f"Each cell reads: the row's model is better than / worse than / not told apart from the column's. "
        f"{_capitalised(TEST_NAMES[str(first['test'])])} on the samples both models were scored on (samples "
        f"one of them has no result on are left out and counted), Holm's correction over the {m} pair"
        f"{'s' if m != 1 else ''} tested, alpha {float(first['alpha']):g}: 'better' needs the corrected p "
        "below alpha and the 95% paired bootstrap interval of the difference (percentage points, the row's "
        "model minus the column's) above 0. The leaderboard's rank intervals resample each model's own scored "
        "samples, this test only the shared ones: where they disagree (few samples), this test decides."
    )
    return ComparisonMatrix(
        title=f"Paired comparisons of final, {label}: is the row's model better than the column's?",
        note=note,
        models=models,
        rows=[(model, [_cell(pairs, model, other) for other in models]) for model in models],
    )


def _breakdown_cells(row: Any) -> list[str]:
    """A ``pairwise`` row (an itertuples row) as cells of the per-breakdown table."""
    return [
        f"{row.model_a} vs {row.model_b}",
        str(row.breakdown),
        str(row.value),
        verdict_words(row),
        evidence_words(row),
    ]


def breakdown_comparisons(pairwise: pd.DataFrame, rule: str, label: str) -> Table | None:
    """Every pair's comparison per track, group and setting under one rule (Holm within each), as a table;
    None without a comparison."""
    rows = pairwise[pairwise["aggregation"] == rule]
    if rows.empty:
        return None
    cells = [_breakdown_cells(row) for row in rows.itertuples(index=False)]
    return Table(
        title=f"Paired comparisons per track, group and setting ({label}; Holm over the pairs of each "
        "track, group or setting; pairs without a shared sample are listed in pairwise.csv)",
        columns=["pair", "breakdown", "value", "verdict", "difference [95% interval], p, samples"],
        rows=cells,
    )


def _detectable_cells(row: Any) -> list[str]:
    """A ``detectable_by_group`` row (an itertuples row) as cells of the report's table."""
    if int(row.pairs_tested) == 0:
        return [str(row.group), "n/a", "0", str(row.n_samples), "", "", str(row.reason)]
    fewest, most = int(row.n_pairs_min), int(row.n_pairs_max)
    return [
        str(row.group),
        "n/a" if pd.isna(row.detectable_diff) else f"{100 * float(row.detectable_diff):.1f} points",
        f"{fewest}" if fewest == most else f"{fewest}-{most}",
        str(row.n_samples),
        f"{float(row.discordance):.0%}",
        f"{float(row.alpha) * int(row.m_pairs):g} / {int(row.m_pairs)}",
        str(row.reason),
    ]


def detectable_table(pairwise: pd.DataFrame) -> Table | None:
    """The smallest difference of final pass rate the benchmark detects, per group (None without a
    pass / fail comparison)."""
    table = detectable_by_group(pairwise)
    if table.empty:
        return None
    powers = table["power"].dropna()
    power = f"{float(powers.iloc[0]):.0%}" if len(powers) else "the configured"
    cells = [_detectable_cells(row) for row in table.itertuples(index=False)]
    return Table(
        title=f"What the benchmark can detect: the smallest difference of final pass rate found with {power} "
        "power (exact McNemar, Connor 1987), from the discordance observed",
        columns=[
            "group",
            "detectable difference",
            "samples shared",
            "samples",
            "discordance",
            "alpha / pairs",
            "why n/a",
        ],
        rows=cells,
    )


def comparison_sections(pairwise: pd.DataFrame, labels: dict[str, str]) -> list[Table | ComparisonMatrix]:
    """The report's comparison sections: per rule (in the table's order) its matrix and its table per
    track, group and setting, then the detectable difference per group."""
    sections: list[Table | ComparisonMatrix] = []
    for rule in pd.unique(pairwise["aggregation"]):
        label = labels.get(str(rule), str(rule))
        matrix = comparison_matrix(pairwise, str(rule), label)
        breakdowns = breakdown_comparisons(pairwise[pairwise["verdict"] != NOT_TESTED], str(rule), label)
        sections += [section for section in (matrix, breakdowns) if section is not None]
    detectable = detectable_table(pairwise)
    return sections + ([detectable] if detectable is not None else [])


def _effect_cells(row: Any) -> list[str]:
    """A ``finetune_effect`` row in the pairwise table's names (an itertuples row) as cells of the report."""
    detectable = "n/a" if pd.isna(row.detectable_diff) else f"{100 * float(row.detectable_diff):.1f} points"
    shown = row.test == "mcnemar_exact" and row.verdict != NOT_TESTED
    return [
        f"{row.model_a} (base: {row.model_b})",
        str(row.value),
        "n/a" if pd.isna(row.score_b) else f"{float(row.score_b):.3f}",
        "n/a" if pd.isna(row.score_a) else f"{float(row.score_a):.3f}",
        effect_verdict_words(row).split(";")[0],  # what it would miss has a column of its own
        evidence_words(row),
        detectable if shown else "",
    ]


def finetune_effect_sections(effect: pd.DataFrame, labels: dict[str, str]) -> list[Table]:
    """Per rule, each LoRA adapter against its base model (a ``finetune_effect`` table), ``final`` first: the
    base's score and the adapter's on the samples both were scored on, the verdict, the difference with its
    interval and p-values, and what the samples could not detect."""
    pairs = as_pairwise(effect)
    tables = []
    for rule, rows in pairs.groupby("aggregation", sort=False):
        first = rows.iloc[0]
        tables.append(
            Table(
                title=f"Fine-tuning effect, {labels.get(str(rule), str(rule))}: each LoRA adapter against its "
                f"base model, drawn with the same prompts and seed ({TEST_NAMES[str(first['test'])]} on the "
                "samples both were scored on, Holm over the adapters tested per track, alpha "
                f"{float(first['alpha']):g}; difference = adapter minus base, percentage points)",
                columns=[
                    "adapter (its base)",
                    "track",
                    "base's score",
                    "adapter's score",
                    "verdict",
                    "difference [95% interval], p, samples",
                    "detectable difference",
                ],
                rows=[_effect_cells(row) for row in rows.itertuples(index=False)],
            )
        )
    return tables
