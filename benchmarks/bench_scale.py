"""The paper's scale, simulated on this machine (issue 23, point 3): the embedded sample drawn at several
sizes (``ingest.source.copies``), then ingest -> curate (Dask) -> annotate -> bench_select -> evaluate,
each stage a ``kedro run --pipelines <stage>`` of its own in a fresh copy of the project per size.

The models are the loopback OpenAI-compatible server in its own process (``sciir.testing.fake_openai_server``
with schema-valid replies of realistic size and a log-normal latency, median ``--median-s``): the
screener, the annotator and the judge, with a window of ``--window``. Evaluate judges ``--models`` models
on the selected benchmark (bench_select with ``n_per_group`` 200, as the paper's 800): each model's images
are the benchmark samples' own curated images, each marked with the model's name in a PNG text chunk (the
same pixels, other bytes: every model's image is a request of its own), in an images folder
(``evaluate.images_dir``), so that no generator runs.

Settings that differ from the shipped ones, and why:
- curate's privacy face detector and ID OCR off: a fixed CPU cost per panel (about 0.1 s and 0.15 s,
  measured in docs/benchmarks.md), which would make the largest size take hours on two cores;
- curate's near-duplicate check off: the generator draws from about 80 topics, so at 100 copies most
  panels repeat a topic's picture at another size, which the check rightly rejects (at 10 copies it left
  59 samples to annotate out of 1,040 figures); real figures at the paper's scale are mostly distinct.
- with ``--quick`` only, curate's panels standardised to 256 px instead of 1024 (``QUICK_PANEL_PX``): a check
  that the script runs, its seconds mostly the five ``kedro run`` start-ups.

Per stage and size it records: wall seconds of the ``kedro run`` (start-up included), requests the server
received, the peak resident memory of the whole process tree (sampled every 0.1 s: kedro, Dask threads,
figure workers), the bytes the stage added under ``data/``, and the items it handled. Then, per stage, the
growth exponent b of wall time ~ items^b and of peak memory (a least-squares fit on log-log), and a
projection of the paper's build (360,000 figures) from the largest size's rates.

Usage, from the repository root (commit first: each size runs in a copy of the working tree):
    .venv/bin/python benchmarks/bench_scale.py                   # sizes 10, 30, 100 copies (about an hour)
    .venv/bin/python benchmarks/bench_scale.py --quick           # about a minute: one copy, 2 models, 256 px panels
    .venv/bin/python benchmarks/bench_scale.py --repeats 2      # each size twice: medians fitted, spread shown
Options: --copies 10 30 100, --repeats 1, --models 10, --window 256, --median-s 0.5, --p95-s 2, --keep DIR.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]


def _benchmark(name: str) -> ModuleType:
    """Another script of benchmarks/ as a module (they are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


stages_bench = _benchmark("bench_model_stages")  # its servers and project copy
curate_bench = _benchmark("bench_curate_scale")  # its memory watcher

STAGES = ("ingest", "curate", "annotate", "bench_select", "evaluate")
MEASURES = ("items", "seconds", "run_s", "cpu_s", "requests", "peak_mb", "written_mb")
PAPER_FIGURES = 360_000
# --quick: curate standardises its panels to this side instead of 1024 px (less to resize, encode, annotate
# and judge in every stage after it; the same code path).
QUICK_PANEL_PX = 256


@dataclass(frozen=True)
class StageRun:
    """One stage at one size."""

    copies: int
    repeat: int  # which run of this size (``--repeats``), from 1
    stage: str
    items: int
    seconds: float  # the whole kedro run command
    run_s: float  # Kedro's own "Pipeline execution completed in": the run without start-up and imports
    cpu_s: float  # user + system CPU of the command and every process it started (not the model server)
    requests: int
    peak_mb: float
    written_mb: float


def data_bytes(root: Path) -> int:
    """Bytes of every file under the project's data/ (hard links counted once)."""
    seen: set[int] = set()
    total = 0
    for path in (root / "data").rglob("*"):
        if path.is_file():
            stat = path.stat()
            if stat.st_ino not in seen:
                seen.add(stat.st_ino)
                total += stat.st_size
    return total


def children_cpu_s() -> float:
    """CPU seconds of this process's finished children and, recursively, theirs."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pipeline_seconds(log: Path) -> float:
    """The seconds Kedro reports for the pipeline's execution (start-up and imports not included)."""
    text = " ".join(log.read_text(encoding="utf-8").split())
    found = re.findall(r"successfully in ([0-9.]+) sec", text)  # rich wraps the line before it
    return float(found[-1]) if found else float("nan")


def run_stage(root: Path, stage: str, params: dict[str, object]) -> tuple[float, float, float]:
    """``kedro run --pipelines stage`` in the copy; its wall seconds, CPU seconds and the peak RSS (MB) of
    its process tree."""
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONPATH": str(root / "src")}
    command = [str(REPO / ".venv" / "bin" / "kedro"), "run", "--pipelines", stage]
    if params:
        command += ["--params", ",".join(f"{key}={value}" for key, value in params.items())]
    started, cpu = time.monotonic(), children_cpu_s()
    with open(root / f"{stage}.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        peak, _ = curate_bench.peak_rss(process)
    if process.returncode != 0:
        raise RuntimeError(f"kedro run --pipelines {stage} failed; see {root / f'{stage}.log'}")
    return time.monotonic() - started, children_cpu_s() - cpu, peak / 2**20


def write_local_conf(root: Path, copies: int, panel_px: int | None = None) -> None:
    """conf/local parameters of the simulation (the module docstring says why each differs)."""
    local = root / "conf" / "local"
    curate: dict[str, object] = {
        "privacy": {"face_cascade": None, "ocr_ids": False},
        "near_duplicates": {"enabled": False},
    }
    if panel_px is not None:
        curate["standardise"] = {"size_px": panel_px}
    files = {
        "parameters_ingest.yml": {"ingest": {"source": {"copies": copies}}},
        "parameters_curate.yml": {"curate": curate},
        "parameters_bench_select.yml": {"bench_select": {"n_per_group": 200}},
    }
    for name, content in files.items():
        (local / name).write_text(yaml.safe_dump(content), encoding="utf-8")


def write_model_images(root: Path, models: int) -> Path:
    """An images folder of ``models`` models, each holding every benchmark sample's curated image, marked
    with the model's name (``bench_model_stages.model_png``)."""
    benchmark = pd.read_parquet(root / "data/05_model_input/benchmark.parquet")
    folder = root / "data/07_model_output/scale_images"
    for model in range(models):
        name = f"model-{model:02d}"
        (folder / name).mkdir(parents=True, exist_ok=True)
        for sample_id in benchmark["sample_id"]:
            png = (root / "data/03_primary/images" / f"{sample_id}.png").read_bytes()
            (folder / name / f"{sample_id}.png").write_bytes(stages_bench.model_png(png, name))
    return folder


def items_of(root: Path, stage: str) -> int:
    """What the stage handled: figures (ingest, curate), curated samples (annotate, bench_select), images
    judged (evaluate, the blank baseline's included)."""
    tables = {
        "ingest": "data/02_intermediate/figures.parquet",
        "curate": "data/02_intermediate/figures.parquet",
        "annotate": "data/04_feature/annotations.parquet",
        "bench_select": "data/04_feature/annotations.parquet",
    }
    if stage == "evaluate":  # the models' images and the blank baseline's white image of each sample
        models = sum(1 for _ in (root / "data/07_model_output/scale_images").glob("*/*.png"))
        return models + len(pd.read_parquet(root / "data/05_model_input/benchmark.parquet"))
    return len(pd.read_parquet(root / tables[stage]))


def simulate(copies: int, repeat: int, args: argparse.Namespace, vlm_url: str, work: Path) -> list[StageRun]:
    """Every stage at one size, in a fresh copy of the project (its own response cache: every run cold)."""
    root = work / f"copies-{copies}" / f"run-{repeat}"
    stages_bench.copy_project(root)
    stages_bench.write_backends(root, vlm_url, vlm_url, args.window, "responses.sqlite")
    write_local_conf(root, copies, args.panel_px)
    runs = []
    for stage in STAGES:
        params: dict[str, object] = {}
        if stage == "evaluate":
            params = {"evaluate.images_dir": write_model_images(root, args.models)}
        before_bytes = data_bytes(root) if (root / "data").exists() else 0
        before_requests = stages_bench.judge_bench.server_stats(vlm_url)["chat_requests"]
        seconds, cpu, peak = run_stage(root, stage, params)
        requests = stages_bench.judge_bench.server_stats(vlm_url)["chat_requests"] - before_requests
        written = (data_bytes(root) - before_bytes) / 2**20
        run = StageRun(
            copies,
            repeat,
            stage,
            items_of(root, stage),
            round(seconds, 1),
            pipeline_seconds(root / f"{stage}.log"),
            round(cpu, 1),
            requests,
            round(peak),
            round(written, 1),
        )
        print(json.dumps(asdict(run)), flush=True)
        runs.append(run)
    return runs


def exponent(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log y on log x: y grows as x to this power."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    spread = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / spread if spread else float("nan")


def medians(runs: Sequence[StageRun]) -> list[StageRun]:
    """One row per stage and size: the median of each measure over that size's repeated runs."""
    keys = sorted({(run.copies, run.stage) for run in runs}, key=lambda key: (key[0], STAGES.index(key[1])))
    rows = []
    for copies, stage in keys:
        same = [run for run in runs if (run.copies, run.stage) == (copies, stage)]
        rows.append(
            StageRun(
                copies,
                0,
                stage,
                *(statistics.median(getattr(run, name) for run in same) for name in MEASURES),
            )
        )
    return rows


def spread(runs: Sequence[StageRun], stage: str) -> float:
    """The largest ratio of peak memory between two runs of one size (1.00 with one run per size)."""
    sizes = {run.copies for run in runs if run.stage == stage}
    peaks = [[run.peak_mb for run in runs if (run.copies, run.stage) == (size, stage)] for size in sizes]
    return max(max(size) / min(size) for size in peaks)


def report(runs: Sequence[StageRun], args: argparse.Namespace) -> None:
    """The table per stage, size and run, the growth exponents (on each size's medians, with how far
    repeated runs of one size differ) and the paper-scale projection."""
    print(
        f"\n{'stage':<13}{'copies':>7}{'run':>4}{'items':>8}{'wall s':>8}{'run s':>8}{'CPU s':>8}{'requests':>10}"
        f"{'peak MB':>9}{'written MB':>12}"
    )
    for run in runs:
        print(
            f"{run.stage:<13}{run.copies:>7}{run.repeat:>4}{run.items:>8}{run.seconds:>8.1f}{run.run_s:>8.1f}{run.cpu_s:>8.1f}"
            f"{run.requests:>10}{run.peak_mb:>9.0f}{run.written_mb:>12.1f}"
        )
    sizes = sorted({run.copies for run in runs})
    if len(sizes) >= 2:
        growth(runs)
    project(medians(runs), sizes[-1], args)


def growth(runs: Sequence[StageRun]) -> None:
    """Per stage, how run time, CPU and peak memory grow with the items it handled (medians per size),
    and how much the peak moved between repeated runs of one size."""
    print("\ngrowth with the items each stage handled (b of y ~ items^b, least squares on log-log, ", end="")
    print(f"medians of {max(run.repeat for run in runs)} run(s) per size):")
    print(
        f"{'stage':<13}{'run s':>8}{'CPU s':>8}{'peak MB':>9}{'peak largest/smallest':>23}{'peak spread':>13}"
    )
    middle = medians(runs)
    for stage in STAGES:
        rows = sorted((run for run in middle if run.stage == stage), key=lambda run: run.items)
        items = [max(1, run.items) for run in rows]
        print(
            f"{stage:<13}{exponent(items, [run.run_s for run in rows]):>8.2f}"
            f"{exponent(items, [max(0.1, run.cpu_s) for run in rows]):>8.2f}"
            f"{exponent(items, [run.peak_mb for run in rows]):>9.2f}{rows[-1].peak_mb / rows[0].peak_mb:>23.2f}"
            f"{spread(runs, stage):>13.2f}"
        )


def project(runs: Sequence[StageRun], largest: int, args: argparse.Namespace) -> None:
    """The paper's build from the largest size's figures, linearly: CPU hours on a Dask cluster of
    ``--cluster-cores`` cores and model hours on ``--replicas`` served replicas of ``--replica-rps``."""
    at = {run.stage: run for run in runs if run.copies == largest}
    figures = at["ingest"].items
    scale = PAPER_FIGURES / figures
    print(
        f"\nprojection to {PAPER_FIGURES:,} figures ({scale:.0f}x the largest size, {figures:,} figures); "
        f"evaluate stays {at['evaluate'].items:,} images; {args.cluster_cores} cluster cores; "
        f"{args.replicas} replicas of {args.replica_rps} requests/s each:"
    )
    total_hours = 0.0
    for stage in STAGES:
        run = at[stage]
        factor = 1.0 if stage == "evaluate" else scale  # the benchmark, not the corpus
        cpu_hours = run.cpu_s * factor / 3600
        requests = run.requests * factor
        hours = max(cpu_hours / args.cluster_cores, requests / (args.replicas * args.replica_rps) / 3600)
        total_hours += hours
        print(
            f"  {stage:<13}{cpu_hours:>9.1f} CPU h{requests:>12,.0f} requests"
            f"{requests / args.replica_rps / 3600:>9.1f} replica h  -> {hours:>6.1f} h"
        )
    print(
        f"  whole build: {total_hours:.1f} h (each stage bound by its CPU or its model, whichever is longer)"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--median-s", type=float, default=0.5)
    parser.add_argument("--p95-s", type=float, default=2.0)
    parser.add_argument("--cluster-cores", type=int, default=64, help="projection: Dask cluster cores")
    parser.add_argument("--replicas", type=int, default=8, help="projection: served model replicas")
    parser.add_argument("--replica-rps", type=float, default=2.0, help="projection: requests/s of one")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each size (medians fitted)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the project copies in this folder")
    parser.add_argument(
        "--quick", action="store_true", help=f"one copy, 2 models, {QUICK_PANEL_PX} px panels, 20 ms median"
    )
    args = parser.parse_args(argv)
    args.panel_px = None  # curate's own size (1024 px)
    if args.quick:
        args.copies, args.models, args.median_s, args.p95_s, args.window = [1], 2, 0.02, 0.05, 32
        args.panel_px = QUICK_PANEL_PX
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="sciir-scale-", dir=args.keep))
    print(
        f"sizes {args.copies} copies; {args.models} models; window {args.window}; latency log-normal, "
        f"median {args.median_s} s, p95 {args.p95_s} s; panels {args.panel_px or 1024} px; in {work}",
        flush=True,
    )
    runs: list[StageRun] = []
    try:
        schema = ("--replies", "schema")
        with stages_bench.server(
            "sciir.testing.fake_openai_server", args.median_s, args.p95_s, *schema
        ) as url:
            for copies in args.copies:
                for repeat in range(1, args.repeats + 1):
                    runs += simulate(copies, repeat, args, url, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    report(runs, args)


if __name__ == "__main__":
    main()
