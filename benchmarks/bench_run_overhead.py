"""The fixed cost of a `kedro run`: the project's kedro-mlflow hook beside the plugin's own, side by side.

The project registers ``sciir.runs.mlflow_hook.BatchedMlflowHook`` in place of kedro-mlflow's hook: each node's
parameters logged in one call instead of one per parameter, the run not reopened at a node in the thread where it
is active, and only the MLflow metric datasets built once the catalog is made (the plugin builds every dataset,
importing every dataset class). The other side is what a
project that registers the plugin as it comes runs: the same copy of the project with settings.py's two lines
undone.

Both copies run `kedro run --pipelines <pipelines>` alternately, ``--rounds`` times (the first round of each
writes the embedded sample; later rounds find it); printed: the median wall and CPU seconds of each side over
the rounds after the first (the only round with --quick, which checks that the script runs), their ratio, and
whether both logged the same MLflow params. Usage: `python benchmarks/bench_run_overhead.py` from the root.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
from pathlib import Path

from bench_default_run import copy_project, timed_run

# settings.py lines that make the project's hook the one registered; undone on the plugin's side.
PROJECT_LINES = {
    "HOOKS = (ProjectHooks(), BatchedMlflowHook())": "HOOKS = (ProjectHooks(),)",
    'DISABLE_HOOKS_FOR_PLUGINS = ("kedro_mlflow",)': "DISABLE_HOOKS_FOR_PLUGINS = ()",
}


def register_the_plugins_hook(root: Path) -> None:
    """The copy's settings.py with kedro-mlflow's own hook registered by its entry point, as the plugin comes."""
    settings = root / "src" / "sciir" / "settings.py"
    text = settings.read_text(encoding="utf-8")
    for line, replacement in PROJECT_LINES.items():
        if line not in text:
            raise SystemExit(f"settings.py no longer holds {line!r}: update PROJECT_LINES")
        text = text.replace(line, replacement)
    settings.write_text(text, encoding="utf-8")


def last_run_params(root: Path) -> dict[str, str]:
    """The params of the newest top-level MLflow run of a copy's store."""
    with sqlite3.connect(root / "mlruns" / "mlflow.db") as store:
        (run,) = store.execute(
            "SELECT run_uuid FROM runs WHERE run_uuid NOT IN (SELECT run_uuid FROM tags WHERE key = "
            "'mlflow.parentRunId') ORDER BY start_time DESC LIMIT 1"
        ).fetchone()
        return dict(store.execute("SELECT key, value FROM params WHERE run_uuid = ?", (run,)).fetchall())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="runs per side, alternating (default 6)")
    parser.add_argument("--pipelines", default="ingest", help="the pipelines each run runs (default ingest)")
    parser.add_argument("--quick", action="store_true", help="one round: checks the script runs")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else max(2, args.rounds)
    pipelines = args.pipelines.split(",")
    sides = {"project's hook": [], "plugin's own hook": []}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {side: Path(tmp) / f"copy{index}" for index, side in enumerate(sides)}
        for root in roots.values():
            copy_project(root)
        register_the_plugins_hook(roots["plugin's own hook"])
        for _ in range(rounds):
            for side, root in roots.items():
                sides[side].append(timed_run(root, pipelines))
        params = {side: last_run_params(root) for side, root in roots.items()}
    print(f"cores: {os.cpu_count()}; kedro run --pipelines {args.pipelines}, {rounds} round(s) per side")
    counted = {side: times[1:] or times for side, times in sides.items()}
    medians = {
        side: [statistics.median(t[i] for t in times) for i in (0, 1)] for side, times in counted.items()
    }
    for side, (wall, cpu) in medians.items():
        print(f"  {side:18s} median {wall:5.2f} s wall, {cpu:5.2f} s CPU over {len(counted[side])} run(s)")
    (new_wall, new_cpu), (old_wall, old_cpu) = medians.values()
    print(f"project's / plugin's: wall {new_wall / old_wall:.2f}, CPU {new_cpu / old_cpu:.2f}")
    ours, theirs = params.values()
    print(f"MLflow params of the last runs: {len(ours)}, the same on both sides: {ours == theirs}")
    if ours != theirs:
        raise SystemExit("the two hooks logged different params")


if __name__ == "__main__":
    main()
