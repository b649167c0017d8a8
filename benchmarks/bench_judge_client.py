"""Throughput of the judge client (the ``openai`` backend) against the fake server with injected latency.

The server runs in its own process so that it does not share the client's interpreter. One run measures
concurrency 1, 8, 64 and 256 and a plain sequential loop (a synchronous httpx client posting the same
payloads one after another), side by side, and prints requests/s, the share of the latency bound
(concurrency / latency), client and server CPU seconds, and each level's ratio to the sequential loop.

The baseline's bodies are serialised as the backend serialises its own (``sciir.backends.http.json_body``:
image data URLs are ``JSONText`` fragments spliced in as bytes), so both send the same bytes.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_judge_client.py [--latency-s 0.2] [--waves 30]
    .venv/bin/python benchmarks/bench_judge_client.py --quick   # 1 wave at 20 ms, seconds: checks the script runs
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from PIL import Image

from sciir.backends.base import VLMRequest
from sciir.backends.http.json_body import json_body
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.tasks.judge import build_judge_request

REPO = Path(__file__).resolve().parents[1]
CONCURRENCY_LEVELS = (1, 8, 64, 256)
TARGET_CONCURRENCY, TARGET_SHARE = 64, 0.9


@dataclass(frozen=True)
class Measurement:
    """One level's wall time, client CPU time and server CPU time for ``requests`` requests."""

    label: str
    concurrency: int
    requests: int
    wall_s: float
    client_cpu_s: float
    server_cpu_s: float
    failures: int

    @property
    def per_s(self) -> float:
        return self.requests / self.wall_s


@contextmanager
def fake_server(latency_s: float) -> Iterator[str]:
    """The fake OpenAI server in a child process; yields its base URL."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "sciir.testing.fake_openai_server", "--port", "0"]
    with subprocess.Popen(
        [*command, "--latency-s", str(latency_s)], stdout=subprocess.PIPE, text=True, env=env
    ) as proc:
        try:
            yield proc.stdout.readline().split()[-1]
        finally:
            proc.terminate()


def server_stats(base_url: str) -> dict:
    """The server process's counts and CPU seconds so far (its ``GET /stats``)."""
    return httpx.get(base_url.removesuffix("/v1") + "/stats").json()


def server_cpu_s(base_url: str) -> float:
    return float(server_stats(base_url)["cpu_s"])


def tiny_png(seed: int) -> bytes:
    """A small distinct PNG, the size of a thumbnail a judge would get in a smoke run."""
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), ((seed * 37) % 256, (seed * 91) % 256, 128)).save(buffer, format="PNG")
    return buffer.getvalue()


def judge_requests(count: int) -> list[VLMRequest]:
    """``count`` judge requests as evaluate builds them: an image, a prompt and a three-question checklist."""
    requests = []
    for n in range(count):
        checklist = [
            {
                "id": f"s{n}-q{q}",
                "question": f"Is label {q} drawn?",
                "layer": 1,
                "track": "text",
                "expected_text": f"L{q}",
            }
            for q in range(3)
        ]
        requests.append(build_judge_request(f"A diagram number {n}.", checklist, tiny_png(n)))
    return requests


def measure(label: str, concurrency: int, base_url: str, run: Callable[[], int], count: int) -> Measurement:
    """Time ``run`` (which returns its number of failures) on the client and the server."""
    server_before, cpu_before, start = server_cpu_s(base_url), time.process_time(), time.perf_counter()
    failures = run()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_before
    return Measurement(label, concurrency, count, wall, cpu, server_cpu_s(base_url) - server_before, failures)


def concurrent_level(base_url: str, concurrency: int, requests: Sequence[VLMRequest]) -> Measurement:
    vlm = OpenAICompatibleVLM(base_url=base_url, model="fake-vlm", concurrency=concurrency, timeout_s=60)

    def run() -> int:
        return sum(not result.ok for result in vlm.generate(requests))

    return measure(f"client, concurrency {concurrency}", concurrency, base_url, run, len(requests))


def sequential_loop(base_url: str, requests: Sequence[VLMRequest]) -> Measurement:
    """The baseline: the same payloads posted one after another with a plain synchronous client, each body
    the bytes the backend itself would send (``json_body``)."""
    vlm = OpenAICompatibleVLM(base_url=base_url, model="fake-vlm")
    payloads = [json_body(vlm.build_payload(r)) for r in requests]

    def run() -> int:
        with httpx.Client(timeout=60) as client:
            replies = [
                client.post(
                    f"{base_url}/chat/completions", content=body, headers={"Content-Type": "application/json"}
                )
                for body in payloads
            ]
        return sum(reply.status_code != 200 for reply in replies)

    return measure("plain sequential loop", 1, base_url, run, len(requests))


def report(results: Sequence[Measurement], latency_s: float, sequential: Measurement) -> None:
    print(f"cores: {os.cpu_count()}, injected latency: {latency_s:g} s, server in its own process")
    header = f"{'':30} {'requests':>8} {'req/s':>8} {'of bound':>8} {'client CPU s':>12} "
    print(header + f"{'CPU ms/req':>10} {'server CPU s':>12} {'vs loop':>8} {'failed':>6}")
    for m in (*results, sequential):
        share = m.per_s / (m.concurrency / latency_s)
        print(
            f"{m.label:30} {m.requests:8d} {m.per_s:8.1f} {share:8.1%} {m.client_cpu_s:12.2f} "
            f"{1000 * m.client_cpu_s / m.requests:10.2f} {m.server_cpu_s:12.2f} "
            f"{m.per_s / sequential.per_s:7.1f}x {m.failures:6d}"
        )
    target = next(m for m in results if m.concurrency == TARGET_CONCURRENCY)
    bound = TARGET_CONCURRENCY / latency_s
    verdict = "meets" if target.per_s >= TARGET_SHARE * bound else "MISSES"
    print(
        f"concurrency {TARGET_CONCURRENCY}: {target.per_s:.1f} req/s = {target.per_s / bound:.1%} of "
        f"{bound:.0f} req/s; {verdict} the {TARGET_SHARE:.0%} target"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-s", type=float, default=0.2, help="injected server latency")
    parser.add_argument("--waves", type=int, default=30, help="requests per level = concurrency x waves")
    parser.add_argument(
        "--quick", action="store_true", help="one wave at 20 ms latency, in seconds: checks the script runs"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.latency_s, args.waves = 0.02, 1
    requests = judge_requests(max(CONCURRENCY_LEVELS) * args.waves)
    with fake_server(args.latency_s) as base_url:
        concurrent_level(base_url, 8, requests[:64])  # warm-up: imports, first connections
        results = [
            concurrent_level(base_url, concurrency, requests[: concurrency * args.waves])
            for concurrency in CONCURRENCY_LEVELS
        ]
        sequential = sequential_loop(base_url, requests[: args.waves])
    report(results, args.latency_s, sequential)


if __name__ == "__main__":
    main()
