"""The fine-tuning effect: each LoRA adapter against its base model, as the SciIR paper reports Qwen-Image
against Qwen-Image-SciIR, but paired.

Generate draws the adapter's generator and its base's (``generate.adapter_bases``: the same generator without
the LoRA) with the same prompts and seed, and records the pair in the generation manifest
(``meta.adapter.base``). Both are ranked contestants like any other model; this table asks the one question
fine-tuning is for, is the adapter better than its base, and answers it as the paired comparisons answer
any pair (``sciir.evaluation.comparisons``): per rule and track (``final`` first), on the samples both were
scored on (the others left out and counted), the adapter's score minus its base's with its paired bootstrap
interval, exact McNemar for pass / fail (a permutation test for the other rules), and the verdict, which
needs the corrected p below alpha and the interval off 0. Each adapter's comparison is planned, so Holm's
correction runs over the adapters of one rule and track (one adapter: p itself), not over every pair of
models. For pass / fail, ``detectable_diff`` says how large a difference these samples would miss.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from sciir.evaluation.comparisons import (
    A_BETTER,
    B_BETTER,
    NO_DIFFERENCE,
    NOT_TESTED,
    PAIRWISE_COLUMNS,
    compare_pairs,
    sample_families,
)
from sciir.evaluation.params import ComparisonParams
from sciir.evaluation.tracks import FINAL
from sciir.stats.bootstrap import BootstrapConfig

ADAPTER_BETTER, BASE_BETTER = "adapter_better", "base_better"
# The pairwise table's names -> this table's (model A is the adapter, B its base).
_RENAMED = {
    "value": "track",
    "model_a": "adapter",
    "model_b": "base",
    "n_unscored_a": "n_unscored_adapter",
    "n_unscored_b": "n_unscored_base",
    "score_a": "score_adapter",
    "score_b": "score_base",
    "n_a_better": "n_adapter_better",
    "n_b_better": "n_base_better",
}
_VERDICTS = {A_BETTER: ADAPTER_BETTER, B_BETTER: BASE_BETTER}
FINETUNE_EFFECT_COLUMNS = tuple(
    _RENAMED.get(column, column) for column in PAIRWISE_COLUMNS if column != "breakdown"
)


def manifest_bases(generation_manifest: pd.DataFrame) -> dict[str, str]:
    """Adapter's generator -> its base's, as generate recorded them (``meta.adapter.base``); empty without
    a manifest."""
    if not {"model", "meta"} <= set(generation_manifest.columns):
        return {}
    bases: dict[str, str] = {}
    for model, meta in zip(generation_manifest["model"], generation_manifest["meta"], strict=True):
        if str(model) in bases or not isinstance(meta, str):
            continue
        adapter = json.loads(meta).get("adapter")
        if isinstance(adapter, dict) and adapter.get("base"):
            bases[str(model)] = str(adapter["base"])
    return bases


def _not_evaluated(row: pd.Series, evaluated: set[str]) -> str:
    """A not-tested row's reason, naming a model that has no result at all."""
    absent = [f"{role} {row[role]}" for role in ("adapter", "base") if row[role] not in evaluated]
    return (
        f"{' and '.join(absent)} not evaluated (not drawn, or no image judged)" if absent else row["reason"]
    )


def finetune_effect_table(
    sample_scores: pd.DataFrame,
    bases: dict[str, str],
    settings: ComparisonParams,
    bootstrap: BootstrapConfig,
) -> pd.DataFrame:
    """The ``finetune_effect`` table (columns ``FINETUNE_EFFECT_COLUMNS``): per rule and track, each adapter
    of ``bases`` whose adapter or base was evaluated against its base (module docstring), in the order of
    ``sample_scores`` (rules as configured, ``final`` first). Empty (with its columns) when there is no such
    adapter."""
    evaluated = {str(model) for model in sample_scores["model"].unique()}
    pairs = [(adapter, base) for adapter, base in bases.items() if {adapter, base} & evaluated]
    families = [
        compare_pairs(keys, units, pairs, settings, bootstrap)
        for keys, units in sample_families(sample_scores)
        if keys[1] == "track"
    ]
    if not pairs or not families:
        return pd.DataFrame(columns=list(FINETUNE_EFFECT_COLUMNS))
    table = pd.concat(families, ignore_index=True).rename(columns=_RENAMED)
    table["verdict"] = table["verdict"].replace(_VERDICTS)
    untested = table["verdict"] == NOT_TESTED
    table.loc[untested, "reason"] = [_not_evaluated(row, evaluated) for _, row in table[untested].iterrows()]
    return table[list(FINETUNE_EFFECT_COLUMNS)]


def as_pairwise(table: pd.DataFrame) -> pd.DataFrame:
    """The table in the ``pairwise`` table's names (the adapter as model A, its base as B), for the words
    of ``sciir.evaluation.comparison_text``."""
    pairs = table.rename(columns={new: old for old, new in _RENAMED.items()})
    pairs["verdict"] = pairs["verdict"].replace({new: old for old, new in _VERDICTS.items()})
    return pairs.assign(breakdown="track")


def finetune_effect_metrics(table: pd.DataFrame, primary: str) -> dict[str, float]:
    """As MLflow metrics: ``finetune_effect.<adapter>.`` ``difference``, ``ci_low``, ``ci_high``, ``p_value``,
    ``p_holm``, ``score_adapter``, ``score_base``, ``n_pairs``, ``n_left_out``, ``detectable_diff`` and
    ``verdict`` (1: the adapter better, -1: its base better, 0: no detectable difference; none when not
    tested) for ``final``; ``finetune_effect.<adapter>.<track>.`` ``difference``, ``p_holm`` and ``verdict``
    for the other tracks; a rule other than the primary one named after ``finetune_effect.``."""
    signs = {ADAPTER_BETTER: 1.0, BASE_BETTER: -1.0, NO_DIFFERENCE: 0.0}
    metrics: dict[str, float] = {}
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in table.itertuples(index=False):
        rule = "" if row.aggregation == primary else f"{row.aggregation}."
        track = "" if row.track == FINAL else f".{row.track}"
        name = f"finetune_effect.{rule}{row.adapter}{track}"
        fields = ["difference", "p_holm"]
        if row.track == FINAL:
            fields += ["ci_low", "ci_high", "p_value", "score_adapter", "score_base", "n_pairs", "n_left_out"]
            fields.append("detectable_diff")
        metrics |= {f"{name}.{field}": float(getattr(row, field)) for field in fields}
        metrics[f"{name}.verdict"] = signs.get(row.verdict, math.nan)
    return metrics
