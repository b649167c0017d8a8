"""Rank intervals over bootstrap resamples of the items: separated models, ties, close models, models
with few scored items."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.ranks import competition_ranks, rank_intervals

CONFIG = BootstrapConfig(n_boot=500, seed=0)


def test_competition_ranks_share_the_better_rank_on_ties():
    assert competition_ranks(np.array([0.5, 0.9, 0.5, 0.1])).tolist() == [2, 1, 2, 4]
    assert competition_ranks(np.array([[0.2, 0.3], [0.3, 0.3]])).tolist() == [[2, 1], [1, 1]]


def test_far_apart_models_have_single_rank_intervals():
    rng = np.random.default_rng(0)
    scores = np.column_stack([rng.random(200) < p for p in (0.2, 0.8, 0.5)]).astype(float)
    result = rank_intervals(scores, np.ones_like(scores), CONFIG)
    assert result.rank.tolist() == [3, 1, 2]
    assert result.low.tolist() == [3, 1, 2] and result.high.tolist() == [3, 1, 2]
    assert result.n_resamples == 500


def test_identical_models_share_rank_one_and_close_models_overlap():
    rng = np.random.default_rng(1)
    a = (rng.random(100) < 0.5).astype(float)
    same = rank_intervals(np.column_stack([a, a]), np.ones((100, 2)), CONFIG)
    assert same.low.tolist() == [1, 1] and same.high.tolist() == [1, 1]
    b = a.copy()
    b[np.flatnonzero(a == 0)[:2]] = 1.0  # two passes more out of 100
    close = rank_intervals(np.column_stack([a, b]), np.ones((100, 2)), CONFIG)
    assert close.rank.tolist() == [2, 1]
    assert close.low.tolist() == [1, 1] and close.high.tolist() == [2, 1]  # B never behind A


def test_weights_and_unscored_items():
    # Model 0 is scored on one item of 30: resamples without that item leave the ranks undefined.
    scores = np.zeros((30, 2))
    scores[:, 1] = 0.5
    scores[0, 0] = 1.0
    weights = np.ones((30, 2))
    weights[1:, 0] = 0.0
    result = rank_intervals(scores, weights, CONFIG)
    assert result.rank.tolist() == [1, 2]
    assert 0 < result.n_resamples < 500  # (29/30)^30 = 36% of resamples miss item 0
    assert result.low.tolist() == [1, 2] and result.high.tolist() == [1, 2]


def test_left_out_resamples_are_logged_and_a_model_without_any_result_is_refused(caplog):
    scores, weights = np.ones((30, 2)), np.ones((30, 2))
    weights[1:, 0] = 0.0
    with caplog.at_level(logging.WARNING, logger="sciir.stats.ranks"):
        rank_intervals(scores, weights, CONFIG)
    assert "resamples leave a model without a scored item" in caplog.text
    weights[:, 0] = 0.0
    with pytest.raises(ValueError, match="at least one item"):
        rank_intervals(scores, weights, CONFIG)
