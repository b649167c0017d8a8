"""CPU per image of a judge request's image bytes: the old path (decode + PNG re-encode) against the
new one (the file's own bytes, checked without a decode: ``sciir.images.payload.payload``).

The images are 1024x1024 RGB PNGs of about 1 MB (smooth gradients plus noise, each different), written
to a temporary folder. Each path reads every file from disk and makes its bytes; the request's cache
key hash is counted in both (the old path hashed once per request, the new payload carries its hash).
Prints CPU ms per image for each path and their ratio, and checks the new path sent the files' bytes.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_image_payload.py [--images 48] [--side 1024] [--noise 0.65]
    .venv/bin/python benchmarks/bench_image_payload.py --quick   # 4 images of 256 px: checks the script runs
"""

from __future__ import annotations

import argparse
import hashlib
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

from sciir.images.payload import ImageFile, ImageLimits, payload


def write_images(folder: Path, count: int, side: int, noise: float) -> list[Path]:
    """``count`` different ``side``-pixel RGB PNGs: gradients plus Gaussian noise of ``noise`` levels."""
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:side, 0:side].astype(np.float64) / side
    paths = []
    for number in range(count):
        phase = number / max(count, 1)
        base = np.stack([255 * x, 255 * y, 255 * (0.5 + 0.5 * np.sin(6.28 * (x + y + phase)))], axis=-1)
        pixels = np.clip(base + rng.normal(0, noise, base.shape), 0, 255).astype(np.uint8)
        path = folder / f"{number:04d}.png"
        Image.fromarray(pixels, "RGB").save(path, format="PNG")
        paths.append(path)
    return paths


def old_path(path: Path) -> bytes:
    """As the judge node did before issue 8: decode the file fully, re-encode it as PNG, hash it."""
    with Image.open(path) as image:
        image.load()
        decoded = image.copy()
    buffer = io.BytesIO()
    decoded.save(buffer, format="PNG")
    data = buffer.getvalue()
    hashlib.sha256(data).hexdigest()
    return data


def new_path(path: Path) -> bytes:
    """The file's own bytes, checked (header, PNG chunk CRCs) and hashed once, without a decode."""
    return payload(ImageFile.at(path), ImageLimits(max_side=1024))


def cpu_ms_per_image(make: Callable[[Path], bytes], paths: list[Path]) -> float:
    started = time.process_time()
    for path in paths:
        make(path)
    return (time.process_time() - started) * 1000 / len(paths)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--noise", type=float, default=0.65, help="noise level, tunes the file size")
    parser.add_argument("--quick", action="store_true", help="4 images of 256 px: checks the script runs")
    args = parser.parse_args()
    if args.quick:
        args.images, args.side = 4, 256
    with tempfile.TemporaryDirectory() as folder:
        paths = write_images(Path(folder), args.images, args.side, args.noise)
        mean_mb = sum(path.stat().st_size for path in paths) / len(paths) / 1e6
        assert all(new_path(path) == path.read_bytes() for path in paths), "the new path must send own bytes"
        for path in paths:  # warm the page cache so both paths read from memory
            path.read_bytes()
        old = cpu_ms_per_image(old_path, paths)
        new = cpu_ms_per_image(new_path, paths)
    print(f"{len(paths)} images, {args.side}x{args.side} PNG, {mean_mb:.2f} MB each on average")
    print(f"old (decode + PNG re-encode): {old:8.1f} ms CPU per image")
    print(f"new (own bytes + check):      {new:8.1f} ms CPU per image")
    print(f"ratio old / new:              {old / new:8.1f}x")


if __name__ == "__main__":
    main()
