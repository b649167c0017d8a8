"""`kedro run --pipelines evaluate` on a verdicts file in a fresh clone, no other pipeline run first."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fresh(make_clone) -> Path:
    return make_clone("fresh")


def test_a_verdicts_file_is_scored_without_any_other_stage(fresh, kedro):
    assert not (fresh / "data" / "05_model_input" / "benchmark.parquet").exists()
    answers = pd.DataFrame(
        {
            "model": ["mine"] * 4 + ["theirs"] * 4,
            "sample_id": ["p1", "p1", "p2", "p2"] * 2,
            "question_id": ["q1", "q2", "q1", "q2"] * 2,
            "parent_ids": ["[]", '["q1"]', "[]", '["q1"]'] * 2,
            "verdict": ["yes", "yes", "yes", "no", "no", "yes", "yes", ""],
        }
    )
    answers.to_csv(fresh / "answers.csv", index=False)
    result = kedro(
        fresh,
        "--pipelines",
        "evaluate",
        "--params",
        "evaluate.verdicts_file=answers.csv,evaluate.aggregation=dsg",
    )
    assert result.returncode == 0, result.stderr[-6000:]
    results = fresh / "data" / "08_reporting" / "benchmarks" / "sciir_bench" / "verdicts_answers"
    assert not (fresh / "data" / "08_reporting" / "leaderboard.csv").exists()  # the default run's
    assert (results / "report" / "index.html").is_file() and (results / "evaluate.json").is_file()
    board = pd.read_csv(results / "leaderboard.csv").set_index("model")
    # mine: p1 1, p2 (yes, no) 1/2 -> 0.75; theirs: p1 q1 "no" fails q2 by DSG -> 0, p2 q1 yes -> 1 -> 0.5
    assert board.loc["mine", "final"] == pytest.approx(0.75) and board.loc["mine", "final_n"] == 2
    assert board.loc["theirs", "final"] == pytest.approx(0.5)
    log = result.stdout + result.stderr
    assert "AIBench examination skipped" in log and "baseline metrics skipped" in log
    assert "evaluate.verdicts_file is set" in log


def test_judging_without_a_benchmark_names_what_to_run(fresh, kedro):
    result = kedro(fresh, "--pipelines", "evaluate")
    assert result.returncode != 0
    # The console wraps long lines anywhere, inside a word of a long path too: compared without whitespace.
    said = "".join(result.stderr.split())
    expected = (
        f"evaluate: no benchmark: {fresh}/data/05_model_input/benchmark.parquet does not exist (written by "
        "`kedro run --pipelines bench_select`); or give a benchmark file with evaluate.benchmark=FILE (its "
        "images with evaluate.images_dir=FOLDER), or re-aggregate another system's verdicts with "
        "evaluate.verdicts_file=FILE"
    )
    assert "".join(expected.split()) in said
