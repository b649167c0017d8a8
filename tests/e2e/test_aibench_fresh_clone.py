"""AIBench's published file from a fresh clone, with the documented commands and nothing else run first
(docs/bring_your_own_benchmark.md, "AIBench's published file"): the import command, generate drawing
each paper from its method text, evaluate examining what it drew, and evaluate examining a folder of the
user's drawings beside the papers' own figures. The blank baseline runs beside them all, never ranked.

The file is the page's example in AIBench's own layout (``id``, LaTeX ``method_text``, a ``checklist`` of
multiple-choice questions per level with the insufficient-information option); the judge is the offline
default, which answers a level-1 question by reading the component labels and abstains on the rest.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).with_name("doc_fixtures.py")
PAPERS = ["CVPR_2025__2506.00001v1", "ICLR_2025__2501.00002v2"]
INSUFFICIENT = (
    "The image does not contain sufficient information to answer or none of the other options are correct."
)


def _doc_fixtures():
    spec = importlib.util.spec_from_file_location("doc_fixtures", FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fresh(make_clone) -> Path:
    root = make_clone("aibench_file")
    fixtures = _doc_fixtures()
    fixtures.FIXTURES["aibench_papers.jsonl"](root)
    fixtures.FIXTURES["aibench_images"](root)
    return root


@pytest.fixture(scope="module")
def imported(fresh) -> subprocess.CompletedProcess:
    """The documented import command, run with the clone's own Python."""
    command = ["-m", "sciir.benchmark_import", "aibench", "aibench_papers.jsonl", "-o", "aibench.jsonl"]
    return subprocess.run(
        [str(fresh / ".venv" / "bin" / "python"), *command], cwd=fresh, capture_output=True, text=True
    )


def _said(result: subprocess.CompletedProcess) -> str:
    return " ".join((result.stdout + result.stderr).split())


def test_the_import_writes_one_sample_per_paper_with_its_questions_and_the_insufficient_option(
    imported, fresh
):
    assert imported.returncode == 0, imported.stderr[-4000:]
    samples = [json.loads(line) for line in (fresh / "aibench.jsonl").read_text().splitlines()]
    assert [sample["sample_id"] for sample in samples] == PAPERS
    assert [sample["group"] for sample in samples] == ["CVPR_2025", "ICLR_2025"]
    # the method text as its reader sees it: LaTeX quotes as quotes, the citation dropped
    assert "“Image Encoder” feeds into “Fusion Module”" in samples[0]["prompt"]
    assert "\\cite" not in samples[0]["prompt"]
    levels = [question["level"] for sample in samples for question in sample["choice_questions"]]
    assert levels == [1, 2, 3, 4]
    assert all(INSUFFICIENT in q["options"].values() for s in samples for q in s["choice_questions"])


def test_generate_then_evaluate_examine_each_paper_beside_the_blank_baseline(
    imported, fresh, kedro, run_names
):
    assert imported.returncode == 0, imported.stderr[-4000:]
    drawn = kedro(fresh, "--pipelines", "generate", "--params", "generate.benchmark=aibench.jsonl")
    assert drawn.returncode == 0, drawn.stderr[-6000:]
    folder = fresh / "data" / "07_model_output" / "benchmarks" / "aibench"
    manifest = pd.read_parquet(folder / "generation_manifest.parquet")
    ok = manifest[manifest["status"] == "ok"]
    assert sorted(ok["sample_id"].unique()) == PAPERS
    assert {"programmatic", "programmatic_faulty"} <= set(ok["model"])
    assert all(
        (folder / "generations" / m / f"{s}.png").is_file() for m, s in ok[["model", "sample_id"]].values
    )
    assert run_names(fresh)[-1] == "generate aibench"

    judged = kedro(fresh, "--pipelines", "evaluate", "--params", "evaluate.benchmark=aibench.jsonl")
    assert judged.returncode == 0, judged.stderr[-6000:]
    results = fresh / "data" / "08_reporting" / "benchmarks" / "aibench"
    scores = pd.read_csv(results / "aibench_scores.csv").set_index("model")
    assert {"programmatic", "programmatic_faulty", "blank"} <= set(scores.index)
    assert scores.loc["blank", "role"] == "reference"
    answers = pd.read_parquet(results / "aibench_answers.parquet")
    assert set(answers["sample_id"]) == set(PAPERS) and set(answers["level"]) == {1, 2, 3, 4}
    assert run_names(fresh)[-1] == "evaluate aibench"


def test_evaluate_examines_a_folder_of_drawings_beside_the_papers_own_figures(imported, fresh, kedro):
    assert imported.returncode == 0, imported.stderr[-4000:]
    # The documented command, as written.
    params = "evaluate.benchmark=aibench.jsonl,evaluate.images_dir=aibench_images"
    result = kedro(fresh, "--pipelines", "evaluate", "--params", params)
    assert result.returncode == 0, result.stderr[-6000:]
    results = fresh / "data" / "08_reporting" / "benchmarks" / "aibench" / "aibench_images"
    scores = pd.read_csv(results / "aibench_scores.csv").set_index("model")
    assert scores.loc["mine", "role"] == "contestant"
    assert scores.loc["reference", "role"] == scores.loc["blank", "role"] == "reference"
    answers = pd.read_parquet(results / "aibench_answers.parquet").set_index(
        ["model", "sample_id", "question_id"]
    )
    # Level 1 asks which component is shown: mine's drawing and the paper's figure write "Image Encoder",
    # read by OCR; nothing is read on the blank image, and the offline solver abstains on the other levels.
    assert answers.loc[("mine", PAPERS[0], "q1"), "answer"] == "A"
    assert answers.loc[("reference", PAPERS[0], "q1"), "answer"] == "A"
    assert set(answers.loc["blank", "status"]) == {"abstained"}
    # Scores come with how much was answered: 1 of 4 questions, the level-1 one.
    assert scores.loc["mine", ["level1", "overall", "coverage", "n_questions", "n_answered"]].tolist() == [
        1.0, 1.0, 0.25, 4, 1
    ]  # fmt: skip
    assert scores.loc["blank", "coverage"] == 0.0 and pd.isna(scores.loc["blank", "overall"])
    # Multiple-choice questions only: the checklist judge has nothing to ask, and says so.
    assert pd.read_csv(results / "leaderboard.csv").empty
    assert "nothing to ask" in _said(result)
