"""Standardisation throughput per core (paper B.2): SciIR's implementation against a straightforward Pillow
version, on the same image files in one run.

The images are figures of 1-3 Mpx written to a cache folder once (seeded): drawn plots (lines, bars,
scatter, text) and smooth noisy 'micrographs', as JPEG (some EXIF-rotated), PNG (RGB, grey, and RGBA on a
transparent page), LZW TIFF with an sRGB ICC profile (as the IJM figures), 16-bit grey TIFF holding
12-bit data, and CMYK TIFF. Each path turns every file into the 1024x1024 PNG bytes curate writes:

- **plain Pillow**: ``Image.open``, ``ImageOps.exif_transpose``, ``ImageCms.profileToProfile`` when a
  profile is embedded, ``convert("RGB")`` (alpha onto white; 16-bit grey /257), the B.2 edge colour on
  the whole array, ``resize(LANCZOS)``, paste on the padded canvas, ``save(format="PNG")``;
- **SciIR**: ``sciir.images.decode.decode_file``, ``sciir.images.colour.normalise`` and
  ``sciir.figures.standardisation.standardised_png`` (libvips' Lanczos-3 shrink and padding, sciir.images.vips_resize, then
  ``encoded_png``; a grey image stays one band): the functions a curate worker runs on a one-panel
  figure; its CPU time is also split by stage;
- **floor**: SciIR's decode of the file plus its PNG encode of that file's standardised pixels (made
  beforehand, in the bands SciIR writes), with nothing between.

Each path runs in this one process over all files (after a warm-up read and one untimed image), timed
in CPU seconds, so the images per second are per core; OpenCV runs on one thread, as in a curate worker. With ``--workers N`` SciIR's path is also run
through the worker pool curate uses (``sciir.figures.isolated``), reported as images per second of wall time per
worker.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_standardise.py [--images 200] [--workers 2] [--cache /tmp/...]
    .venv/bin/python benchmarks/bench_standardise.py --quick   # 13 small images, 1 worker: checks the script runs
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageCms, ImageDraw, ImageFilter, ImageOps

from sciir.figures.figure_work import single_threaded_opencv
from sciir.figures.isolated import Failed, WorkerLimits, run_isolated
from sciir.figures.standardisation import encoded_png, standardised_pixels, standardised_png
from sciir.images.colour import normalise
from sciir.images.decode import decode_file
from sciir.images.edge_colour import edge_colour

SIZE = 1024
TOLERANCE = 24
DOMINANT_SHARE = 0.55
_SRGB = ImageCms.createProfile("sRGB")
_SRGB_BYTES = ImageCms.ImageCmsProfile(_SRGB).tobytes()


# ---- the images


FULL_MEGAPIXELS, QUICK_MEGAPIXELS = (1.0, 3.0), (0.05, 0.15)
# --quick: the fewest images for which ``write_images`` writes every kind of file at least once (count 11:
# 13 files, as each kind's share is rounded; at 10 the kinds of a 5% share get none).
QUICK_COUNT = 11


def _dimensions(rng: np.random.Generator, megapixels: tuple[float, float]) -> tuple[int, int]:
    pixels = rng.uniform(megapixels[0] * 1e6, megapixels[1] * 1e6)
    aspect = rng.uniform(0.6, 1.6)
    return int((pixels * aspect) ** 0.5), int((pixels / aspect) ** 0.5)


def _drawn_figure(rng: np.random.Generator, size: tuple[int, int]) -> Image.Image:
    """A plot-like figure: axes, lines, bars, scatter points and labels on white."""
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    width, height = size
    for _ in range(int(rng.integers(2, 5))):
        x0, y0 = int(rng.integers(0, width // 2)), int(rng.integers(0, height // 2))
        x1, y1 = (
            x0 + int(rng.integers(width // 4, width // 2)),
            y0 + int(rng.integers(height // 4, height // 2)),
        )
        draw.rectangle((x0, y0, x1, y1), outline=(0, 0, 0), width=3)
        colour = tuple(int(v) for v in rng.integers(0, 200, 3))
        points = [(x, int(y1 - (y1 - y0) * rng.random())) for x in range(x0, x1, max(1, (x1 - x0) // 40))]
        draw.line(points, fill=colour, width=4)
        for x in range(x0 + 20, x1 - 20, max(30, (x1 - x0) // 10)):
            draw.rectangle((x, int(y1 - (y1 - y0) * rng.random() * 0.8), x + 15, y1), fill=colour)
        for _ in range(80):
            px, py = int(rng.integers(x0, x1)), int(rng.integers(y0, y1))
            draw.ellipse((px - 4, py - 4, px + 4, py + 4), fill=(200, 40, 40))
        draw.text((x0 + 10, y0 + 10), f"Panel {int(rng.integers(1, 9))}: signal (a.u.)", fill=(0, 0, 0))
    return image


def _micrograph(rng: np.random.Generator, size: tuple[int, int], grey: bool = False) -> Image.Image:
    """Smooth structure plus sensor noise, as a fluorescence or electron micrograph."""
    width, height = size
    coarse = rng.integers(0, 255, (height // 16 + 1, width // 16 + 1, 1 if grey else 3), dtype=np.uint8)
    image = Image.fromarray(coarse.squeeze()).resize(size, Image.Resampling.BICUBIC)
    image = image.filter(ImageFilter.GaussianBlur(3))
    noisy = np.asarray(image, dtype=np.int16) + rng.normal(0, 6, np.asarray(image).shape).astype(np.int16)
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))


def _exif(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def _transparent(figure: Image.Image) -> Image.Image:
    rgba = figure.convert("RGBA")
    pixels = np.asarray(rgba).copy()
    pixels[..., 3] = np.where(np.asarray(figure.convert("L")) > 250, 0, 255)
    return Image.fromarray(pixels)


def _twelve_bit(rng: np.random.Generator, size: tuple[int, int]) -> Image.Image:
    values = np.asarray(_micrograph(rng, size, grey=True), dtype=np.uint16) * 16  # 0..4080
    return Image.fromarray(values)


# (name, share of the images, writer of an image of the given size)
_Writer = Callable[[np.random.Generator, Path, tuple[int, int]], None]
_KINDS: list[tuple[str, float, _Writer]] = [
    ("figure.jpg", 0.20, lambda rng, path, size: _drawn_figure(rng, size).save(path, quality=90)),
    ("micrograph.jpg", 0.10, lambda rng, path, size: _micrograph(rng, size).save(path, quality=90)),
    (
        "rotated.jpg",
        0.05,
        lambda rng, path, size: _drawn_figure(rng, size).save(path, quality=90, exif=_exif(6)),
    ),
    ("figure.png", 0.15, lambda rng, path, size: _drawn_figure(rng, size).save(path)),
    ("grey.png", 0.05, lambda rng, path, size: _drawn_figure(rng, size).convert("L").save(path)),
    ("transparent.png", 0.05, lambda rng, path, size: _transparent(_drawn_figure(rng, size)).save(path)),
    (
        "srgb-lzw.tif",
        0.25,
        lambda rng, path, size: _drawn_figure(rng, size).save(
            path, compression="tiff_lzw", icc_profile=_SRGB_BYTES
        ),
    ),
    ("twelve-bit.tif", 0.10, lambda rng, path, size: _twelve_bit(rng, size).save(path)),
    (
        "cmyk.tif",
        0.05,
        lambda rng, path, size: _drawn_figure(rng, size).convert("CMYK").save(path, compression="tiff_lzw"),
    ),
]


def write_images(folder: Path, count: int, megapixels: tuple[float, float] = FULL_MEGAPIXELS) -> list[Path]:
    """``count`` image files of ``megapixels`` (least, most) in ``folder`` (kept: made again only when
    missing, so a folder holds images of one size range only)."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind, share, write in _KINDS:
        for number in range(round(count * share)):
            path = folder / f"{number:03d}-{kind}"
            if not path.is_file():
                write(rng, path, _dimensions(rng, megapixels))  # the size drawn first, as it always was
            paths.append(path)
    return paths


