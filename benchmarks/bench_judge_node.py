"""The evaluate stage's judge node at real image size, side by side with a plain aiohttp client (issue 8).

One run, in a fresh temporary copy of the project (conf/, src/, pyproject.toml), against the loopback
fake OpenAI server in its own process (200 ms latency):

1. writes N distinct 1024x1024 PNGs of about 1.0 MB (32 models x 24 samples for N = 768) into
   ``data/07_model_output/generations/<model>/<sample_id>.png``, and a 24-sample benchmark and checklists;
2. a plain client (asyncio + aiohttp, concurrency 64) reads each file's bytes and posts them as a base64
   data URL in a chat-completions payload like the judge's (same prompt and schema);
3. ``kedro run --pipelines evaluate --nodes evaluation_inputs,judge_generations --params evaluate.window=64``
   ``conf/local/backends.yml`` judge (``backend: openai``, concurrency 64) on that server, through the
   project's catalog and a fresh response cache; then the same command again (warm: same cache);
4. the same command with a fresh cache against a second server injecting 20% faults, and a check that
   every (model, sample, question) verdict row is there, judged or failed with a reason;
5. with ``--memory``: the node again on 4x the images (3,072 at the default size) for its peak memory.

It prints both rates, their ratio, client CPU per request and its ratio, each rate's share of the
concurrency bound (64 / 0.2 s = 320 req/s), the warm rerun, the fault run and peak memory. The node's
own time is read from Kedro's log ("Running node" to its first "Saving data"); its CPU from the kedro
process (``os.wait4``: itself and the workers it waited for) and, where psutil is installed, from its
process tree sampled every 50 ms (which also gives the tree's peak RSS).

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_judge_node.py             # 768 images: rates, warm rerun, faults
    .venv/bin/python benchmarks/bench_judge_node.py --memory    # also the node's peak memory at 4x images
    .venv/bin/python benchmarks/bench_judge_node.py --quick     # 48 images of 64 px, 50 ms, 2 rounds: checks it runs
    .venv/bin/python benchmarks/bench_judge_node.py --images 3072 --side 64   # small images: the bound
    .venv/bin/python benchmarks/bench_judge_node.py --rounds 3  # three node / plain pairs: median ratio
Options: --images N (a multiple of 24), --rounds 1, --memory-only (only the two cold runs for memory), --latency-s 0.2,
--concurrency 64, --fault-rate 0.2, --keep DIR (work there and keep the copy, images and logs).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import numpy as np
import pandas as pd
from PIL import Image

from sciir.tasks.judge import JUDGE_REPLY_SCHEMA, checklist_items, render_judge_prompt

REPO = Path(__file__).resolve().parents[1]
SAMPLES = 24
DEFAULT_IMAGES, MEMORY_FACTOR = 768, 4
# --quick: seconds, every step of a run (cold, plain client, warm, faults) on two models' 64 px images (48
# requests: enough for the fault server's seeded draws at 20% to inject some faults; 24 drew none).
QUICK_IMAGES, QUICK_SIDE, QUICK_LATENCY_S = 2 * SAMPLES, 64, 0.05
IMAGE_SIDE = 1024
GENERATIONS = Path("data/07_model_output/generations")
FAULT_KINDS = ("400", "500", "503", "malformed_json", "drop")  # 400 is never retried: some must fail
TARGET_RATE_RATIO, TARGET_CPU_RATIO, TARGET_WARM_SHARE = 0.9, 2.0, 0.10
GROUPS = ("All_Three", "Entity_Law", "Law_Process", "Entity_Process")
GROUP_TRACKS = {
    "All_Three": ["entity", "process", "law"],
    "Entity_Law": ["entity", "law"],
    "Law_Process": ["process", "law"],
    "Entity_Process": ["entity", "process"],
}
LOGGING_YML = """\
version: 1
disable_existing_loggers: False
formatters:
  timed: {{format: "%(created).3f %(name)s %(message)s"}}
handlers:
  file: {{class: logging.FileHandler, filename: "{path}", formatter: timed}}
