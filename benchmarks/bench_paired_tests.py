"""Do evaluate's paired comparisons keep their false positives at alpha, and detect what they promise?

Two models are judged pass / fail on n benchmark samples with a planted true difference of pass rate (0, 5
and 10 points, and the smallest difference evaluate predicts it detects with 80% power) at a true
discordance of 30% (the share of samples exactly one model passes): per sample, only A passes with
probability (0.3 + d) / 2, only B with (0.3 - d) / 2, both or neither with 0.35 each. Each repetition draws
the samples anew and compares the two models exactly as evaluate does (``sciir.evaluation.comparisons.
compare_family``: exact McNemar, Holm over the pairs, the paired bootstrap interval, the verdict). For
each planted difference it prints how often the corrected test rejects (McNemar after Holm) and how often
evaluate declares the two different ("A better than B" or the reverse: the corrected p below alpha and the
interval off 0), beside the power Connor's formula predicts for the true difference (``sciir.stats.power``),
the exact test's own power computed from the binomial distributions, and the detectable difference evaluate
prints from each repetition's observed discordance (its mean). At a planted 0 these are false positives and
must stay at or below alpha.

Then a family: four models of equal pass rate (each passes each sample with probability 0.5, on its own)
compared pairwise (6 pairs): how often at least one pair is declared different, with Holm's correction (the
family-wise false-positive rate, at or below alpha) and without it.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_paired_tests.py              # n 200 and 800, 1,000 repetitions
    .venv/bin/python benchmarks/bench_paired_tests.py --quick      # seconds: n 200, 40 repetitions, 50 resamples
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
from scipy import stats

from sciir.evaluation.comparisons import A_BETTER, B_BETTER, compare_family
from sciir.evaluation.params import ComparisonParams
from sciir.stats.bootstrap import BootstrapConfig
from sciir.stats.power import detectable_difference, mcnemar_power

KEYS = ("sciir_veto", "track", "final")
DISCORDANCE = 0.3


def exact_test_power(difference: float, discordance: float, n: int, alpha: float) -> float:
    """The exact McNemar test's own power, computed (not simulated): over the number k of discordant samples
    (binomial(n, discordance)), the chance that the two-sided binomial test of the A-only count (binomial(k,
    (discordance + difference) / (2 discordance))) rejects at ``alpha``. Connor's formula approximates it."""
    total = 0.0
    share = (discordance + difference) / (2 * discordance)
    for k in range(1, n + 1):
        weight = stats.binom.pmf(k, n, discordance)
        if weight < 1e-12:
            continue
        counts = np.arange(k + 1)
        p = np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(counts, k - counts), k, 0.5))
        total += weight * stats.binom.pmf(counts[p < alpha], k, share).sum()
    return float(total)


def units(passes: dict[str, np.ndarray]) -> pd.DataFrame:
    """``sample_scores``' final rows of models with these pass / fail results on the same samples."""
    n = len(next(iter(passes.values())))
    samples = [f"s{i:04d}" for i in range(n)]
    return pd.concat(
        [
            pd.DataFrame({"model": model, "sample_id": samples, "score": result, "weight": 1.0})
            for model, result in passes.items()
        ],
        ignore_index=True,
    )


def draw_pair(rng: np.random.Generator, n: int, difference: float) -> dict[str, np.ndarray]:
    """Two models' results on n samples: only A passes (0.3 + d) / 2, only B (0.3 - d) / 2, both or neither."""
    shares = [(DISCORDANCE + difference) / 2, (DISCORDANCE - difference) / 2]
    shares += [(1 - DISCORDANCE) / 2] * 2
    kind = rng.choice(4, size=n, p=shares)
    return {"A": np.isin(kind, (0, 2)).astype(float), "B": np.isin(kind, (1, 2)).astype(float)}


def two_models(
    n: int, difference: float, reps: int, settings: ComparisonParams, boot: BootstrapConfig, seed: int
) -> dict[str, float]:
    """Rejection rates and the mean detectable difference over ``reps`` repetitions of one planted difference."""
    rng = np.random.default_rng(seed)
    rejected = different = 0
    detectable = []
    for _ in range(reps):
        row = compare_family(KEYS, units(draw_pair(rng, n, difference)), ["A", "B"], settings, boot).iloc[0]
        rejected += bool(row["p_holm"] < settings.alpha)
        different += row["verdict"] in (A_BETTER, B_BETTER)
        detectable.append(row["detectable_diff"])
    return {
        "rejected": rejected / reps,
        "different": different / reps,
        "detectable": float(np.nanmean(detectable)) if not np.all(np.isnan(detectable)) else math.nan,
    }


