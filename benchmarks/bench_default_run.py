"""Time `kedro run` on the embedded sample: cold (empty data/ and cache) vs warm (everything cached).

Runs both in one fresh copy of the project, side by side, and prints per-stage model-call counts
and the warm/cold ratio. Usage: `python benchmarks/bench_default_run.py` from the repository root.

With ``--quick`` (about 20 s, a check that the script runs, not a measurement of the default run) the two runs
are ``kedro run --pipelines ingest`` in the same kind of fresh copy: the cold one writes the embedded sample
and its tables, the warm one finds them; the same timing, metrics reading and printing, where ingest's own
metrics hold no model calls (0 for every stage that ran).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODEL_STAGES = ("annotate", "generate", "evaluate")  # the stages of a default run that call models


def copy_project(root: Path) -> None:
    for item in ("conf", "src"):
        shutil.copytree(REPO / item, root / item, ignore=shutil.ignore_patterns("__pycache__", "local"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "conf" / "local").mkdir()


def timed_run(root: Path, pipelines: list[str]) -> tuple[float, float]:
    """Wall and child CPU seconds of one `kedro run` (of ``pipelines`` only, when named)."""
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONPATH": str(root / "src")}
    kedro = Path(sys.executable).with_name("kedro")
    command = [str(kedro), "run", *(["--pipelines", ",".join(pipelines)] if pipelines else [])]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=root, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return wall, cpu


def _model_calls(root: Path, stages: tuple[str, ...]) -> dict[str, float]:
    calls = {}
    for stage in stages:
        metrics = json.loads((root / "data" / "08_reporting" / "metrics" / f"{stage}.json").read_text())
        calls[stage] = sum(v for k, v in metrics.items() if k.endswith("cache_misses"))
    return calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="kedro run --pipelines ingest, cold and warm: checks the script runs",
    )
    args = parser.parse_args(argv)
    pipelines, stages = (["ingest"], ("ingest",)) if args.quick else ([], MODEL_STAGES)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        copy_project(root)
        cold_wall, cold_cpu = timed_run(root, pipelines)
        cold_calls = _model_calls(root, stages)
        warm_wall, warm_cpu = timed_run(root, pipelines)
        warm_calls = _model_calls(root, stages)
    print(f"cores: {os.cpu_count()}")
    what = f"kedro run{' --pipelines ' + ','.join(pipelines) if pipelines else ''}"
    print(f"cold {what}: {cold_wall:6.1f} s wall, {cold_cpu:6.1f} s CPU, model calls {cold_calls}")
    print(f"warm {what}: {warm_wall:6.1f} s wall, {warm_cpu:6.1f} s CPU, model calls {warm_calls}")
    print(f"warm / cold wall ratio: {warm_wall / cold_wall:.2f}")


if __name__ == "__main__":
    main()
