"""The fixed cost of a `kedro run`: the project as it is beside copies with each of its two savings undone.

1. The project registers ``sciir.runs.mlflow_hook.BatchedMlflowHook`` in place of kedro-mlflow's hook: each
   node's parameters logged in one call instead of one per parameter, the run not reopened at a node in the
   thread where it is active, and only the MLflow metric datasets built once the catalog is made (the plugin
   builds every dataset, importing every dataset class). Undone: the plugin's hook registered as it comes
   (settings.py's two lines undone).
2. ``sciir.runs.process_exit.skip_collections_at_exit``: the process exits without the garbage collector's full
   passes over everything it imported. Undone: settings.py's call removed.

The copies run `kedro run --pipelines <pipelines>` in turn, ``--rounds`` times (the first round of each writes
the embedded sample; later rounds find it); printed: the median wall and CPU seconds of each side over the
rounds after the first (the only round with --quick, which checks that the script runs), the project's ratio
to each undone side, and whether all logged the same MLflow params.
Usage: `python benchmarks/bench_run_overhead.py` from the root.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
from pathlib import Path

from bench_default_run import copy_project, timed_run

PROJECT = "project"
# Each saving's settings.py lines and what they become on its undone side.
UNDONE = {
    # kedro-mlflow's own hook registered by its entry point, as the plugin comes.
    "plugin's own hook": {
        "HOOKS = (ProjectHooks(), BatchedMlflowHook())": "HOOKS = (ProjectHooks(),)",
        'DISABLE_HOOKS_FOR_PLUGINS = ("kedro_mlflow",)': "DISABLE_HOOKS_FOR_PLUGINS = ()",
    },
    "collections at exit": {"\nskip_collections_at_exit()\n": "\n"},
}


def undo(root: Path, lines: dict[str, str]) -> None:
    """The copy's settings.py with ``lines`` replaced."""
    settings = root / "src" / "sciir" / "settings.py"
    text = settings.read_text(encoding="utf-8")
    for line, replacement in lines.items():
        if line not in text:
            raise SystemExit(f"settings.py no longer holds {line!r}: update UNDONE")
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
    sides: dict[str, list[tuple[float, float]]] = {PROJECT: [], **{side: [] for side in UNDONE}}
    with tempfile.TemporaryDirectory() as tmp:
        roots = {side: Path(tmp) / f"copy{index}" for index, side in enumerate(sides)}
        for root in roots.values():
            copy_project(root)
        for side, lines in UNDONE.items():
            undo(roots[side], lines)
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
        print(f"  {side:19s} median {wall:5.2f} s wall, {cpu:5.2f} s CPU over {len(counted[side])} run(s)")
    wall, cpu = medians[PROJECT]
    for side in UNDONE:
        print(f"project / {side}: wall {wall / medians[side][0]:.2f}, CPU {cpu / medians[side][1]:.2f}")
    same = all(side_params == params[PROJECT] for side_params in params.values())
    print(f"MLflow params of the last runs: {len(params[PROJECT])}, the same on every side: {same}")
    if not same:
        raise SystemExit("the sides logged different params")


if __name__ == "__main__":
    main()
