"""Krippendorff's alpha on the published worked example, perfect agreement and degenerate inputs."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sciir.stats.agreement import (
    AGREEMENT_COLUMNS,
    agreement_table,
    krippendorff_alpha,
    mean_pairwise_spearman,
    pairable_values,
    reliability_matrix,
)

_ = np.nan
# Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. University of Pennsylvania,
# Annenberg School for Communication, section "C. Nominal data, any number of observers, missing data"
# and the following sections: 4 observers x 12 units, values 1-5, missing data. Published results:
# alpha nominal = 0.743, ordinal = 0.815, interval = 0.849, ratio = 0.797 (40 pairable values).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],  # observer A
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],  # observer B
        [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],  # observer C
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],  # observer D
    ]
).T  # units x raters


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_alpha_reproduces_krippendorff_2011(level, published):
    result = krippendorff_alpha(KRIPPENDORFF_2011, level)
    assert round(result.value, 3) == published
    assert result.n_used == 40 and result.n_units == 12 and result.n_raters == 4 and result.reason is None


def test_pairable_values_of_the_worked_example():
    # Counted by hand: 12 units, unit 12 has one rating (not pairable); the others give 40 values.
    assert pairable_values(KRIPPENDORFF_2011) == 40
    assert pairable_values(KRIPPENDORFF_2011[:, :1]) == 0


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_perfect_agreement_is_one_even_with_missing_ratings(level):
    units = np.array([[1, 1, _], [3, 3, 3], [5, _, 5], [2, 2, 2], [4, 4, _]], dtype=float)
    assert krippendorff_alpha(units, level).value == pytest.approx(1.0)


def test_one_rater_is_not_applicable_and_logged(caplog):
    ratings = pd.DataFrame(
        {"image_id": ["a", "b", "c"], "rater_id": "oracle_ground_truth", "score": [1, 3, 5]}
    )
    with caplog.at_level(logging.WARNING):
        table = agreement_table(ratings)
    assert list(table.columns) == list(AGREEMENT_COLUMNS)
    assert table["value"].isna().all()
    assert (table["reason"] == "only 1 rater: agreement between raters is not applicable").all()
    assert (
        "Krippendorff's alpha undefined" in caplog.text and "mean pairwise Spearman undefined" in caplog.text
    )


def test_no_pairable_values_or_no_variation_is_nan_with_a_reason():
    disjoint = np.array([[1, _], [_, 2], [3, _]], dtype=float)
    assert "no image was rated by two or more raters" in krippendorff_alpha(disjoint).reason
    flat = np.array([[2, 2], [2, 2]], dtype=float)
    result = krippendorff_alpha(flat)
    assert math.isnan(result.value) and "no variation" in result.reason


def test_mean_pairwise_spearman_averages_rater_pairs_on_shared_images():
    matrix = pd.DataFrame(
        {"r1": [1, 2, 3, 4, 5], "r2": [1, 3, 2, 4, 5], "r3": [5, 4, 3, 2, np.nan]},
        index=list("abcde"),
    )
    result = mean_pairwise_spearman(matrix)
    expected = np.mean(
        [
            stats.spearmanr([1, 2, 3, 4, 5], [1, 3, 2, 4, 5]).statistic,
            stats.spearmanr([1, 2, 3, 4], [5, 4, 3, 2]).statistic,
            stats.spearmanr([1, 3, 2, 4], [5, 4, 3, 2]).statistic,
        ]
    )
    assert result.value == pytest.approx(expected) and result.n_used == 3 and result.reason is None


def test_reliability_matrix_refuses_a_rater_rating_an_image_twice():
    ratings = pd.DataFrame({"image_id": ["a", "a", "b"], "rater_id": ["r1", "r1", "r1"], "score": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"more than once: \[\('a', 'r1'\)\]"):
        reliability_matrix(ratings)
