"""Curate at scale: peak memory of ``kedro run --pipeline curate`` at two numbers of figures (target: flat)
and the shards' throughput with 1 and 2 Dask workers.

The figures are real-size files (1-3 Mpx drawn plots with several panels, micrographs; JPEG, PNG, TIFF
with ICC profiles, 12-bit and CMYK: ``bench_standardise.write_images``), ``--distinct`` of them, each
figure of the tables a hard link to one of those files under its own name (so writing 2,000 figures
costs no more than writing ``--distinct``). The ``figures`` and ``articles`` tables hold the columns
ingest writes, four figures to an article.

- **memory**: in a throwaway clone of this repository (``git clone`` of HEAD, so commit first), the
  tables are put where ingest writes them and ``kedro run --pipeline curate`` runs with the shipped
  parameters except: the privacy check's face detector and OCR off (``conf/local``), which cost CPU per
  panel, not memory, and would make 2,000 figures take an hour on two cores. psutil samples the RSS of
  the kedro process and of all its descendants (Dask scheduler in-process, worker processes, their
  figure workers) every 0.1 s; the peak of the sum is reported;
- **throughput**: ``curate_figures`` called in this process on ``--throughput`` figures with a local
  cluster of 1 and then 2 worker processes (same settings, a fresh shard folder each); figures per
  second over the whole call and over the shards alone (the call less the cluster's start-up, timed
  separately).

With ``--quick`` (seconds, a check that the script runs, not a measurement): 20 distinct files of 0.05-0.15
Mpx in a temporary folder, the throughput on 8 figures with 1 worker, and the memory of one curate run on
4 figures, its screen off and 1 worker (threads of the kedro process) as well.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_curate_scale.py [--memory 100 2000] [--throughput 80] [--distinct 60]
    .venv/bin/python benchmarks/bench_curate_scale.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_standardise import QUICK_MEGAPIXELS, write_images  # noqa: E402

from sciir.figures.ids import figure_uid  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIGURES_PER_ARTICLE = 4
# CPU per panel, not memory: off so that 2,000 figures fit in a benchmark run.
# Worker processes, as when docs/benchmarks.md's figures were measured (the shipped default is now threads).
LOCAL_OVERRIDES = {
    "curate": {"privacy": {"face_cascade": None, "ocr_ids": False}, "cluster": {"processes": True}}
}
# --quick: the screen off too (OCR per panel) and one worker, threads of the kedro process (no process start).
QUICK_OVERRIDES = {"screen": {"enabled": False}, "workers": {"count": 1}, "cluster": {"processes": False}}
METHODS = "Samples were imaged and plotted as described. " * 40  # ~2 KB, as a methods section


def tables(images: list[Path], folder: Path, count: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``count`` figures (hard links to ``images`` in turn) and their articles, in ingest's columns."""
    folder.mkdir(parents=True, exist_ok=True)
    figures, articles = [], []
    for index in range(count):
        source = images[index % len(images)]
        path = folder / f"figure-{index:05d}{source.suffix}"
        if not path.exists():
            os.link(source, path)
        article = f"article-{index // FIGURES_PER_ARTICLE:05d}"
        doi = f"10.5555/scale.{index // FIGURES_PER_ARTICLE:05d}"
        figure_id = f"fig{index % FIGURES_PER_ARTICLE + 1}"
        figures.append(
            {
                "figure_uid": figure_uid(doi, figure_id),
                "article_id": article,
                "doi": doi,
                "url": f"https://doi.org/{doi}",
                "figure_id": figure_id,
                "label": f"Figure {index % FIGURES_PER_ARTICLE + 1}",
                "caption": f"Measurements of series {index}: panels show the signal against time.",
                "image_path": str(path),
                "licence_name": "CC BY 4.0",
                "licence_url": "https://creativecommons.org/licenses/by/4.0/",
                "authors": json.dumps(["A. Author", "B. Author"]),
                "status": "kept",
                "reason": None,
            }
        )
        if index % FIGURES_PER_ARTICLE == 0:
            articles.append(
                {
                    "article_id": article,
                    "doi": doi,
                    "title": f"Article {article}",
                    "journal": "Journal of Benchmarks",
                    "authors": json.dumps(["A. Author", "B. Author"]),
                    "licence_name": "CC BY 4.0",
                    "licence_url": "https://creativecommons.org/licenses/by/4.0/",
                    "licence_ok": True,
                    "licence_reason": None,
                    "methods_text": METHODS,
                    "source_path": f"{article}/article.xml",
                    "status": "kept",
                    "reason": None,
                }
            )
    return pd.DataFrame(figures), pd.DataFrame(articles)


def throwaway_project(work: Path, quick: bool = False) -> Path:
    project = work / "project"
    if not project.is_dir():
        subprocess.run(["git", "clone", "-q", str(REPO), str(project)], check=True)
        (project / ".venv").symlink_to(REPO / ".venv")
    local = project / "conf" / "local"
    local.mkdir(parents=True, exist_ok=True)
    overrides = {"curate": {**LOCAL_OVERRIDES["curate"], **(QUICK_OVERRIDES if quick else {})}}
    (local / "parameters_curate.yml").write_text(yaml.safe_dump(overrides), encoding="utf-8")
    return project


