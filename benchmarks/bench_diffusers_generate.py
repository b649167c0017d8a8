"""Drawing with a diffusers pipeline: the project's ``diffusers`` generator against the loop a user writes.

The loop a user writes calls the pipeline batch after batch and saves each image as PNG on the same thread
(``pipe(prompts, ...).images``, resized to the requested size, ``image.save(buffer, "PNG")``), so the
pipeline's device waits while the CPU encodes. The generator (``sciir.backends.diffusers_gen``) encodes a
batch's images on other threads while the next batch is drawn. Both draw the same requests with the same
pipeline, seeds and settings; the script checks they give the same PNG bytes and prints wall seconds per
image for each and the ratio.

The pipeline is the project's tiny Stable Diffusion (``sciir.training.tiny_stable_diffusion``, built in a
temporary folder: no weights can be downloaded here) drawing at 64 px, upscaled to 1024x1024 images of
about 1 MB, so the encoding is the real size's and the drawing is cheap; with a real model on a GPU the
drawing is longer and the encoding hides behind it entirely.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_diffusers_generate.py [--images 64] [--side 1024] [--device cpu]
    .venv/bin/python benchmarks/bench_diffusers_generate.py --quick   # 4 images of 256 px, 1 round: checks it runs
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sciir.backends.base import GenerationRequest
from sciir.backends.diffusers_gen import DiffusersGenerator
from sciir.training.tiny_stable_diffusion import ensure_tiny_pipeline

SETTINGS = {"steps": 4, "resolution": 64, "batch_size": 4}
ROUNDS, QUICK_ROUNDS = 2, 1


def requests(count: int, side: int) -> list[GenerationRequest]:
    return [
        GenerationRequest(
            sample_id=f"s{index}",
            prompt=f"a labelled diagram of a cell, part {index}",
            seed=index,
            width=side,
            height=side,
        )
        for index in range(count)
    ]


def plain_loop(pipeline: Any, batch: Sequence[GenerationRequest]) -> list[bytes]:
    """What a user writes: one pipeline call per batch, each image resized and saved as PNG in turn."""
    import torch
    from PIL import Image

    output = pipeline(
        [request.prompt for request in batch],
        num_inference_steps=SETTINGS["steps"],
        guidance_scale=1.0,
        generator=[torch.Generator(device=pipeline.device).manual_seed(r.seed) for r in batch],
        height=SETTINGS["resolution"],
        width=SETTINGS["resolution"],
    )
    pngs = []
    for request, image in zip(batch, output.images, strict=True):
        image = image.convert("RGB").resize((request.width, request.height), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        pngs.append(buffer.getvalue())
    return pngs


def drawn_plainly(pipeline: Any, wanted: Sequence[GenerationRequest]) -> list[bytes]:
    size = SETTINGS["batch_size"]
    return [
        png
        for start in range(0, len(wanted), size)
        for png in plain_loop(pipeline, wanted[start : start + size])
    ]


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    value = work()
    return value, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--quick", action="store_true", help="4 images of 256 px, one round each way: checks the script runs"
    )
    args = parser.parse_args()
    rounds = ROUNDS
    if args.quick:
        args.images, args.side, rounds = 4, 256, QUICK_ROUNDS
    with tempfile.TemporaryDirectory() as folder:
        base = ensure_tiny_pipeline(Path(folder) / "tiny", seed=0)
        generator = DiffusersGenerator(pipeline_path=str(base), device=args.device, **SETTINGS)
        pipeline = generator._loaded_pipeline()  # loaded once, outside both timings
        wanted = requests(args.images, args.side)
        plain_loop(pipeline, wanted[:1])  # first-call warm-up, outside both timings
        plain_s, project_s = [], []
        for _ in range(rounds):  # alternated, each way's best round kept
            plain, seconds = timed(lambda: drawn_plainly(pipeline, wanted))
            plain_s.append(seconds / len(wanted))
            results, seconds = timed(lambda: generator.generate(wanted))
            project_s.append(seconds / len(wanted))
    assert [result.image for result in results] == plain, "both ways must give the same PNG bytes"
    mean_mb = sum(len(png) for png in plain) / len(plain) / 1e6
    print(
        f"{len(wanted)} images, {args.side}x{args.side} PNG, {mean_mb:.2f} MB each on average, "
        f"batches of {SETTINGS['batch_size']}, device {args.device}"
    )
    print(f"plain loop (encode on the drawing thread): {min(plain_s) * 1000:8.1f} ms per image")
    print(f"diffusers generator (encode beside):        {min(project_s) * 1000:8.1f} ms per image")
    best = f"best of {rounds} rounds each" if rounds > 1 else "1 round each"
    print(f"ratio plain / generator: {min(plain_s) / min(project_s):.2f}x ({best})")
    print("same PNG bytes: True")


if __name__ == "__main__":
    main()
