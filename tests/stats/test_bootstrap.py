"""Percentile bootstrap of weighted means: repeatable, sensible width, and close to nominal coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sciir.stats.bootstrap import BootstrapConfig, weighted_mean_interval


def test_same_seed_same_interval_and_the_estimate_lies_inside():
    values = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    weights = np.ones_like(values)
    first = weighted_mean_interval(values, weights, BootstrapConfig(n_boot=500, seed=3))
    again = weighted_mean_interval(values, weights, BootstrapConfig(n_boot=500, seed=3))
    assert first == again
    assert first[0] <= values.mean() <= first[1] and first[0] < first[1]


def test_constant_scores_give_a_point_interval():
    assert weighted_mean_interval(np.ones(5), np.ones(5), BootstrapConfig(n_boot=200)) == (1.0, 1.0)


def test_nothing_weighted_gives_no_interval():
    low, high = weighted_mean_interval(np.array([np.nan, np.nan]), np.zeros(2), BootstrapConfig(n_boot=50))
    assert math.isnan(low) and math.isnan(high)


def test_width_matches_the_normal_approximation_for_a_proportion():
    values = np.tile([1.0, 0.0], 200)  # p = 0.5, n = 400: half-width about 1.96 * sqrt(0.25 / 400) = 0.049
    low, high = weighted_mean_interval(values, np.ones_like(values), BootstrapConfig(n_boot=2000))
    assert (high - low) / 2 == pytest.approx(1.96 * math.sqrt(0.25 / 400), abs=0.006)


def test_weights_make_it_a_pooled_mean():
    # Two samples: 1 of 1 correct and 0 of 3 correct. Resamples {a,a}: 1, {b,b}: 0 (a quarter each) and
    # {a,b}: pooled 1/4 (half of them; unweighted it would be 1/2), so the central 40% is exactly 1/4.
    values, weights = np.array([1.0, 0.0]), np.array([1.0, 3.0])
    low, high = weighted_mean_interval(values, weights, BootstrapConfig(n_boot=4000, confidence=0.4))
    assert (low, high) == (0.25, 0.25)


def test_intervals_cover_the_true_rate_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    config = BootstrapConfig(n_boot=400, seed=11)
    covered = 0
    for _ in range(200):
        values = (rng.random(60) < 0.7).astype(float)
        low, high = weighted_mean_interval(values, np.ones_like(values), config)
        covered += low <= 0.7 <= high
    assert 0.88 <= covered / 200 <= 0.99