def tree_rss(process: psutil.Process) -> int:
    """Resident bytes of a process and all its descendants (those that exist at this instant)."""
    total = 0
    for member in [process, *process.children(recursive=True)]:
        try:
            total += member.memory_info().rss
        except psutil.Error:
            pass
    return total


def peak_rss(process: subprocess.Popen[Any]) -> tuple[int, int]:
    """Until ``process`` ends: the peak resident bytes of it with all its descendants, and of it alone
    (sampled every 0.1 s)."""
    watched = psutil.Process(process.pid)
    peak_tree = peak_main = 0
    while process.poll() is None:
        try:
            peak_main = max(peak_main, watched.memory_info().rss)
            peak_tree = max(peak_tree, tree_rss(watched))
        except psutil.Error:
            pass
        time.sleep(0.1)
    return peak_tree, peak_main


def peak_memory_of_curate(project: Path, figures: pd.DataFrame, articles: pd.DataFrame) -> dict[str, Any]:
    intermediate = project / "data" / "02_intermediate"
    intermediate.mkdir(parents=True, exist_ok=True)
    figures.to_parquet(intermediate / "figures.parquet")
    articles.to_parquet(intermediate / "articles.parquet")
    environment = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONPATH": str(project / "src")}
    started = time.monotonic()
    with open(project / f"curate-{len(figures)}.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            [str(project / ".venv" / "bin" / "kedro"), "run", "--pipeline", "curate"],
            cwd=project,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        peak_tree, peak_main = peak_rss(process)
    if process.returncode != 0:
        raise RuntimeError(f"kedro run failed; see {project}/curate-{len(figures)}.log")
    curated = pd.read_parquet(project / "data" / "03_primary" / "curated.parquet")
    return {
        "figures": len(figures),
        "panels": len(curated),
        # Standardised images curate_figures wrote (this run's shards); near-duplicates (the figures
        # repeat --distinct files) and the screen then reject many of them in `curated`.
        "images_written": sum(1 for _ in (project / "data" / "03_primary" / "curate_shards").glob("*/*.png")),
        "kept_after_screen": int((curated["status"] == "kept").sum()),
        "seconds": round(time.monotonic() - started, 1),
        "peak_tree_mb": round(peak_tree / 2**20),
        "peak_kedro_process_mb": round(peak_main / 2**20),
    }


def shard_throughput(
    figures: pd.DataFrame, articles: pd.DataFrame, workers: int, work: Path, quick: bool = False
) -> dict[str, Any]:
    from sciir.figures.params import CurateParams
    from sciir.figures.shard_cluster import dask_client
    from sciir.pipelines.curate.nodes import curate_figures

    params = yaml.safe_load((REPO / "conf" / "base" / "parameters_curate.yml").read_text(encoding="utf-8"))
    params = params["curate"]
    params["privacy"].update(LOCAL_OVERRIDES["curate"]["privacy"])
    if quick:
        params["cluster"].update(QUICK_OVERRIDES["cluster"])
    params["workers"]["count"] = workers
    params["shards"]["folder"] = tempfile.mkdtemp(dir=work, prefix=f"shards-{workers}-")
    started = time.monotonic()
    with dask_client(CurateParams.model_validate(params)):
        startup = time.monotonic() - started
    started = time.monotonic()
    curate_figures(figures, articles, params)
    seconds = time.monotonic() - started
    return {
        "workers": workers,
        "figures": len(figures),
        "seconds": round(seconds, 1),
        "cluster_start_s": round(startup, 1),
        "figures_per_s": round(len(figures) / seconds, 2),
        "figures_per_s_shards": round(len(figures) / max(seconds - startup, 1e-9), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", type=int, nargs="*", default=[100, 2000])
    parser.add_argument("--throughput", type=int, default=80)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--distinct", type=int, default=60)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "sciir-curate-scale")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes in a temporary folder, seconds: checks the script runs",
    )
    args = parser.parse_args()
    if not args.quick:
        run(args, write_images(args.work / "images", args.distinct))
        return
    args.memory, args.throughput, args.workers = [4], 8, [1]
    with tempfile.TemporaryDirectory(prefix="sciir-curate-scale-quick-") as work:
        args.work = Path(work)
        run(args, write_images(args.work / "images", 20, QUICK_MEGAPIXELS))


def run(args: argparse.Namespace, images: list[Path]) -> None:
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"{len(images)} distinct image files in {args.work / 'images'}", flush=True)

    if args.throughput:
        figures, articles = tables(images, args.work / "figures", args.throughput)
        for workers in args.workers:
            result = shard_throughput(figures, articles, workers, args.work, args.quick)
            print(json.dumps({"throughput": result}), flush=True)
    if args.memory:
        project = throwaway_project(args.work, args.quick)
        for count in args.memory:
            figures, articles = tables(images, args.work / "figures", count)
            print(json.dumps({"memory": peak_memory_of_curate(project, figures, articles)}), flush=True)


if __name__ == "__main__":
    main()