loggers:
  kedro: {{level: INFO}}
  sciir: {{level: INFO}}
root: {{handlers: [file], level: WARNING}}
"""


# ---- inputs: a benchmark, its checklists and real-size images


def sample_id(number: int) -> str:
    return f"bench-{number:03d}"


def model_name(number: int) -> str:
    return f"model_{number:03d}"


def _labels(number: int) -> list[str]:
    return [f"Stage {number}-{k}" for k in range(5)]


def benchmark_table(samples: int) -> pd.DataFrame:
    """``samples`` benchmark rows with the columns evaluate reads (docs/data_contract.md)."""
    rows = []
    for n in range(samples):
        group, labels = GROUPS[n % len(GROUPS)], _labels(n)
        edges = [[a, b] for a, b in zip(labels, labels[1:], strict=False)]
        quoted = ", ".join(f'"{label}"' for label in labels)
        prompt = (
            f"Style: flow diagram on a white background. Required text: {quoted}. Entity structure: "
            f"{len(labels)} labelled elements: {quoted}. Topology: arrows connect "
            + "; ".join(f"{a} -> {b}" for a, b in edges)
            + ". Law: the flux through each stage is conserved."
        )
        rows.append(
            {
                "sample_id": sample_id(n),
                "group": group,
                "setting": "instruction_following" if n % 2 == 0 else "intrinsic_reasoning",
                "tracks": json.dumps(GROUP_TRACKS[group]),
                "term_count": len(labels),
                "prompt": prompt,
                "plan": json.dumps({"labels": labels, "edges": edges}),
            }
        )
    return pd.DataFrame(rows)


def _question(sample: str, qid: str, layer: int, track: str, kind: str, about: list[str], text: str) -> dict:
    return {
        "sample_id": sample,
        "question_id": qid,
        "layer": layer,
        "track": track,
        "kind": kind,
        "polarity": "positive",
        "about": json.dumps(about),
        "question": text,
        "expected_text": about[0] if layer == 1 else None,
        "parent_ids": "[]",
    }


def checklists_table(samples: int) -> pd.DataFrame:
    """About a dozen questions per sample (text, entity, relation, law), like the embedded sample's."""
    rows = []
    for n in range(samples):
        sample, labels = sample_id(n), _labels(n)
        for k, label in enumerate(labels):
            text = f'Is the text "{label}" rendered with exactly this spelling?'
            rows.append(_question(sample, f"L1-{k:02d}", 1, "text", "text", [label], text))
            text = f'Is "{label}" drawn as a distinct, identifiable component?'
            rows.append(_question(sample, f"L2-entity-{k:02d}", 2, "entity", "entity", [label], text))
        for k, (a, b) in enumerate(zip(labels, labels[1:], strict=False)):
            text = f'Is there an arrow from "{a}" to "{b}"?'
            rows.append(_question(sample, f"L2-process-{k:02d}", 2, "process", "relation", [a, b], text))
        law = "the flux through each stage is conserved"
        rows.append(
            _question(sample, "L2-law-00", 2, "law", "law", [law], f"Does the figure show that {law}?")
        )
    return pd.DataFrame(rows)


def image_png(seed: int, side: int = IMAGE_SIDE) -> bytes:
    """A distinct ``side`` x ``side`` PNG of about 1.0 MB at 1024 px: a smooth gradient plus seeded noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    corners = rng.uniform(40, 215, size=(3, 3))
    channels = [
        c0 + (cx - c0) * x * 0.5 + (cy - c0) * y * 0.5 + rng.integers(0, amplitude, size=(side, side))
        for (c0, cx, cy), amplitude in zip(corners, (3, 2, 2), strict=True)
    ]
    pixels = np.clip(np.stack(channels, axis=-1), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def _write_image(target: tuple[str, int, int]) -> int:
    path, seed, side = Path(target[0]), target[1], target[2]
    path.parent.mkdir(parents=True, exist_ok=True)
    data = image_png(seed, side)
    path.write_bytes(data)
    return len(data)


def write_images(root: Path, models: range, samples: int, side: int = IMAGE_SIDE) -> int:
    """Write every (model, sample) image under ``root``'s generations folder; returns the bytes written."""
    targets = [
        (str(root / GENERATIONS / model_name(m) / f"{sample_id(s)}.png"), m * 1000 + s, side)
        for m in models
        for s in range(samples)
    ]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return sum(pool.map(_write_image, targets, chunksize=8))


