"""McNemar's power and the smallest detectable difference (Connor 1987): the formula solved both ways, the
cases with no answer, and the exact test's power simulated against the prediction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sciir.stats.power import detectable_difference, mcnemar_power, undetectable_reason


def connor_n(delta: float, discordance: float, alpha: float, power: float) -> float:
    """Connor's sample size, n = (z_{1-alpha/2} sqrt(psi) + z_{power} sqrt(psi - delta^2))^2 / delta^2."""
    z_alpha, z_power = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    return (z_alpha * math.sqrt(discordance) + z_power * math.sqrt(discordance - delta**2)) ** 2 / delta**2


@pytest.mark.parametrize(("discordance", "n"), [(0.3, 800), (0.1, 200), (0.6, 60), (0.05, 3000)])
@pytest.mark.parametrize("alpha", [0.05, 0.05 / 3])
def test_detectable_difference_solves_connors_formula(discordance, n, alpha):
    delta = detectable_difference(discordance, n, alpha, 0.8)
    assert 0 < delta <= discordance
    assert connor_n(delta, discordance, alpha, 0.8) == pytest.approx(n, rel=1e-9)
    assert mcnemar_power(delta, discordance, n, alpha) == pytest.approx(0.8, abs=1e-9)


def test_known_figures_of_the_formula():
    # psi = 0.3, n = 800, alpha 0.05, 80% power: delta = sqrt(.3)(1.96 sqrt(800) + 0.8416 sqrt(796.87)) / 800.71.
    assert detectable_difference(0.3, 800) == pytest.approx(0.0542, abs=5e-5)
    assert mcnemar_power(0.05, 0.3, 800) == pytest.approx(0.7339, abs=5e-5)
    assert mcnemar_power(0.10, 0.3, 800) == pytest.approx(0.9994, abs=5e-5)
    assert mcnemar_power(0.0, 0.3, 800) == pytest.approx(0.025, abs=1e-9)  # one tail of alpha


def test_more_items_detect_smaller_differences_and_more_discordance_needs_larger_ones():
    by_n = [detectable_difference(0.3, n) for n in (100, 200, 400, 800)]
    assert by_n == sorted(by_n, reverse=True)
    assert by_n[0] / by_n[3] == pytest.approx(math.sqrt(8), rel=0.05)  # about 1 / sqrt(n)
    by_discordance = [detectable_difference(psi, 400) for psi in (0.1, 0.2, 0.4)]
    assert by_discordance == sorted(by_discordance)


def test_no_answer_is_nan_with_its_reason():
    assert math.isnan(detectable_difference(0.0, 100)) and "no discordant" in undetectable_reason(0.0, 100)
    assert math.isnan(detectable_difference(0.6, 5)) and "too few samples" in undetectable_reason(0.6, 5)
    assert math.isnan(detectable_difference(0.3, 0)) and undetectable_reason(0.3, 0) == "no sample shared"
    assert undetectable_reason(0.3, 800) is None
    assert math.isnan(mcnemar_power(0.4, 0.3, 100))  # a difference larger than the discordance cannot be


def test_simulated_power_of_the_exact_test_is_close_to_the_prediction():
    rng = np.random.default_rng(0)
    n, discordance = 400, 0.3
    delta = detectable_difference(discordance, n)
    shares = [(discordance + delta) / 2, (discordance - delta) / 2, 1 - discordance]
    counts = rng.multinomial(n, shares, size=4000)
    a_only, b_only = counts[:, 0], counts[:, 1]
    p = np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(a_only, b_only), a_only + b_only, 0.5))
    assert np.mean(p < 0.05) == pytest.approx(0.8, abs=0.04)
