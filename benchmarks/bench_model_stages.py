"""Every model-calling stage against a served model whose latency varies as a real server's does (issue 23).

One run, in a fresh temporary copy of the project (conf/, src/, pyproject.toml). The model is the loopback
OpenAI-compatible server in its own process, answering each task with a valid reply of realistic size made
from the request's JSON schema (``sciir.testing.schema_replies``), after a latency drawn from a log-normal
spread (median 2 s, 95th percentile 8 s by default: mean 2.85 s). Images come from the loopback images
server with the same latency. For each stage and window (64 and 256), the stage's node function runs
with its inputs and its model loaded from the project's catalog (``conf/local/backends.yml`` pointing the
stage's model at the server, with a fresh response cache):

- ``annotate`` (``annotate_samples``): four dependent tasks per curated sample (track scores and reasoning,
  then the abstract prompt, then the checklist), each with the sample's image;
- ``screen`` (curate's ``screen_panels``): one request per panel, with its image;
- ``judge`` (evaluate's ``judge_generations``): one request per generated image and its checklist;
- ``generate`` (``generate_images``, an ``openai_images`` generator): one image per benchmark prompt;
- ``aibench`` (annotate's ``build_aibench_qa``): a logic graph from each sample's method text, then its
  questions, sent as soon as the graph arrives;
- ``planner`` (``generate_images``, the images generator with a ``planner``): a plan per prompt from the
  chat server, each drawn by the images server as soon as it arrives;
- ``best_of`` (``generate_images``, the images generator with ``best_of: {n: 4}``): four candidates per
  prompt from the images server, each scored by the chat server as soon as it is drawn;
- ``examine`` (evaluate's ``examine_images``): the AIBench solver and the aesthetics rating of every
  model's illustration of every AIBench paper, two requests per image.

It prints, per stage and window, the requests the servers received, the wall time of the node, the rate
against the bound (window / mean latency, for each model a stage streams through at once: two for the
planner and best-of-N), and the client CPU per request. Images are distinct PNGs of
``--side`` pixels (1024: about 1 MB each), a pool of 64 linked under every sample's name, so disk use
stays small while every request differs.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_model_stages.py --ideal-s 240  # both windows, every stage (about 75 min)
    .venv/bin/python benchmarks/bench_model_stages.py --quick        # about 15 s: window 8, 8 items a stage, 50 ms median
Options: --windows 64 256, --stages annotate screen judge generate aibench planner best_of examine,
--median-s 2, --p95-s 8, --side 1024,
--ideal-s 90 (the size of each run: requests = ideal seconds x bound).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "bench_judge_node", REPO / "benchmarks" / "bench_judge_node.py"
)
judge_bench = importlib.util.module_from_spec(_spec)  # its benchmark, checklists and images
sys.modules["bench_judge_node"] = judge_bench
_spec.loader.exec_module(judge_bench)

from kedro.framework.hooks import hook_impl  # noqa: E402
from kedro.framework.startup import bootstrap_project  # noqa: E402

from sciir.testing.fault_plan import lognormal_mean  # noqa: E402
from sciir.testing.figure_rows import kept_panels  # noqa: E402

POOL = 64  # distinct images, linked under every sample's name
STAGES = ("annotate", "screen", "judge", "generate", "aibench", "planner", "best_of", "examine")
BEST_OF = 4
# The models a stage streams through at once, each with its own window: its bound is that many windows.
MODELS_AT_ONCE = {"planner": 2, "best_of": 2}
TARGETS = {64: 0.9, 256: 0.8}


@dataclass(frozen=True)
class StageRun:
    stage: str
    window: int
    requests: int
    seconds: float
    cpu_s: float
    full_share: float | None = None  # of the run's time, the share with the window at least 95% full

    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


class InFlightSampler(threading.Thread):
    """The chat server's requests in flight, every 100 ms (its /stats), while a stage runs."""

    def __init__(self, base_url: str) -> None:
        super().__init__(daemon=True)
        self.base_url, self.samples, self.done = base_url, [], threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            self.samples.append(int(judge_bench.server_stats(self.base_url)["in_flight"]))

    def full_share(self, window: int) -> float | None:
        self.done.set()
        self.join()
        return sum(n >= 0.95 * window for n in self.samples) / len(self.samples) if self.samples else None


# ---- inputs


