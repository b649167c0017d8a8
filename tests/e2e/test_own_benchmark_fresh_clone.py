"""A benchmark of the user's own, evaluated on a folder of their images in a fresh clone with nothing run
first: one command with the offline judge, one with a served judge (the loopback OpenAI-compatible server).
Results go to the benchmark's own folder, name it, and leave the default run's outputs alone."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pandas as pd
import pytest

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def _write_inputs(root: Path) -> None:
    """The documented example (docs/bring_your_own_benchmark.md) and its images, by the fixture script
    the documented-commands test uses."""
    for name in ("physics.jsonl", "physics_images"):
        script = root / "tests" / "e2e" / "doc_fixtures.py"
        subprocess.run([str(root / ".venv" / "bin" / "python"), str(script), name], cwd=root, check=True)


@pytest.fixture(scope="module")
def fresh(make_clone) -> Path:
    root = make_clone("own_benchmark")
    _write_inputs(root)
    return root


def evaluate_physics(kedro, root: Path) -> subprocess.CompletedProcess:
    """The documented command: the physics benchmark on its folder of images."""
    params = "evaluate.benchmark=physics.jsonl,evaluate.images_dir=physics_images"
    return kedro(root, "--pipelines", "evaluate", "--params", params)


def _results(root: Path) -> Path:
    return root / "data" / "08_reporting" / "benchmarks" / "physics" / "physics_images"


def _run_tags(root: Path) -> dict[str, str]:
    mlflow.set_tracking_uri(f"sqlite:///{root / 'mlruns' / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["sciir"], order_by=["start_time DESC"])
    if "tags.mlflow.parentRunId" in runs.columns:  # the per-model runs are nested in the pipeline's run
        runs = runs[runs["tags.mlflow.parentRunId"].isna()]
    return {name[len("tags.") :]: value for name, value in runs.iloc[0].items() if name.startswith("tags.")}


def test_offline_judge_on_an_own_benchmark_from_a_fresh_clone(fresh, kedro):
    assert not (fresh / "data" / "05_model_input" / "benchmark.parquet").exists()
    result = evaluate_physics(kedro, fresh)
    assert result.returncode == 0, result.stderr[-6000:]
    board = pd.read_csv(_results(fresh) / "leaderboard.csv")
    assert board["benchmark"].tolist() == ["physics"] * 2 and board["model"].tolist() == ["mine", "blank"]
    assert board["role"].tolist() == ["contestant", "reference"]  # the blank baseline, never ranked
    assert {"geometry", "geometry_n", "coverage_geometry"} <= set(board.columns)  # its own category
    said = " ".join(result.stdout.split())
    assert f"Report: {_results(fresh) / 'report' / 'index.html'}" in said  # the closing summary points there
    summary = (_results(fresh) / "report" / "index.html").read_text()
    assert "<h1>physics: evaluation report</h1>" in summary and "physics (sha256 " in summary
    every = pd.read_parquet(_results(fresh) / "verdicts.parquet")
    assert "yes" not in set(every.loc[every["model"] == "blank", "verdict"])  # nothing is read on white
    verdicts = every[every["model"] == "mine"].set_index(["sample_id", "question_id"])
    # Every label drawn is read; "Fulcrum" is not drawn on lever__reasoning.
    assert verdicts.loc[("lever__plain", "q2"), "verdict"] == "yes"
    assert verdicts.loc[("circuit", "q1"), "verdict"] == "yes"
    assert verdicts.loc[("lever__reasoning", "q2"), "verdict"] != "yes"
    log = " ".join((result.stdout + result.stderr).split())
    assert "AIBench examination skipped" in log and "questions of benchmark physics" in log
    # Nothing of the default run's outputs was written: its tracked metrics are as committed.
    reporting = fresh / "data" / "08_reporting"
    assert not (reporting / "leaderboard.csv").exists() and not (reporting / "report").exists()
    assert not (fresh / "data" / "07_model_output" / "verdicts.parquet").exists()
    for tracked in (reporting / "metrics").glob("*.json"):
        assert tracked.read_bytes() == (REPO / tracked.relative_to(fresh)).read_bytes(), tracked.name
    tags = _run_tags(fresh)
    assert tags["sciir.benchmark.name"] == "physics" and re.fullmatch(
        r"[0-9a-f]{64}", tags["sciir.benchmark.sha256"]
    )
    assert tags["mlflow.runName"] == "evaluate physics on physics_images"  # named by what it did
    assert "runs?workflowType=machine_learning (start the UI with: mlflow ui --backend-store-uri" in said


def _files_under(folder: Path) -> dict[str, int]:
    """Every file below ``folder`` with its modification time."""
    return {str(path): path.stat().st_mtime_ns for path in folder.rglob("*") if path.is_file()}


def test_a_dry_run_lists_the_requests_and_their_cost_and_sends_and_writes_nothing(fresh, kedro):
    # A judge nobody serves (port 9, discard): a dry run must not need it.
    local = fresh / "conf" / "local" / "backends.yml"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(
        "judge:\n  type: sciir.catalog.backend_dataset.BackendDataset\n  kind: vlm\n  backend: openai\n"
        "  config: {base_url: 'http://127.0.0.1:9/v1', model: priced-vlm, max_tokens: 400,\n"
        "           price_per_million_prompt_tokens: 1.0, price_per_million_completion_tokens: 4.0}\n"
        "  cache_path: data/cache/dry.sqlite\n"
    )
    before = _files_under(fresh / "data")
    params = "evaluate.benchmark=physics.jsonl,evaluate.images_dir=physics_images"
    try:
        result = kedro(fresh, "--pipelines", "evaluate", "--params", params, env_vars={"SCIIR_DRY_RUN": "1"})
    finally:
        local.unlink()
    assert result.returncode == 0, result.stderr[-6000:]
    row = r"OpenAICompatibleVLM\s+judge\s+(\d+)\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d.]+)"
    table = re.search(row, result.stdout)
    assert table, result.stdout[-3000:]
    requests, images, prompt, completion, cost = table.groups()
    # one per image, the blank baseline's three white images too, 400 tokens each
    assert (int(requests), int(images), completion) == (6, 6, "2,400")
    prompt_tokens = int(prompt.replace(",", ""))
    assert float(cost) == pytest.approx((prompt_tokens * 1.0 + 2400 * 4.0) / 1e6, abs=0.006)
    assert "Not counted:" in result.stdout
    printed = result.stdout + result.stderr
    assert "none of the" in printed and "Replacing dataset" not in printed  # said once, not per output
    after = {path: stamp for path, stamp in _files_under(fresh / "data").items() if "/cache/" not in path}
    assert after == {path: stamp for path, stamp in before.items() if "/cache/" not in path}


@pytest.fixture
def served_judge(fresh) -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "sciir.testing.fake_openai_server", "--port", "0", "--latency-s", "0.01"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = server.stdout.readline()
    url = re.search(r"http://\S+", line).group(0)
    local = fresh / "conf" / "local" / "backends.yml"
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(
        "judge:\n  type: sciir.catalog.backend_dataset.BackendDataset\n  kind: vlm\n  backend: openai\n"
        f"  config: {{base_url: '{url}', model: fake-vlm, concurrency: 8}}\n"
        "  cache_path: data/cache/served.sqlite\n"
    )
    yield url
    local.unlink()
    server.terminate()
    server.wait(timeout=30)


def test_served_judge_on_the_same_benchmark_by_configuration_only(fresh, served_judge, kedro):
    result = evaluate_physics(kedro, fresh)
    assert result.returncode == 0, result.stderr[-6000:]
    verdicts = pd.read_parquet(_results(fresh) / "verdicts.parquet")
    assert len(verdicts) == 18 and set(verdicts["status"]) == {"judged"}  # the server answers every question
    # it says yes to everything, so it passes the blank baseline's white images too, and the run says so
    assert "the judge passes blank images" in " ".join((result.stdout + result.stderr).split())
    assert (fresh / "data" / "cache" / "served.sqlite").exists()


def test_a_benchmark_set_in_a_conf_file_is_refused_with_the_reason(fresh, kedro):
    local = fresh / "conf" / "local" / "parameters_evaluate.yml"
    local.write_text("evaluate:\n  benchmark: physics.jsonl\n")
    try:
        result = kedro(fresh, "--pipelines", "evaluate")
    finally:
        local.unlink()
    assert result.returncode != 0
    said = " ".join(result.stderr.split())
    assert "evaluate.benchmark is set in a conf file; give it on the command line instead" in said