# ---- the two implementations


def plain_pillow(path: Path) -> bytes:
    """Standardisation as a straightforward Pillow program would do it."""
    with Image.open(path) as opened:
        image = ImageOps.exif_transpose(opened)
        icc = opened.info.get("icc_profile")
    if icc:
        image = ImageCms.profileToProfile(
            image, ImageCms.ImageCmsProfile(io.BytesIO(icc)), _SRGB, outputMode="RGB"
        )
    if image.mode.startswith("I;16"):
        image = Image.fromarray((np.asarray(image, dtype=np.float64) / 257).astype(np.uint8))
    if image.mode in ("RGBA", "LA", "P"):
        image = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", image.size, "white"), image)
    image = image.convert("RGB")
    colours = edge_colour(np.asarray(image), TOLERANCE)
    fill = colours.dominant if colours.dominant_share > DOMINANT_SHARE else colours.mean
    scale = SIZE / max(image.size)
    new_size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    canvas = Image.new("RGB", (SIZE, SIZE), fill)
    canvas.paste(
        image.resize(new_size, Image.Resampling.LANCZOS),
        ((SIZE - new_size[0]) // 2, (SIZE - new_size[1]) // 2),
    )
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


def sciir_standardise(path: Path) -> bytes:
    """SciIR's decode, normalisation, standardisation and encoder (a curate worker's one-panel figure)."""
    single_threaded_opencv()  # once per process, as a curate worker does (also in the worker pool)
    image = normalise(decode_file(path)).image
    return standardised_png(image, SIZE, TOLERANCE, DOMINANT_SHARE)


def floor_of(outputs: dict[Path, np.ndarray]) -> Callable[[Path], bytes]:
    """Decoding the file and encoding its standardised image (made beforehand), with nothing between:
    the part of SciIR's path that no resizing or conversion can remove."""

    def floor(path: Path) -> bytes:
        decode_file(path)
        return encoded_png(outputs[path])

    return floor


def stage_milliseconds(paths: list[Path]) -> dict[str, float]:
    """Mean CPU milliseconds per image of each stage of SciIR's path."""
    totals = dict.fromkeys(("decode", "normalise", "standardise", "encode"), 0.0)
    for path in paths:
        started = time.process_time()
        decoded = decode_file(path)
        decoded_at = time.process_time()
        image = normalise(decoded).image
        normalised_at = time.process_time()
        standardised = standardised_pixels(image, SIZE, TOLERANCE, DOMINANT_SHARE)
        standardised_at = time.process_time()
        encoded_png(standardised)
        ends = (decoded_at, normalised_at, standardised_at, time.process_time())
        for stage, start, end in zip(totals, (started, *ends[:-1]), ends, strict=True):
            totals[stage] += end - start
    return {stage: 1000 * seconds / len(paths) for stage, seconds in totals.items()}


def cpu_seconds(function: Callable[[Path], bytes], paths: list[Path]) -> tuple[float, list[bytes]]:
    function(paths[0])  # one-off set-up (imports: pyarrow and libvips for SciIR) is not per image
    started = time.process_time()
    outputs = [function(path) for path in paths]
    return time.process_time() - started, outputs


def _as_rgb_png(data: bytes) -> bytes:
    """A PNG output encoded again as RGB, as SciIR wrote grey images before they stayed one band."""
    return encoded_png(np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))