def link_images(pool_dir: Path, target_dir: Path, names: Sequence[str], offset: int = 0) -> None:
    """Every name as a hard link to one of the pool's images (same bytes, no disk), starting at ``offset``
    in the pool (one offset per model, so no two models' images of a sample are the same request)."""
    target_dir.mkdir(parents=True, exist_ok=True)
    pool = sorted(pool_dir.glob("*.png"))
    for index, name in enumerate(names):
        os.link(pool[(index + offset) % len(pool)], target_dir / f"{name}.png")


def model_png(png: bytes, model: str) -> bytes:
    """The PNG with a text chunk naming ``model`` after its header: the same pixels, other bytes, so every
    model's image of a sample is a request of its own (sent as it is, cached under its own key)."""
    data = b"Software\x00" + model.encode()
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data + struct.pack(">I", zlib.crc32(b"tEXt" + data))
    header_end = 8 + 25  # signature, then the IHDR chunk (length, type, 13 bytes, CRC)
    return png[:header_end] + chunk + png[header_end:]


def write_pool(root: Path, side: int) -> Path:
    pool = root / "pool"
    for seed in range(POOL):
        (pool / f"{seed:03d}.png").parent.mkdir(parents=True, exist_ok=True)
        (pool / f"{seed:03d}.png").write_bytes(judge_bench.image_png(seed, side))
    return pool


# ---- the project copy, its catalog and the servers


