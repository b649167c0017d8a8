"""Time `kedro run` on the embedded sample: cold (empty data/ and cache) vs warm (everything cached).

Runs both in one fresh copy of the project, side by side, and prints per-stage model-call counts
and the warm/cold ratio. Usage: `python benchmarks/bench_default_run.py` from the repository root.
"""

from __future__ import annotations

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


def _copy_project(root: Path) -> None:
    for item in ("conf", "src"):
        shutil.copytree(REPO / item, root / item, ignore=shutil.ignore_patterns("__pycache__", "local"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "conf" / "local").mkdir()


def _timed_run(root: Path) -> tuple[float, float]:
    """Wall and child CPU seconds of one `kedro run`."""
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONPATH": str(root / "src")}
    kedro = Path(sys.executable).with_name("kedro")
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([str(kedro), "run"], cwd=root, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return wall, cpu


def _model_calls(root: Path) -> dict[str, float]:
    calls = {}
    for stage in ("annotate", "generate", "evaluate"):
        metrics = json.loads((root / "data" / "08_reporting" / "metrics" / f"{stage}.json").read_text())
        calls[stage] = sum(v for k, v in metrics.items() if k.endswith("cache_misses"))
    return calls


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _copy_project(root)
        cold_wall, cold_cpu = _timed_run(root)
        cold_calls = _model_calls(root)
        warm_wall, warm_cpu = _timed_run(root)
        warm_calls = _model_calls(root)
    print(f"cores: {os.cpu_count()}")
    print(f"cold kedro run: {cold_wall:6.1f} s wall, {cold_cpu:6.1f} s CPU, model calls {cold_calls}")
    print(f"warm kedro run: {warm_wall:6.1f} s wall, {warm_cpu:6.1f} s CPU, model calls {warm_calls}")
    print(f"warm / cold wall ratio: {warm_wall / cold_wall:.2f}")


if __name__ == "__main__":
    main()