def _pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--workers", type=int, default=0, help="also run SciIR's path in N worker processes")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/sciir-bench-standardise"))
    parser.add_argument(
        "--quick",
        action="store_true",
        help="13 images of 0.05-0.15 Mpx (each kind of file) in a temporary folder, and 1 worker: checks the "
        "script runs",
    )
    args = parser.parse_args()
    if not args.quick:
        measure(write_images(args.cache, args.images), args.workers)
        return
    with tempfile.TemporaryDirectory(prefix="sciir-bench-standardise-quick-") as folder:
        measure(write_images(Path(folder), QUICK_COUNT, QUICK_MEGAPIXELS), workers=1)


def measure(paths: list[Path], workers: int) -> None:
    """Time every path on ``paths`` and print the comparison (and the worker pool's rate with ``workers``)."""
    single_threaded_opencv()  # as in a curate worker (sciir.figures.figure_work)
    megapixels = np.mean([np.prod(Image.open(path).size) for path in paths]) / 1e6
    for path in paths:  # warm the page cache, so every path reads from memory
        path.read_bytes()
    print(f"{len(paths)} images, mean {megapixels:.2f} Mpx, in {paths[0].parent}")

    results = {}
    for name, function in (("plain Pillow", plain_pillow), ("SciIR", sciir_standardise), ("floor", None)):
        if function is None:
            function = floor_of(
                {
                    path: np.asarray(Image.open(io.BytesIO(data)))
                    for path, data in zip(paths, results["SciIR"][1], strict=True)
                }
            )
        seconds, outputs = cpu_seconds(function, paths)
        results[name] = (seconds, outputs)
        print(
            f"{name:>12}: {len(paths) / seconds:6.2f} images/s per core ({1000 * seconds / len(paths):6.1f} ms CPU each)"
        )

    plain, ours, least = (results[name][0] for name in ("plain Pillow", "SciIR", "floor"))
    print(
        f"SciIR / plain Pillow: {plain / ours:.2f}x; floor / SciIR: {ours / least:.2f}x (SciIR's time over the floor)"
    )
    print(f"plain Pillow over the floor: {plain / least:.2f}x")
    stages = stage_milliseconds(paths)
    print("SciIR by stage, CPU ms per image: " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))

    eight_bit = [
        i for i, path in enumerate(paths) if "twelve-bit" not in path.name and "transparent" not in path.name
    ]
    differences = [
        np.abs(_pixels(results["plain Pillow"][1][i]) - _pixels(results["SciIR"][1][i])).mean()
        for i in eight_bit
    ]
    # Sizes on the same images only: plain Pillow's 12-bit outputs are black, so they compress to nothing.
    ours_bytes, plain_bytes = (
        sum(len(results[name][1][i]) for i in eight_bit) for name in ("SciIR", "plain Pillow")
    )
    print(
        f"outputs: mean |SciIR - plain| {np.mean(differences):.3f} levels on the {len(eight_bit)} 8-bit opaque "
        f"images; their PNG size SciIR / plain {ours_bytes / plain_bytes:.3f}"
    )
    ours_total, plain_total = (sum(map(len, results[name][1])) for name in ("SciIR", "plain Pillow"))
    rgb_total = sum(len(_as_rgb_png(data)) for data in results["SciIR"][1])
    print(
        f"all {len(paths)} outputs: SciIR {ours_total / 1e6:.2f} MB ({rgb_total / 1e6:.2f} MB were every "
        f"output RGB), plain Pillow {plain_total / 1e6:.2f} MB (its 12-bit outputs black)"
    )
    if workers:
        started = time.monotonic()
        pooled = run_isolated(sciir_standardise, paths, WorkerLimits(workers=workers, timeout_s=120))
        wall = time.monotonic() - started
        assert not any(isinstance(result, Failed) for result in pooled), pooled
        print(
            f"SciIR in {workers} worker processes: {len(paths) / wall:.2f} images/s wall, "
            f"{len(paths) / wall / workers:.2f} per worker (spawning included)"
        )


if __name__ == "__main__":
    main()
