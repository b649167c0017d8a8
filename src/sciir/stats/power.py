"""What a paired comparison of pass rates can detect: McNemar's test's power and the smallest difference.

Two models judged pass / fail on the same n items; the items where exactly one of them passes are the
*discordant* ones, a share psi of the items (the discordance), and the difference of the two pass rates is
delta = (items only A passes - items only B passes) / n, so |delta| <= psi. Connor's normal approximation
of McNemar's test for this paired design (R. J. Connor, "Sample size for testing differences in
proportions for the paired-sample design", Biometrics 43(1), 1987, pp. 207-211) gives the items needed to
detect delta with power 1 - beta at two-sided level alpha:

    n = (z_{1-alpha/2} sqrt(psi) + z_{1-beta} sqrt(psi - delta^2))^2 / delta^2

``mcnemar_power`` solves it for the power, ``detectable_difference`` for delta: the positive root of the
quadratic the formula becomes,

    delta = sqrt(psi) (z_{1-alpha/2} sqrt(n) + z_{1-beta} sqrt(n + z_{1-beta}^2 - z_{1-alpha/2}^2)) / (n + z_{1-beta}^2).

The exact test (``sciir.stats.paired.mcnemar_exact``) is discrete and a little more conservative than
this approximation on few discordant items; ``benchmarks/bench_paired_tests.py`` measures by how much.
"""

from __future__ import annotations

import math


def _checked(discordance: float, n: int, alpha: float) -> None:
    if not 0.0 <= discordance <= 1.0:
        raise ValueError(f"the discordance is a share of the items, in [0, 1], got {discordance}")
    if n < 0:
        raise ValueError(f"the number of items is at least 0, got {n}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha is in (0, 1), got {alpha}")


def mcnemar_power(difference: float, discordance: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided McNemar test at level ``alpha`` on ``n`` paired items whose true pass rates
    differ by ``difference`` with a share ``discordance`` of discordant items (Connor 1987, solved for the
    power). NaN when ``difference`` exceeds ``discordance`` (no such pair of models exists) or n is 0."""
    from scipy.stats import norm

    _checked(discordance, n, alpha)
    delta = abs(difference)
    if n == 0 or delta > discordance + 1e-12:
        return math.nan
    z_alpha = float(norm.ppf(1.0 - alpha / 2.0))
    shift = delta * math.sqrt(n) - z_alpha * math.sqrt(discordance)
    spread = discordance - delta**2
    if spread <= 0.0:
        return 1.0 if shift > 0 else float(norm.cdf(-z_alpha))
    return float(norm.cdf(shift / math.sqrt(spread)))


def detectable_difference(discordance: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest difference of pass rates (a share, 0-1) that the two-sided McNemar test at level
    ``alpha`` detects with probability ``power`` on ``n`` paired items with a share ``discordance`` of
    discordant items (Connor 1987, solved for delta). NaN when it cannot be said: no discordant item
    (nothing tells the models apart yet), too few items for the formula (n + z_power^2 < z_alpha^2), or
    a root larger than the discordance (even all discordant items going one way would not be detected
    with that power)."""
    from scipy.stats import norm

    _checked(discordance, n, alpha)
    if not 0.5 <= power < 1.0:
        raise ValueError(f"power is in [0.5, 1), got {power}")
    if discordance == 0.0 or n == 0:
        return math.nan
    z_alpha, z_power = float(norm.ppf(1.0 - alpha / 2.0)), float(norm.ppf(power))
    inside = n + z_power**2 - z_alpha**2
    if inside < 0.0:
        return math.nan
    root = math.sqrt(discordance) * (z_alpha * math.sqrt(n) + z_power * math.sqrt(inside)) / (n + z_power**2)
    return root if root <= discordance else math.nan


def undetectable_reason(discordance: float, n: int, alpha: float = 0.05, power: float = 0.8) -> str | None:
    """Why ``detectable_difference`` is NaN for these figures, in words (None when it is a number)."""
    if not math.isnan(detectable_difference(discordance, n, alpha, power)):
        return None
    if n == 0:
        return "no sample shared"
    if discordance == 0.0:
        return "no discordant sample: nothing tells the models apart yet"
    return (
        f"too few samples: with {discordance:.0%} of them discordant, {n} would not detect even the largest "
        f"difference possible (every discordant sample going one way) with {power:.0%} power"
    )