def copy_project(root: Path) -> None:
    for item in ("conf", "src"):
        shutil.copytree(REPO / item, root / item, ignore=shutil.ignore_patterns("__pycache__", "local"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "conf" / "local").mkdir()


def write_backends(root: Path, vlm_url: str, images_url: str, window: int, cache: str) -> None:
    """conf/local/backends.yml: every stage's model on the loopback servers, concurrency = window."""
    entry = (
        "  type: sciir.catalog.backend_dataset.BackendDataset\n  kind: vlm\n  backend: openai\n"
        f"  config: {{base_url: '{vlm_url}', model: fake-vlm, concurrency: {window}, timeout_s: 120}}\n"
        f"  cache_path: data/cache/{cache}\n"
    )
    images = (
        f"      backend: openai_images\n      base_url: '{images_url}'\n      model: fake-images\n"
        f"      concurrency: {window}\n      timeout_s: 120\n"
    )
    chat = f"{{backend: openai, base_url: '{vlm_url}', model: fake-vlm, concurrency: {window}, timeout_s: 120"
    generators = (
        "generators:\n  type: sciir.catalog.backend_dataset.BackendSetDataset\n  kind: generator\n"
        f"  cache_path: data/cache/{cache}\n  members:\n    served:\n{images}"
        f"    planned:\n{images}      planner: {chat}, max_words: 180}}\n"
        f"    best_of:\n{images}      best_of: {{n: {BEST_OF}, selector: {chat}}}}}\n"
    )
    text = "".join(f"{name}:\n{entry}" for name in ("annotator", "screener", "judge")) + generators
    (root / "conf" / "local" / "backends.yml").write_text(text)


@contextmanager
def server(module: str, median_s: float, p95_s: float, *extra: str) -> Iterator[str]:
    command = [sys.executable, "-m", module, "--port", "0", "--latency-lognormal", str(median_s), str(p95_s)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with subprocess.Popen([*command, *extra], stdout=subprocess.PIPE, text=True, env=env) as proc:
        try:
            assert proc.stdout is not None
            yield proc.stdout.readline().split()[-1]
        finally:
            proc.terminate()


# ---- the stages: inputs written into the copy, then the node run by Kedro (the screen's input is curate's
# in-memory table, so its node function is called with the catalog's images and screener)

Stage = tuple[
    str, list[str], dict[str, Any]
]  # pipeline, nodes, runtime parameters (nested, as --params gives)


def _write_table(root: Path, relative: str, table: pd.DataFrame) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    table.to_parquet(root / relative, index=False)


def prepare_annotate(root: Path, count: int, window: int) -> Stage:
    table = kept_panels(count, f"a{window}-", methods_repeat=8)
    _write_table(root, "data/03_primary/curated.parquet", table)
    link_images(root / "pool", root / "data/03_primary/images", table["sample_id"])
    return "annotate", ["annotate_samples"], {"annotate": {"window": window}}


def prepare_judge(root: Path, count: int, window: int) -> Stage:
    models = range(max(1, count // 400))
    samples = -(-count // len(models))
    _write_table(root, "data/05_model_input/benchmark.parquet", judge_bench.benchmark_table(samples))
    _write_table(root, "data/04_feature/checklists.parquet", judge_bench.checklists_table(samples))
    generations = root / "data/07_model_output/generations"
    shutil.rmtree(generations, ignore_errors=True)
    names = [judge_bench.sample_id(s) for s in range(samples)]
    for model in models:
        link_images(root / "pool", generations / judge_bench.model_name(model), names, offset=model)
    return "evaluate", ["evaluation_inputs", "judge_generations"], {"evaluate": {"window": window}}


def prepare_generate(root: Path, count: int, window: int) -> Stage:
    _write_table(root, "data/05_model_input/benchmark.parquet", judge_bench.benchmark_table(count))
    (root / "data/06_models").mkdir(parents=True, exist_ok=True)
    (root / "data/06_models/finetune_summary.json").write_text("{}")
    params = {"window": window, "models": ["served"], "aibench": {"enabled": False}}
    return "generate", ["generate_images"], {"generate": params}


def _prepare_generator(model: str) -> Callable[[Path, int, int], Stage]:
    def prepare(root: Path, count: int, window: int) -> Stage:
        pipeline, nodes, params = prepare_generate(root, count, window)
        return pipeline, nodes, {"generate": {**params["generate"], "models": [model]}}

    return prepare


def annotations_table(curated: pd.DataFrame) -> pd.DataFrame:
    """Annotations of the curated samples as annotate writes them, each with terms (AIBench reads them)."""
    return pd.DataFrame(
        {
            "sample_id": curated["sample_id"],
            "status": "ok",
            "reason": None,
            "terms": json.dumps(["Glucose", "Pyruvate", "Citrate"]),
            "required_text": json.dumps(["Glucose"]),
            "sci_rcot": 'Style: flow diagram on white. Required text: "Glucose".',
            "abstract_prompt": "The pathway from glucose to citrate.",
        }
    )


def prepare_aibench(root: Path, count: int, window: int) -> Stage:
    table = kept_panels(count, f"g{window}-", methods_repeat=8)
    _write_table(root, "data/03_primary/curated.parquet", table)
    _write_table(root, "data/04_feature/annotations.parquet", annotations_table(table))
    return "annotate", ["build_aibench_qa"], {}


PREPARE: dict[str, Callable[[Path, int, int], Stage]] = {
    "annotate": prepare_annotate,
    "judge": prepare_judge,
    "generate": prepare_generate,
    "aibench": prepare_aibench,
    "planner": _prepare_generator("planned"),
    "best_of": _prepare_generator("best_of"),
}


class NodeClock:
    """Kedro hooks timing the stage's nodes alone (wall and this process's CPU), not the session around them."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self.nodes, self.seconds, self.cpu_s = set(nodes), 0.0, 0.0
        self._started = (0.0, 0.0)

    @hook_impl
    def before_node_run(self, node: Any) -> None:
        if node.name in self.nodes:
            self._started = (time.perf_counter(), time.process_time())

    @hook_impl
    def after_node_run(self, node: Any) -> None:
        if node.name in self.nodes:
            self.seconds += time.perf_counter() - self._started[0]
            self.cpu_s += time.process_time() - self._started[1]


@contextmanager
def working_directory(folder: Path) -> Iterator[None]:
    """Run the block in ``folder`` and come back to the current directory afterwards."""
    previous = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(previous)


def run_kedro(root: Path, stage: Stage) -> tuple[float, float]:
    """The stage's nodes run by Kedro; their wall seconds and CPU seconds."""
    from kedro.framework.session import KedroSession

    pipeline, nodes, params = stage
    clock = NodeClock(nodes)
    with KedroSession.create(project_path=root, runtime_params=params) as session:
        session._hook_manager.register(clock)  # no public way to add a hook to one session
        session.run(pipeline_name=pipeline, node_names=nodes)
    end_mlflow_runs()
    return clock.seconds, clock.cpu_s


def end_mlflow_runs() -> None:
    """Close the MLflow run a session left open, so the next stage's parameters go to a run of its own."""
    import mlflow

    while mlflow.active_run() is not None:
        mlflow.end_run()


def run_screen(root: Path, count: int, window: int) -> tuple[float, float]:
    """The screen node's function on the catalog's images and screener; its wall and CPU seconds."""
    from kedro.framework.session import KedroSession

    from sciir.pipelines.curate.screen_nodes import screen_panels

    table = kept_panels(count, f"s{window}-", methods_repeat=8)
    link_images(root / "pool", root / "data/03_primary/images", table["sample_id"])
    with KedroSession.create(project_path=root) as session:
        catalog = session.load_context().catalog
        params = catalog.load("params:curate")
        params["near_duplicates"] = {**params.get("near_duplicates", {}), "enabled": False}
        images, screener = catalog.load("curated_images"), catalog.load("screener")
        start, cpu = time.perf_counter(), time.process_time()
        screen_panels(table, images, screener, params)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    end_mlflow_runs()
    return seconds, cpu


def examination_tables(
    root: Path, count: int, window: int
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """An AIBench set of ``count`` papers drawn by ``count // 200`` models (at least one), with eight
    questions each (two per level), each image distinct (``model_png``) in the AIBench generations
    folder; the set, its questions and the generation manifest."""
    models = [judge_bench.model_name(m) for m in range(max(1, count // 200))]
    papers = [f"p{window}-{n:05d}" for n in range(-(-count // len(models)))]
    aibench_set = pd.DataFrame({"sample_id": papers, "methods_text": "The method.", "venue": "Journal"})
    qa = pd.DataFrame(
        [
            {"sample_id": paper, "question_id": f"AIB-L{level}-{k:02d}", "level": level, "kind": "component",
             "question": f'Is there a component labelled "Stage {level}-{k}"?', "gold_answer": "yes",
             "nodes": json.dumps([f"Stage {level}-{k}"]), "phases": "[]"}
            for paper in papers for level in (1, 2, 3, 4) for k in (1, 2)
        ]
    )  # fmt: skip
    folder = root / "data/07_model_output/aibench_generations"
    shutil.rmtree(folder, ignore_errors=True)
    manifest = []
    pool = sorted((root / "pool").glob("*.png"))
    for offset, model in enumerate(models):
        # An aesthetics request is the image alone: each illustration's bytes are its own (the pool's
        # pixels, a text chunk naming it), so none repeats another's request.
        (folder / model).mkdir(parents=True, exist_ok=True)
        for index, paper in enumerate(papers):
            png = pool[(index + offset) % len(pool)].read_bytes()
            (folder / model / f"{paper}.png").write_bytes(model_png(png, f"{model}/{paper}"))
        manifest += [
            {"model": model, "sample_id": paper, "backend": "openai_images", "role": "contestant", "seed": 0,
             "status": "ok", "reason": None, "meta": "{}"}
            for paper in papers
        ]  # fmt: skip
    return aibench_set, qa, pd.DataFrame(manifest)


def run_examine(root: Path, count: int, window: int) -> tuple[float, float]:
    """Evaluate's examination node function on the catalog's AIBench generations and judge; its wall and
    CPU seconds."""
    from kedro.framework.session import KedroSession

    from sciir.pipelines.evaluate.aibench_nodes import examine_images

    aibench_set, qa, manifest = examination_tables(root, count, window)
    with KedroSession.create(project_path=root) as session:
        catalog = session.load_context().catalog
        images, judge = catalog.load("aibench_generations"), catalog.load("judge")
        generations, generation_manifest = catalog.load("generations"), catalog.load("generation_manifest")
        evaluate_params = catalog.load("params:evaluate")  # the blank baseline's white images included
        start, cpu = time.perf_counter(), time.process_time()
        examine_images(
            images, manifest, generations, generation_manifest, aibench_set, qa, judge, {"window": window},
            evaluate_params,
        )  # fmt: skip
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    end_mlflow_runs()
    return seconds, cpu


# Stages whose node function is called with inputs from the catalog (their inputs are in-memory tables).
RUNNERS: dict[str, Callable[[Path, int, int], tuple[float, float]]] = {
    "screen": run_screen,
    "examine": run_examine,
}
# Requests per item: annotate asks up to four tasks per sample (fewer after low reasoning content), the
# AIBench annotation a graph and questions, the planner a plan and an image, best-of-N four images and
# four scores, the examination a solver request and an aesthetics rating.
REQUESTS_PER_ITEM = {
    "annotate": 3.5, "screen": 1.0, "judge": 1.0, "generate": 1.0, "aibench": 2.0, "planner": 2.0,
    "best_of": 2.0 * BEST_OF, "examine": 2.0,
}  # fmt: skip


def measure(
    root: Path, stage: str, window: int, count: int, requests: Callable[[], int], vlm_url: str
) -> StageRun:
    """One stage at one window, in a clean data folder with a fresh cache."""
    shutil.rmtree(root / "data", ignore_errors=True)
    prepared = PREPARE[stage](root, count, window) if stage in PREPARE else None
    before = requests()
    # The chat server's window (the images server keeps no stats); n/a for a stage with two models.
    sampler = InFlightSampler(vlm_url) if stage not in ("generate", *MODELS_AT_ONCE) else None
    if sampler is not None:
        sampler.start()
    seconds, cpu = run_kedro(root, prepared) if prepared is not None else RUNNERS[stage](root, count, window)
    full = sampler.full_share(window) if sampler is not None else None
    return StageRun(stage, window, requests() - before, seconds, cpu, full)


def served_requests(vlm_url: str, images_root: Path, stage: str) -> Callable[[], int]:
    """How many requests the stage's servers have received: the chat server's count, plus the images
    written (the images server keeps no count: each manifest row is one image, ``BEST_OF`` for best-of-N)."""
    manifest = images_root / "data/07_model_output/generation_manifest.parquet"
    per_row = {"generate": 1, "planner": 1, "best_of": BEST_OF}.get(stage, 0)

    def count() -> int:
        chat = int(judge_bench.server_stats(vlm_url)["chat_requests"]) if stage != "generate" else 0
        images = len(pd.read_parquet(manifest)) if per_row and manifest.exists() else 0
        return chat + per_row * images

    return count


def row(run: StageRun, mean_s: float) -> str:
    """One stage's line of the table."""
    bound = MODELS_AT_ONCE.get(run.stage, 1) * run.window / mean_s
    cpu_ms = 1000 * run.cpu_s / run.requests if run.requests else float("nan")
    target = TARGETS.get(run.window)
    return (
        f"{run.stage:<10}{run.window:>7}{run.requests:>10}{run.seconds:>9.1f}{run.rate():>8.1f}"
        f"{bound:>8.1f}{run.rate() / bound:>7.2f}{'' if target is None else f'>={target}':>7}{cpu_ms:>11.2f}"
        f"{'n/a' if run.full_share is None else f'{run.full_share:.2f}':>6}"
    )


def report(runs: Sequence[StageRun], mean_s: float, args: argparse.Namespace) -> None:
    print(
        f"\nlatency: log-normal, median {args.median_s:g} s, p95 {args.p95_s:g} s (mean {mean_s:.3f} s); "
        f"images {args.side} px; {os.cpu_count()} cores"
    )
    print(f"{'stage':<10}{'window':>7}{'requests':>10}{'seconds':>9}{'req/s':>8}{'bound':>8}{'share':>7}"
          f"{'target':>7}{'CPU ms/req':>11}{'full':>6}")  # fmt: skip
    for run in runs:
        print(row(run, mean_s))
    print(
        "full: the share of the node's time with the chat server's window at least 95% full (sampled every "
        "0.1 s; n/a where the images server takes part); bound: window / mean latency, per model streamed at once"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="window 8, 8 items a stage, 64 px, 50 ms median: checks it runs"
    )
    parser.add_argument("--windows", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    parser.add_argument("--median-s", type=float, default=2.0)
    parser.add_argument("--p95-s", type=float, default=8.0)
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--ideal-s", type=float, default=90.0)
    args = parser.parse_args(argv)
    if args.quick:
        # ideal 0.05 s: every stage on its fewest items, one window's (8); what is left is Kedro's sessions
        args.windows, args.median_s, args.p95_s, args.side, args.ideal_s = [8], 0.05, 0.2, 64, 0.05
    os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")
    mean_s = lognormal_mean(args.median_s, args.p95_s)
    runs = []
    with tempfile.TemporaryDirectory(prefix="sciir-stages-") as tmp:
        root = Path(tmp) / "project"
        copy_project(root)
        bootstrap_project(root)
        write_pool(root, args.side)
        schema = ("--replies", "schema")
        with (
            working_directory(root),  # the sessions' MLflow store is ./mlruns: the copy's, not the checkout's
            server("sciir.testing.fake_openai_server", args.median_s, args.p95_s, *schema) as vlm_url,
            server("sciir.testing.fake_images_server", args.median_s, args.p95_s) as images_url,
        ):
            for window in args.windows:
                write_backends(root, vlm_url, images_url, window, f"w{window}.sqlite")
                for stage in args.stages:
                    bound = MODELS_AT_ONCE.get(stage, 1) * window / mean_s
                    items = max(window, round(args.ideal_s * bound / REQUESTS_PER_ITEM[stage]))
                    run = measure(root, stage, window, items, served_requests(vlm_url, root, stage), vlm_url)
                    print(f"measured: {row(run, mean_s)}", flush=True)
                    runs.append(run)
    report(runs, mean_s, args)


if __name__ == "__main__":
    main()
