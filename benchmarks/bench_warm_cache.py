"""An 800-image evaluation judged cold against the fake server, then rerun warm from the response cache.

Each image gets one judge request (the figure as a small PNG, its prompt and a ten-question checklist),
sent through the cached ``openai`` backend in evaluate-sized batches, and each reply is turned into
verdict rows. The warm rerun builds a new backend and cache object on the same file, as a rerun of the
stage would, and must send nothing. Prints both wall times, the requests the server received for each,
and whether the verdicts agree.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_warm_cache.py [--images 800] [--latency-s 0.2] [--concurrency 64]
    .venv/bin/python benchmarks/bench_warm_cache.py --quick   # 32 images, 8 at a time, 20 ms: checks the script runs
"""

from __future__ import annotations

import argparse
import io
import os
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_judge_client import fake_server, server_stats
from PIL import Image, ImageDraw

from sciir.backends.base import VLMRequest
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.tasks.judge import ChecklistItem, build_judge_request, parse_judge_reply

QUESTIONS_PER_IMAGE = 10


@dataclass(frozen=True)
class Pass:
    """One pass over the evaluation: wall seconds, requests the server received, verdict rows made."""

    wall_s: float
    requests_sent: int
    cache_hits: int
    verdicts: list[tuple[str, str, str | None]]


def figure_png(number: int, side: int = 256) -> bytes:
    """A small diagram-like PNG (boxes on white), different for every image."""
    rng = random.Random(number)
    image = Image.new("RGB", (side, side), "white")
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        x, y = rng.randrange(side - 60), rng.randrange(side - 30)
        draw.rectangle((x, y, x + 60, y + 30), outline="black", width=2)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def checklist(number: int) -> list[ChecklistItem]:
    return [
        {
            "id": f"s{number}-q{q}",
            "question": f"Is box {q} connected to box {q + 1}?",
            "layer": 2,
            "track": "process",
            "expected_text": None,
        }
        for q in range(QUESTIONS_PER_IMAGE)
    ]


def evaluation(images: int) -> list[tuple[VLMRequest, list[ChecklistItem]]]:
    return [
        (build_judge_request(f"A process diagram, number {n}.", checklist(n), figure_png(n)), checklist(n))
        for n in range(images)
    ]


def judge_all(
    base_url: str, cache_path: Path, work: Sequence[tuple[VLMRequest, list[ChecklistItem]]], concurrency: int
) -> Pass:
    """Judge every image in batches of ``concurrency`` through a fresh backend and cache object."""
    sent_before = server_stats(base_url)["chat_requests"]
    start = time.perf_counter()
    judge = CachedVLM(
        OpenAICompatibleVLM(base_url=base_url, model="fake-vlm", concurrency=concurrency),
        ResponseCache(cache_path),
    )
    verdicts = []
    for begin in range(0, len(work), concurrency):
        batch = work[begin : begin + concurrency]
        for (_, items), result in zip(batch, judge.generate([request for request, _ in batch]), strict=True):
            rows = parse_judge_reply(result, items, "model", items[0]["id"].split("-")[0]).rows
            verdicts += [(row["question_id"], row["status"], row["verdict"]) for row in rows]
    wall = time.perf_counter() - start
    sent = server_stats(base_url)["chat_requests"] - sent_before
    return Pass(wall, sent, int(judge.stats["hits"]), verdicts)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=800)
    parser.add_argument("--latency-s", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64, help="judge concurrency and batch size")
    parser.add_argument(
        "--quick", action="store_true", help="32 images, concurrency 8, 20 ms latency: checks the script runs"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.images, args.concurrency, args.latency_s = 32, 8, 0.02
    work = evaluation(args.images)
    with tempfile.TemporaryDirectory() as tmp, fake_server(args.latency_s) as base_url:
        cache_path = Path(tmp) / "responses.sqlite"
        cold = judge_all(base_url, cache_path, work, args.concurrency)
        warm = judge_all(base_url, cache_path, work, args.concurrency)
        cache_mb = sum(p.stat().st_size for p in Path(tmp).iterdir()) / 1e6
    print(
        f"cores: {os.cpu_count()}, images: {args.images}, questions per image: {QUESTIONS_PER_IMAGE}, "
        f"latency: {args.latency_s:g} s, concurrency: {args.concurrency}, cache files (database + WAL): {cache_mb:.1f} MB"
    )
    for name, run in (("cold", cold), ("warm", warm)):
        print(
            f"{name}: {run.wall_s:7.3f} s wall, {run.requests_sent:4d} requests sent, "
            f"{run.cache_hits:4d} cache hits, {len(run.verdicts)} verdict rows"
        )
    print(
        f"warm / cold wall: {warm.wall_s / cold.wall_s:.3f}; verdicts identical: {warm.verdicts == cold.verdicts}"
    )


if __name__ == "__main__":
    main()