# ---- the project copy and its judge


def copy_project(root: Path, benchmark: pd.DataFrame, checklists: pd.DataFrame) -> None:
    """conf/ (without local), src/ and pyproject.toml, plus the benchmark and checklist tables."""
    for item in ("conf", "src"):
        shutil.copytree(REPO / item, root / item, ignore=shutil.ignore_patterns("__pycache__", "local"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "conf" / "local").mkdir()
    for relative, table in (
        ("data/05_model_input/benchmark.parquet", benchmark),
        ("data/04_feature/checklists.parquet", checklists),
    ):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        table.to_parquet(root / relative, index=False)


def source_revision() -> str:
    """The repository's commit, and whether conf/ or src/ (what the copy measures) differ from it."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--", "conf", "src", "pyproject.toml")
    return f"{commit}{f' + uncommitted changes in {len(changed.splitlines())} files' if changed else ''}"


def write_judge_entry(root: Path, base_url: str, concurrency: int, cache_name: str) -> None:
    """``conf/local/backends.yml``: the README's served-judge entry pointing at ``base_url``."""
    (root / "conf" / "local" / "backends.yml").write_text(
        "judge:\n"
        "  type: sciir.catalog.backend_dataset.BackendDataset\n"
        "  kind: vlm\n"
        "  backend: openai\n"
        f"  config: {{base_url: '{base_url}', model: fake-vlm, concurrency: {concurrency}}}\n"
        f"  cache_path: data/cache/{cache_name}\n"
    )


def kedro_command(root: Path, concurrency: int) -> list[str]:
    """The user's command, with ``evaluate.batch_size`` (or ``evaluate.window``, its later name) set to the
    concurrency when parameters_evaluate.yml has it, and the blank baseline off where there is one."""
    command = ["kedro", "run", "--pipelines", "evaluate", "--nodes", "evaluation_inputs,judge_generations"]
    params = (root / "conf" / "base" / "parameters_evaluate.yml").read_text()
    settings = [
        f"evaluate.{name}={concurrency}"
        for name in ("batch_size", "window")
        if re.search(rf"^\s*{name}:", params, re.MULTILINE)
    ][:1]
    # The blank baseline's white images are requests the plain client does not send: off, so both send
    # the same requests.
    if re.search(r"^\s*blank:", params, re.MULTILINE):
        settings.append("evaluate.blank.enabled=false")
    return [*command, "--params", ",".join(settings)] if settings else command


# ---- the fake server in its own process


@contextmanager
def server_process(latency_s: float, fault_rate: float = 0.0) -> Iterator[str]:
    """The fake OpenAI server in a child process (``fault_rate`` spread over FAULT_KINDS); its base URL."""
    command = [sys.executable, "-m", "sciir.testing.fake_openai_server", "--port", "0"]
    command += ["--latency-s", str(latency_s), "--retry-after-s", "0.2"]
    for kind in FAULT_KINDS if fault_rate else ():
        command += ["--fault", f"{kind}={fault_rate / len(FAULT_KINDS)}"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as proc:
        try:
            assert proc.stdout is not None
            yield proc.stdout.readline().split()[-1]
        finally:
            proc.terminate()


def server_stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as reply:
        return json.loads(reply.read())


# ---- the plain client


@dataclass(frozen=True)
class ClientRun:
    """A timed pass: requests the server received, wall seconds, client CPU seconds, peak memory."""

    label: str
    requests: int
    wall_s: float
    cpu_s: float
    failed: int = 0
    peak_rss_mb: float = float("nan")
    tree_peak_rss_mb: float = float("nan")
    whole_wall_s: float = float("nan")
    whole_cpu_s: float = float("nan")
    max_in_flight: int = 0
    server_cpu_s: float = float("nan")
    command: str = ""

    @property
    def per_s(self) -> float:
        return self.requests / self.wall_s if self.wall_s > 0 else float("nan")

    @property
    def cpu_ms_per_request(self) -> float:
        return 1000 * self.cpu_s / self.requests if self.requests else float("nan")


@dataclass(frozen=True)
class PlainJob:
    path: Path
    prompt: str


def plain_jobs(
    root: Path, models: range, benchmark: pd.DataFrame, checklists: pd.DataFrame
) -> list[PlainJob]:
    """Each image file with the judge prompt of its sample (rendered as evaluate renders it)."""
    prompts = {
        row.sample_id: render_judge_prompt(
            row.prompt, checklist_items(checklists[checklists["sample_id"] == row.sample_id])
        )
        for row in benchmark.itertuples(index=False)
    }
    return [
        PlainJob(root / GENERATIONS / model_name(m) / f"{sample}.png", prompt)
        for m in models
        for sample, prompt in prompts.items()
    ]


def plain_payload(job: PlainJob) -> bytes:
    """The chat-completions body: the prompt, the file's own bytes as a data URL, the judge's schema."""
    url = "data:image/png;base64," + base64.b64encode(job.path.read_bytes()).decode("ascii")
    content = [{"type": "text", "text": job.prompt}, {"type": "image_url", "image_url": {"url": url}}]
    schema = {"name": "judge", "schema": JUDGE_REPLY_SCHEMA, "strict": True}
    body = {
        "model": "fake-vlm",
        "messages": [{"role": "user", "content": content}],
        "temperature": 0.0,
        "max_tokens": 2048,
        "response_format": {"type": "json_schema", "json_schema": schema},
    }
    return json.dumps(body).encode()


async def _plain_worker(session: aiohttp.ClientSession, url: str, jobs: Iterator[PlainJob]) -> int:
    failed = 0
    for job in jobs:  # the shared iterator bounds the loop: each job is taken once
        async with session.post(
            url, data=plain_payload(job), headers={"Content-Type": "application/json"}
        ) as r:
            body = await r.json(content_type=None)
            answers = json.loads(body["choices"][0]["message"]["content"]).get("answers") if r.ok else None
            failed += not answers
    return failed


async def _plain_all(base_url: str, jobs: Sequence[PlainJob], concurrency: int) -> int:
    shared = iter(jobs)
    timeout = aiohttp.ClientTimeout(total=120)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        url = f"{base_url}/chat/completions"
        return sum(await asyncio.gather(*(_plain_worker(session, url, shared) for _ in range(concurrency))))


def plain_client(base_url: str, jobs: Sequence[PlainJob], concurrency: int) -> ClientRun:
    before = server_stats(base_url)
    cpu_before, start = time.process_time(), time.perf_counter()
    failed = asyncio.run(_plain_all(base_url, jobs, concurrency))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_before
    after = server_stats(base_url)
    return ClientRun(
        f"plain aiohttp client, concurrency {concurrency}",
        after["chat_requests"] - before["chat_requests"],
        wall,
        cpu,
        failed,
        whole_wall_s=wall,
        whole_cpu_s=cpu,
        server_cpu_s=after["cpu_s"] - before["cpu_s"],
    )


# ---- the judge node through kedro


class TreeSampler(threading.Thread):
    """CPU seconds and RSS of a process and its children, every 50 ms (needs psutil; else records nothing)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.samples: list[tuple[float, float, int]] = []  # (time.time(), CPU s, RSS bytes)
        self.done = threading.Event()

    def run(self) -> None:
        try:
            import psutil
        except ImportError:
            return
        try:
            root = psutil.Process(self.pid)
            while not self.done.is_set():
                procs = [root, *root.children(recursive=True)]
                cpu, rss = 0.0, 0
                for proc in procs:
                    try:
                        times = proc.cpu_times()
                        cpu += times.user + times.system + times.children_user + times.children_system
                        rss += proc.memory_info().rss
                    except psutil.Error:
                        continue
                self.samples.append((time.time(), cpu, rss))
                self.done.wait(0.05)
        except psutil.Error:
            return

    def cpu_between(self, start: float, end: float) -> float | None:
        """CPU seconds used between two wall-clock times (nearest samples), None without samples."""
        inside = [cpu for t, cpu, _ in self.samples if start <= t <= end]
        before = [cpu for t, cpu, _ in self.samples if t < start]
        if not inside:
            return None
        return inside[-1] - (before[-1] if before else inside[0])


def node_window(log_path: Path) -> tuple[float, float] | None:
    """Wall-clock start and end of judge_generations in Kedro's log (end: its first save), if found."""
    start = end = None
    for line in log_path.read_text(errors="replace").splitlines():
        stamp, _, message = line.partition(" ")
        message = message.partition(" ")[2]
        if start is None and message.startswith("Running node: judge_generations"):
            start = float(stamp)
        elif start is not None and (
            message.startswith("Saving data to") or message.startswith("Completed node")
        ):
            end = float(stamp)
            break
    return (start, end) if start is not None and end is not None else None


def run_node(root: Path, base_url: str, concurrency: int, label: str) -> ClientRun:
    """One ``kedro run`` of the judge node: whole-process and node-only wall and CPU, peak RSS, requests."""
    command = kedro_command(root, concurrency)
    log_path = root / f"kedro-{label.replace(' ', '_')}.log"
    logging_yml = root / "bench_logging.yml"
    logging_yml.write_text(LOGGING_YML.format(path=log_path))
    env = {
        **os.environ,
        "KEDRO_DISABLE_TELEMETRY": "1",
        "PYTHONPATH": str(root / "src"),
        "KEDRO_LOGGING_CONFIG": str(logging_yml),
    }
    executable = [str(Path(sys.executable).with_name("kedro")), *command[1:]]
    before = server_stats(base_url)
    start = time.perf_counter()
    with open(root / f"kedro-{label.replace(' ', '_')}.out", "w") as out:
        proc = subprocess.Popen(executable, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    if proc.returncode != 0:
        tail = (root / f"kedro-{label.replace(' ', '_')}.out").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{' '.join(command)} exited with {proc.returncode}:\n{tail}")
    stats = server_stats(base_url)
    whole_cpu = usage.ru_utime + usage.ru_stime
    window = node_window(log_path)
    node_wall = window[1] - window[0] if window else wall
    node_cpu = sampler.cpu_between(*window) if window else None
    tree_peak = max((rss for *_, rss in sampler.samples), default=0) / 2**20 or float("nan")
    return ClientRun(
        label,
        stats["chat_requests"] - before["chat_requests"],
        node_wall,
        whole_cpu if node_cpu is None else node_cpu,
        peak_rss_mb=usage.ru_maxrss / 1024,
        tree_peak_rss_mb=tree_peak,
        whole_wall_s=wall,
        whole_cpu_s=whole_cpu,
        max_in_flight=int(stats["max_in_flight"]),
        server_cpu_s=stats["cpu_s"] - before["cpu_s"],
        command=" ".join(command),
    )


# ---- the verdicts of a run


@dataclass(frozen=True)
class VerdictCheck:
    """Whether every expected (model, sample, question) row is there, and how each ended."""

    expected: int
    present: int
    statuses: dict[str, int]
    failed_without_reason: int
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        judged_or_failed = self.statuses.get("judged", 0) + self.statuses.get("failed", 0)
        return self.present == self.expected == judged_or_failed and not self.failed_without_reason


def _reason_kind(reason: str) -> str:
    """A failure reason without its numbers, for counting reasons by kind."""
    return re.sub(r"\d+(\.\d+)?", "N", reason.split(" failed: ", 1)[-1].split(": {")[0])[:100]


def check_verdicts(root: Path, checklists: pd.DataFrame, models: range) -> VerdictCheck:
    verdicts = pd.read_parquet(root / "data/07_model_output/verdicts.parquet")
    expected = {
        (model_name(m), row.sample_id, row.question_id)
        for m in models
        for row in checklists.itertuples(index=False)
    }
    got = set(zip(verdicts["model"], verdicts["sample_id"], verdicts["question_id"], strict=True))
    failed = verdicts[verdicts["status"] == "failed"]
    no_reason = int(failed["reason"].isna().sum() + (failed["reason"].astype(str).str.strip() == "").sum())
    return VerdictCheck(
        expected=len(expected),
        present=len(expected & got),
        statuses=dict(Counter(verdicts["status"].astype(str))),
        failed_without_reason=no_reason,
        reasons=dict(Counter(_reason_kind(str(r)) for r in failed["reason"].dropna()).most_common(6)),
    )


# ---- the report


def print_rates(node: ClientRun, plain: ClientRun, latency_s: float, concurrency: int) -> None:
    bound = concurrency / latency_s
    header = f"{'client':40} {'requests':>8} {'wall s':>8} {'req/s':>8} {'of bound':>8} {'CPU ms/req':>10}"
    print(f"\n{header} {'server CPU ms/req':>17}")
    for run in (node, plain):
        print(
            f"{run.label:40} {run.requests:8d} {run.wall_s:8.2f} {run.per_s:8.1f} {run.per_s / bound:8.1%} "
            f"{run.cpu_ms_per_request:10.2f} {1000 * run.server_cpu_s / max(run.requests, 1):17.2f}"
        )
    rate_ratio, cpu_ratio = node.per_s / plain.per_s, node.cpu_ms_per_request / plain.cpu_ms_per_request
    whole_cpu_ms = 1000 * node.whole_cpu_s / node.requests if node.requests else float("nan")
    print(f"concurrency bound: {concurrency} / {latency_s:g} s = {bound:.0f} req/s")
    print(
        f"node / plain rate: {rate_ratio:.3f} (target >= {TARGET_RATE_RATIO}: "
        f"{'met' if rate_ratio >= TARGET_RATE_RATIO else 'NOT met'})"
    )
    print(
        f"node / plain client CPU per request: {cpu_ratio:.2f} (target <= {TARGET_CPU_RATIO:g}: "
        f"{'met' if cpu_ratio <= TARGET_CPU_RATIO else 'NOT met'})"
    )
    print(
        f"node: most requests in flight {node.max_in_flight}; "
        f"whole kedro run {node.whole_wall_s:.1f} s wall, "
        f"{node.whole_cpu_s:.1f} s CPU ({whole_cpu_ms:.1f} ms per request with start-up, loading and saving)"
    )
    print(f"node: {node.command}; {plain.failed} plain-client replies without answers")


def print_warm(cold: ClientRun, warm: ClientRun) -> None:
    """The target is on the node, the stage's own work; the whole command also holds Kedro's start-up
    and saving, about the same in both runs whatever the number of images, printed beside it."""
    whole, node = warm.whole_wall_s / cold.whole_wall_s, warm.wall_s / cold.wall_s
    verdict = "met" if warm.requests == 0 and node < TARGET_WARM_SHARE else "NOT met"
    print(
        f"\nwarm rerun (same cache): {warm.requests} requests sent; node {warm.wall_s:.2f} s = {node:.1%} of "
        f"the cold {cold.wall_s:.1f} s ({verdict}; target: 0 requests, < {TARGET_WARM_SHARE:.0%} of the cold "
        f"time); whole kedro run {warm.whole_wall_s:.1f} s = {whole:.1%} of {cold.whole_wall_s:.1f} s, of "
        f"which {warm.whole_wall_s - warm.wall_s:.1f} s (cold: {cold.whole_wall_s - cold.wall_s:.1f} s) is "
        "outside the node: start-up, loading and saving"
    )


def print_faults(run: ClientRun, check: VerdictCheck, fault_rate: float, injected: dict) -> None:
    print(
        f"\nfault run ({fault_rate:.0%} of requests: {', '.join(FAULT_KINDS)}; fresh cache): "
        f"{run.requests} requests sent, injected {injected}, node {run.wall_s:.1f} s"
    )
    print(
        f"verdict rows: {check.present} of {check.expected} expected present; statuses {check.statuses}; "
        f"failed without a reason: {check.failed_without_reason}; every image judged or failed with a "
        f"reason: {'yes' if check.complete else 'NO'}"
    )
    for reason, count in check.reasons.items():
        print(f"  {count:6d} x {reason}")


def print_memory(runs: Sequence[tuple[int, ClientRun]]) -> None:
    print(f"\n{'images':>8} {'node s':>8} {'req/s':>8} {'peak RSS kedro MB':>18} {'peak RSS tree MB':>17}")
    for images, run in runs:
        print(
            f"{images:8d} {run.wall_s:8.1f} {run.per_s:8.1f} "
            f"{run.peak_rss_mb:18.0f} {run.tree_peak_rss_mb:17.0f}"
        )
    if len(runs) == 2:
        (small, a), (large, b) = runs
        growth = b.peak_rss_mb / a.peak_rss_mb
        print(f"peak RSS x{growth:.2f} for x{large / small:.0f} images (kedro process, ru_maxrss)")


# ---- main


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=DEFAULT_IMAGES, help="a multiple of 24")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_IMAGES} images of {QUICK_SIDE} px, {QUICK_LATENCY_S:g} s latency: checks the script runs",
    )
    parser.add_argument("--memory", action="store_true", help=f"also the node on {MEMORY_FACTOR}x the images")
    parser.add_argument(
        "--memory-only", action="store_true", help="only the node's cold runs at N and 4N images (memory)"
    )
    parser.add_argument("--side", type=int, default=IMAGE_SIDE, help="image side in px (64: small images)")
    parser.add_argument("--latency-s", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--keep", type=Path, help="work in this (new) folder and keep it")
    parser.add_argument(
        "--rounds", type=int, default=1, help="cold node and plain client pairs, order alternating (median)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.images, args.side, args.latency_s = QUICK_IMAGES, QUICK_SIDE, QUICK_LATENCY_S
        args.rounds = max(args.rounds, 2)  # the rounds' path, once
    images = args.images
    if images % SAMPLES:
        parser.error(f"--images must be a multiple of {SAMPLES}")
    models = range(images // SAMPLES)
    with tempfile.TemporaryDirectory(prefix="sciir-bench-judge-") as tmp:
        root = args.keep or Path(tmp)
        run_all(root, args, models)


def run_all(root: Path, args: argparse.Namespace, models: range) -> None:
    images = len(models) * SAMPLES
    free_gb = shutil.disk_usage(root.parent if not root.exists() else root).free / 1e9
    needed_gb = images * (MEMORY_FACTOR if args.memory or args.memory_only else 1) * 1.07e-3
    if needed_gb > 0.8 * free_gb:
        raise SystemExit(f"needs about {needed_gb:.1f} GB for images, {free_gb:.1f} GB free")
    benchmark, checklists = benchmark_table(SAMPLES), checklists_table(SAMPLES)
    revision = source_revision()
    copy_project(root, benchmark, checklists)
    start = time.perf_counter()
    written = write_images(root, models, SAMPLES, args.side)
    print(f"measuring the working tree at {revision} ({time.strftime('%Y-%m-%d %H:%M')})")
    print(
        f"cores: {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}; {images} images "
        f"({len(models)} models x {SAMPLES} samples, {args.side} px PNG, {written / images / 1e6:.3f} MB "
        f"each, written in {time.perf_counter() - start:.0f} s); {len(checklists) // SAMPLES} questions "
        f"per sample; latency {args.latency_s:g} s; concurrency {args.concurrency}; server in its own process"
    )
    if args.memory_only:
        with server_process(args.latency_s) as base_url:
            write_judge_entry(root, base_url, args.concurrency, "responses.sqlite")
            cold = run_node(root, base_url, args.concurrency, "judge node (kedro), cold")
        print_memory(memory_runs(root, args, models, cold))
        return
    jobs = plain_jobs(root, models, benchmark, checklists)
    with server_process(args.latency_s) as base_url:
        write_judge_entry(root, base_url, args.concurrency, "responses.sqlite")
        cold = run_node(root, base_url, args.concurrency, "judge node (kedro), cold")
        cold_check = check_verdicts(root, checklists, models)
        plain = plain_client(base_url, jobs, args.concurrency)
        warm = run_node(root, base_url, args.concurrency, "judge node (kedro), warm")
        rounds = [(cold, plain), *more_rounds(root, base_url, args, jobs)]
    print_rates(cold, plain, args.latency_s, args.concurrency)
    print(
        f"cold run verdicts: {cold_check.statuses}, all present: {cold_check.present == cold_check.expected}"
    )
    print_warm(cold, warm)
    if len(rounds) > 1:
        print_rounds(rounds)
    with server_process(args.latency_s, args.fault_rate) as fault_url:
        write_judge_entry(root, fault_url, args.concurrency, "responses_faults.sqlite")
        faulty = run_node(root, fault_url, args.concurrency, "judge node (kedro), faults")
        injected = server_stats(fault_url)["faults"]
    print_faults(faulty, check_verdicts(root, checklists, models), args.fault_rate, injected)
    print_memory(memory_runs(root, args, models, cold) if args.memory else [(images, cold)])
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


def more_rounds(
    root: Path, base_url: str, args: argparse.Namespace, jobs: Sequence[PlainJob]
) -> list[tuple[ClientRun, ClientRun]]:
    """Rounds 2 to ``--rounds``: the node (a fresh cache each round) and the plain client again, the one
    that goes first alternating, so that a drift of the machine falls on both alike."""
    rounds = []
    for number in range(2, args.rounds + 1):
        write_judge_entry(root, base_url, args.concurrency, f"responses_round{number}.sqlite")
        label = f"judge node (kedro), round {number}"
        if number % 2:
            node = run_node(root, base_url, args.concurrency, label)
            plain = plain_client(base_url, jobs, args.concurrency)
        else:
            plain = plain_client(base_url, jobs, args.concurrency)
            node = run_node(root, base_url, args.concurrency, label)
        rounds.append((node, plain))
    return rounds


def print_rounds(rounds: Sequence[tuple[ClientRun, ClientRun]]) -> None:
    """Each round's rates and ratio, and the median ratio, the figure the target is read on."""
    print(f"\n{'round':>5} {'first':>6} {'node req/s':>10} {'plain req/s':>11} {'node / plain':>12}")
    ratios = []
    for number, (node, plain) in enumerate(rounds, start=1):
        ratios.append(node.per_s / plain.per_s)
        first = "plain" if number % 2 == 0 else "node"
        print(f"{number:>5} {first:>6} {node.per_s:>10.1f} {plain.per_s:>11.1f} {ratios[-1]:>12.3f}")
    median = statistics.median(ratios)
    print(
        f"median node / plain over {len(rounds)} rounds: {median:.3f} (range {min(ratios):.3f}-"
        f"{max(ratios):.3f}; target >= {TARGET_RATE_RATIO}: {'met' if median >= TARGET_RATE_RATIO else 'NOT met'})"
    )


def memory_runs(
    root: Path, args: argparse.Namespace, models: range, cold: ClientRun
) -> list[tuple[int, ClientRun]]:
    """The cold run at N images and a cold run (fresh cache) at MEMORY_FACTOR x N, more models drawn."""
    images = len(models) * SAMPLES
    write_images(root, range(len(models), len(models) * MEMORY_FACTOR), SAMPLES, args.side)
    with server_process(args.latency_s) as base_url:
        write_judge_entry(root, base_url, args.concurrency, "responses_memory.sqlite")
        large = run_node(root, base_url, args.concurrency, "judge node (kedro), memory")
    return [(images, cold), (images * MEMORY_FACTOR, large)]


if __name__ == "__main__":
    main()
