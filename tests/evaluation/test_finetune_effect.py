"""The fine-tuning effect on hand-made sample scores: each adapter against its base (from the generation
manifest), the paired difference with its interval, exact McNemar, Holm over the adapters, the verdict, the
models left out, the metrics, the words and the report's table."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sciir.evaluation.comparison_text import finetune_effect_text
from sciir.evaluation.finetune_effect import (
    FINETUNE_EFFECT_COLUMNS,
    finetune_effect_metrics,
    finetune_effect_table,
    manifest_bases,
)
from sciir.evaluation.leaderboard_text import leaderboard_text
from sciir.evaluation.params import ComparisonParams
from sciir.evaluation.report_comparisons import finetune_effect_sections
from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.paired import paired_bootstrap_interval
from tests.evaluation.test_comparisons import finals
from tests.evaluation.test_leaderboard_text import board_row

BOOT = BootstrapConfig(n_boot=300, seed=0)
SETTINGS = ComparisonParams()


def tracks(model: str, final: list[float | None], text: list[float | None]) -> pd.DataFrame:
    """``final`` and ``text`` rows of one model."""
    return pd.concat([finals(model, final), finals(model, text).assign(track="text")], ignore_index=True)


def tuned_and_base() -> pd.DataFrame:
    """lora passes 28 of 40 samples, its base 14 (lora passes every sample the base passes); other_lora's
    base was never evaluated; a third model is in no pair."""
    lora = [1.0] * 28 + [0.0] * 12
    base = [1.0] * 14 + [0.0] * 26
    return pd.concat(
        [
            tracks("lora", lora, [1.0] * 40),
            tracks("base", base, [1.0] * 39 + [None]),
            tracks("other_lora", [0.0] * 40, [0.0] * 40),
            tracks("programmatic", [1.0] * 40, [1.0] * 40),
        ],
        ignore_index=True,
    )


BASES = {"lora": "base", "other_lora": "other_base"}


def effect() -> pd.DataFrame:
    return finetune_effect_table(tuned_and_base(), BASES, SETTINGS, BOOT)


def test_the_adapter_against_its_base_is_a_paired_mcnemar_comparison_with_its_interval():
    table = effect()
    assert list(table.columns) == list(FINETUNE_EFFECT_COLUMNS)
    rows = table.set_index(["adapter", "track"])
    assert list(rows.index) == [
        ("lora", "final"),
        ("other_lora", "final"),
        ("lora", "text"),
        ("other_lora", "text"),
    ]
    row = rows.loc[("lora", "final")]
    assert row.base == "base" and (row.n_items, row.n_pairs, row.n_left_out) == (40, 40, 0)
    assert (row.score_adapter, row.score_base, row.difference) == (0.7, 0.35, pytest.approx(0.35))
    assert (row.n_adapter_better, row.n_base_better) == (14, 0)
    assert row.test == "mcnemar_exact" and row.p_value == pytest.approx(stats.binomtest(14, 14, 0.5).pvalue)
    a, b = np.array([1.0] * 28 + [0.0] * 12), np.array([1.0] * 14 + [0.0] * 26)
    assert (row.ci_low, row.ci_high) == pytest.approx(paired_bootstrap_interval(a, b, BOOT)[1:])
    # Holm runs over the adapters tested (other_lora's base has no result: not tested, not counted).
    assert row.m_pairs == 1 and row.p_holm == row.p_value and row.verdict == "adapter_better"
    text = rows.loc[("lora", "text")]
    assert (text.n_pairs, text.n_left_out, text.n_unscored_base) == (39, 1, 1)
    assert text.verdict == "no_detectable_difference" and text.discordance == 0.0


def test_an_adapter_whose_base_was_not_evaluated_is_not_tested_and_says_so():
    row = effect().set_index(["adapter", "track"]).loc[("other_lora", "final")]
    assert row.verdict == "not_tested" and math.isnan(row.p_value) and row.n_pairs == 0
    assert row.reason == "base other_base not evaluated (not drawn, or no image judged)"


def test_the_base_better_and_no_adapter_at_all():
    scores = pd.concat(
        [finals("lora", [0.0] * 30 + [1.0] * 10), finals("base", [1.0] * 40)], ignore_index=True
    )
    (row,) = finetune_effect_table(scores, {"lora": "base"}, SETTINGS, BOOT).itertuples()
    assert row.verdict == "base_better" and row.difference == pytest.approx(-0.75)
    empty = finetune_effect_table(scores, {}, SETTINGS, BOOT)
    assert empty.empty and list(empty.columns) == list(FINETUNE_EFFECT_COLUMNS)


def test_the_pairs_come_from_the_generation_manifest():
    manifest = pd.DataFrame(
        {
            "model": ["lora", "lora", "base", "programmatic"],
            "meta": [
                json.dumps({"adapter": {"lora_path": "data/06_models/lora", "base": "base"}}),
                json.dumps({"adapter": {"lora_path": "data/06_models/lora", "base": "base"}}),
                json.dumps({}),
                None,
            ],
        }
    )
    assert manifest_bases(manifest) == {"lora": "base"}
    assert manifest_bases(pd.DataFrame(columns=["model", "sample_id"])) == {}


def test_metrics_name_each_adapter_and_carry_the_verdict_as_a_sign():
    metrics = finetune_effect_metrics(effect(), "sciir_veto")
    assert metrics["finetune_effect.lora.verdict"] == 1.0
    assert metrics["finetune_effect.lora.difference"] == pytest.approx(0.35)
    assert (
        metrics["finetune_effect.lora.n_pairs"] == 40.0 and metrics["finetune_effect.lora.score_base"] == 0.35
    )
    assert metrics["finetune_effect.lora.text.verdict"] == 0.0
    assert "finetune_effect.lora.text.ci_low" not in metrics  # the interval of final only
    assert math.isnan(metrics["finetune_effect.other_lora.verdict"])


def test_the_effect_in_words_under_the_leaderboard_and_in_the_report():
    table = effect()
    words = finetune_effect_text(table, "sciir_veto")
    assert words is not None and words.startswith("Fine-tuning effect on final")
    assert "lora against base: 35.0% -> 70.0%" in words and "the adapter is better" in words
    assert "other_lora against other_base: not tested" in words
    assert finetune_effect_text(table.iloc[0:0], "sciir_veto") is None
    lead = pd.DataFrame([board_row("lora", 0.7, 1.0, 1.0), board_row("base", 0.35, 1.0, 1.0)])
    assert words in leaderboard_text(lead.assign(aggregation="sciir_veto"), None, table)
    (section,) = finetune_effect_sections(table, {"sciir_veto": "strict pass rate"})
    assert section.title.startswith("Fine-tuning effect, strict pass rate")
    first = section.rows[0]
    assert first[:5] == ["lora (base: base)", "final", "0.350", "0.700", "the adapter is better"]
