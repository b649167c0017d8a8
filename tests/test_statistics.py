"""Correlations against scipy, known values and the published TIFA numbers."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sciir.statistics import CORRELATION_COLUMNS, correlate, correlation_table, mean_ratings

TIFA = (
    Path(__file__).resolve().parents[1] / ".." / "shared" / "external" / "human_ratings" / "tifa"
    / "human_annotations_with_scores.json"
)  # fmt: skip


def test_perfectly_monotone_gives_one():
    result = correlate([1, 2, 3, 4, 5], [1, 4, 9, 16, 25])
    assert result.spearman_rho == pytest.approx(1.0)
    assert result.kendall_tau_b == pytest.approx(1.0)
    assert result.pearson_r < 1.0
    assert result.n == 5 and result.reason is None


def test_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=40).astype(float)
    y = x + rng.integers(0, 3, size=40)
    result = correlate(x, y)
    assert result.pearson_r == pytest.approx(stats.pearsonr(x, y).statistic)
    assert result.spearman_p == pytest.approx(stats.spearmanr(x, y).pvalue)
    tau = stats.kendalltau(x, y, variant="b")
    assert (result.kendall_tau_b, result.kendall_p) == pytest.approx((tau.statistic, tau.pvalue))


def test_missing_values_are_left_out_of_n():
    result = correlate([1.0, 2.0, None, 4.0, float("nan")], [2.0, 1.0, 3.0, 5.0, 4.0])
    assert result.n == 3
    assert result.pearson_r == pytest.approx(stats.pearsonr([1, 2, 4], [2, 1, 5]).statistic)


def test_constant_input_is_nan_with_a_logged_reason(caplog):
    with caplog.at_level(logging.WARNING):
        result = correlate([1, 1, 1, 1], [1, 2, 3, 4], label="final_pass")
    assert result.n == 4
    assert all(math.isnan(v) for v in (result.pearson_r, result.spearman_rho, result.kendall_tau_b))
    assert result.reason == "metric constant over all 4 pairs"
    assert "final_pass" in caplog.text and "constant" in caplog.text


def test_too_few_pairs_is_nan():
    result = correlate([1, 2], [2, 1])
    assert math.isnan(result.kendall_p) and "only 2 complete pairs" in result.reason


def test_table_columns_and_mean_ratings():
    ratings = pd.DataFrame(
        {
            "image_id": ["a", "a", "b", "c", "d"],
            "rater_id": ["r1", "r2", "r1", "r1", "r1"],
            "score": [1, 3, 3, 4, 5],
        }
    )
    consensus = mean_ratings(ratings)
    assert consensus.set_index("image_id").loc["a", "rating"] == 2.0
    assert consensus.set_index("image_id").loc["a", "n_raters"] == 2
    frame = consensus.assign(metric=[0.1, 0.5, 0.7, 0.9], flat=[1.0, 1.0, 1.0, 1.0])
    table = correlation_table(frame, ["metric", "flat"], "rating")
    assert list(table.columns) == list(CORRELATION_COLUMNS)
    assert table.loc[0, "spearman_rho"] == pytest.approx(1.0)
    assert math.isnan(table.loc[1, "pearson_r"]) and table.loc[1, "n"] == 4


@pytest.mark.skipif(not TIFA.exists(), reason="shared/external human ratings not present")
def test_published_tifa_correlations():
    images = json.loads(TIFA.read_text())
    human = [image["human_avg"] for image in images.values()]
    mplug = correlate([image["tifa_mplug-large"] for image in images.values()], human)
    assert mplug.n == 800
    assert mplug.pearson_r == pytest.approx(0.5967, abs=5e-4)
    assert mplug.spearman_rho == pytest.approx(0.5922, abs=5e-4)
    assert mplug.kendall_tau_b == pytest.approx(0.4717, abs=5e-4)
    clip = correlate([image["clipscore_vitb32"] for image in images.values()], human)
    assert (clip.pearson_r, clip.spearman_rho, clip.kendall_tau_b) == pytest.approx(
        (0.3318, 0.3198, 0.2314), abs=5e-4
    )