def equal_family(
    reps: int, n: int, settings: ComparisonParams, boot: BootstrapConfig, seed: int
) -> tuple[float, float]:
    """Family-wise false-positive rate of four equal models (6 pairs), with Holm and without it."""
    rng = np.random.default_rng(seed)
    models = ["M1", "M2", "M3", "M4"]
    with_holm = without = 0
    for _ in range(reps):
        passes = {model: (rng.random(n) < 0.5).astype(float) for model in models}
        rows = compare_family(KEYS, units(passes), models, settings, boot)
        with_holm += bool(rows["verdict"].isin([A_BETTER, B_BETTER]).any())
        outside = (rows["ci_low"] > 0) | (rows["ci_high"] < 0)
        without += bool(((rows["p_value"] < settings.alpha) & outside).any())
    return with_holm / reps, without / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[200, 800], help="samples of the benchmark")
    parser.add_argument("--reps", type=int, default=1000, help="repetitions of each planted difference")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples, as evaluate.bootstrap")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="n 200, 40 repetitions, 50 resamples")
    args = parser.parse_args()
    if args.quick:
        args.n, args.reps, args.n_boot = [200], 40, 50
    settings, boot = ComparisonParams(), BootstrapConfig(n_boot=args.n_boot, seed=args.seed)
    started = time.perf_counter()
    print(
        f"paired tests: {args.reps} repetitions per row, true discordance {DISCORDANCE:.2f}, alpha "
        f"{settings.alpha}, power {settings.power}, {args.n_boot} bootstrap resamples"
    )
    print(
        f"{'planted':>8} {'n':>5} {'rejected':>9} {'different':>10} {'predicted':>10} {'s.e.':>6} "
        f"{'exact test':>11} {'detectable':>11}"
    )
    false_positive, at_detectable = {}, {}
    for n in args.n:
        predicted_min = detectable_difference(DISCORDANCE, n, settings.alpha, settings.power)
        for index, difference in enumerate((0.0, 0.05, 0.10, predicted_min)):
            rates = two_models(n, difference, args.reps, settings, boot, args.seed + 1000 * n + index)
            predicted = (
                mcnemar_power(difference, DISCORDANCE, n, settings.alpha) if difference else settings.alpha
            )
            exact = exact_test_power(difference, DISCORDANCE, n, settings.alpha)
            error = math.sqrt(predicted * (1 - predicted) / args.reps)
            label = f"{100 * difference:.1f}" + ("*" if index == 3 else "")
            print(
                f"{label:>8} {n:>5} {rates['rejected']:>9.3f} {rates['different']:>10.3f} {predicted:>10.3f} "
                f"{error:>6.3f} {exact:>11.3f} {100 * rates['detectable']:>11.1f}"
            )
            if difference == 0.0:
                false_positive[n] = max(rates["rejected"], rates["different"])
            if index == 3:
                at_detectable[n] = (rates["rejected"], predicted, exact)
    for line in (
        "(planted and detectable in points, * the predicted detectable difference at the true discordance;",
        " rejected: McNemar after Holm; different: evaluate's verdict, A or B better (Holm and the interval);",
        " predicted: Connor's power (alpha at a planted 0), s.e. its Monte Carlo standard error over the",
        " repetitions; exact test: the exact McNemar test's own power, computed; detectable: the mean of what",
        " evaluate prints from each repetition's observed discordance)",
    ):
        print(line)
    fp = ", ".join(f"{rate:.3f} (n={n})" for n, rate in false_positive.items())
    ok = all(rate <= settings.alpha for rate in false_positive.values())
    print(
        f"false-positive rate at a planted 0: {fp}; at or below alpha {settings.alpha}: {'yes' if ok else 'NO'}"
    )
    power = ", ".join(
        f"{rate:.3f} against {predicted:.3f} predicted, {exact:.3f} exact (n={n})"
        for n, (rate, predicted, exact) in at_detectable.items()
    )
    print(f"power at the predicted detectable difference: {power}")
    with_holm, without = equal_family(args.reps, args.n[0], settings, boot, args.seed + 7)
    print(
        f"4 equal models, 6 pairs, n={args.n[0]}: any pair declared different {with_holm:.3f} with Holm, "
        f"{without:.3f} without"
    )
    print(f"wall: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
