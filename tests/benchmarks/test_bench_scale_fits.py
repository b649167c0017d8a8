"""bench_scale's fits over repeated runs: medians per size, the growth exponents fitted on them, and the
spread between runs of one size (the quick mode runs one size once, so these paths are checked here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scale.py"


@pytest.fixture(scope="module")
def bench_scale():
    spec = importlib.util.spec_from_file_location("bench_scale", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = module
    spec.loader.exec_module(module)
    return module


def _runs(bench_scale, peaks: dict[tuple[int, int], float]):
    """Every stage at each (copies, repeat): items 100 x copies, run time linear in items, the given peaks."""
    return [
        bench_scale.StageRun(copies, repeat, stage, 100 * copies, 2.0 * copies, copies, copies, 0, peak, 1.0)
        for (copies, repeat), peak in peaks.items()
        for stage in bench_scale.STAGES
    ]


def test_medians_collapse_repeats_and_keep_stage_order(bench_scale):
    runs = _runs(bench_scale, {(10, 1): 500, (10, 2): 560, (10, 3): 520, (100, 1): 600})
    rows = bench_scale.medians(runs)
    assert [(row.copies, row.stage) for row in rows] == [
        (copies, stage) for copies in (10, 100) for stage in bench_scale.STAGES
    ]
    assert {row.peak_mb for row in rows if row.copies == 10} == {520}
    assert {row.peak_mb for row in rows if row.copies == 100} == {600}


def test_spread_is_the_largest_ratio_between_runs_of_one_size(bench_scale):
    runs = _runs(bench_scale, {(10, 1): 500, (10, 2): 560, (100, 1): 600, (100, 2): 630})
    assert bench_scale.spread(runs, "evaluate") == pytest.approx(1.12)
    assert bench_scale.spread(_runs(bench_scale, {(10, 1): 500, (100, 1): 600}), "curate") == 1.0


def test_growth_fits_the_medians(bench_scale, capsys):
    # Peaks 400 / 600 / 500 at 10 copies (median 500) and 700 / 700 at 100: 1.40 largest / smallest,
    # exponent log(1.4) / log(10) = 0.15; run time linear in items: exponent 1.00.
    runs = _runs(bench_scale, {(10, 1): 400, (10, 2): 600, (10, 3): 500, (100, 1): 700, (100, 2): 700})
    bench_scale.growth(runs)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("evaluate"))
    assert line.split() == ["evaluate", "1.00", "1.00", "0.15", "1.40", "1.50"]
