"""The offline backend's screen task on the embedded sample's figures, one request at a time against one
thread per core (``sciir.backends.rule_based``), side by side in one run.

Each mode starts with an empty memo of OCR readings, so every figure is read by Tesseract in both. It prints
both wall times, their ratio, and whether the two modes gave the same answers. Only the sample's first
articles are written, up to the one holding the last figure used: the same files as in the whole sample.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_rule_threads.py            # the sample's first 48 figures
    .venv/bin/python benchmarks/bench_rule_threads.py --quick    # its first 2: checks the script runs
Options: --figures N.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from sciir.backends import rule_based
from sciir.backends.offline import OfflineVLM
from sciir.backends.readers import tesseract
from sciir.sample import build, write_embedded_sample
from sciir.sample.build import MANIFEST_NAME
from sciir.tasks.registry import rule_book
from sciir.tasks.screen import ScreenParams, screen_request


def _write_sample_start(folder: Path, kept_figures: int) -> None:
    """The embedded sample's first articles, up to the one holding its ``kept_figures``-th kept figure: the same
    bytes as in the whole sample (``write_embedded_sample``'s ``first_articles``)."""
    plans, kept, count = build.sample_plan(), 0, 0
    while count < len(plans) and kept < kept_figures:
        kept += sum(figure.reject_reason is None for figure in plans[count].figures)
        count += 1
    write_embedded_sample(folder, first_articles=count)


def _figures(folder: Path, count: int) -> list[bytes]:
    manifest = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    files = [row["file"] for row in manifest["figures"] if row["expected"] == "kept"][:count]
    return [(folder / file).read_bytes() for file in files]


def _timed(requests: list, threads: int) -> tuple[float, list]:
    tesseract._SHARED_MEMOS.clear()  # a cold memo: every figure is read again
    rule_based.answer_threads = lambda: threads
    start = time.perf_counter()
    results = OfflineVLM(rule_book("offline")).generate(requests)
    return time.perf_counter() - start, [result.output for result in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, default=48)
    parser.add_argument("--quick", action="store_true", help="the first 2 figures: checks the script runs")
    args = parser.parse_args()
    if args.quick:
        args.figures = 2
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        _write_sample_start(Path(tmp), args.figures)
        images = _figures(Path(tmp), args.figures)
    settings = ScreenParams()
    requests = [screen_request(image, "", settings) for image in images]
    megabytes = sum(len(image) for image in images) / 1e6
    print(f"{len(requests)} figures ({megabytes:.1f} MB of PNG), {cores} cores")
    one, one_answers = _timed(requests, 1)
    many, many_answers = _timed(requests, cores)
    print(f"one request at a time : {one:7.1f} s  ({one / len(requests):.2f} s per figure)")
    print(f"one thread per core   : {many:7.1f} s  ({many / len(requests):.2f} s per figure)")
    print(f"ratio (threads / one) : {many / one:7.2f}")
    print(f"same answers          : {one_answers == many_answers}")


if __name__ == "__main__":
    main()
