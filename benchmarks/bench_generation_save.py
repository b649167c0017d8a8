"""Writing generated images through the project's ``generations`` catalog entry: the generate node's
partitions as they are now (``EncodedImage``: the generator's PNG bytes, written as they are) against what
it returned before (a callable returning the decoded image, encoded again on save, as a
``pillow.ImageDataset`` folder saves it).

The images are distinct 1024x1024 RGB PNGs of about 1 MB (``bench_image_payload.write_images``), as a
generator or the response cache hands them to the node; a warm rerun of the generate stage writes every one
of them again after DVC removed its outputs. The catalog entry is ``conf/base/catalog.yml``'s
``generations`` (an ``OptionalDataset`` around the ``ImageFolderDataset``), with its path in a temporary
folder. Prints wall seconds per image for each and the ratio, and checks the new way wrote the bytes given.

Usage, from the repository root:
    .venv/bin/python benchmarks/bench_generation_save.py [--images 200] [--side 1024]
    .venv/bin/python benchmarks/bench_generation_save.py --quick   # 4 images of 256 px: checks the script runs
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from bench_image_payload import write_images
from kedro.io import DataCatalog
from PIL import Image

from sciir.catalog.image_dataset import EncodedImage

REPO = Path(__file__).resolve().parents[1]


def generations_catalog(folder: Path) -> DataCatalog:
    """The project's ``generations`` entry, writing under ``folder``."""
    entries = yaml.safe_load((REPO / "conf" / "base" / "catalog.yml").read_text(encoding="utf-8"))
    entry = entries["generations"]
    entry["dataset"] = {**entry["dataset"], "path": str(folder)}
    return DataCatalog.from_config({"generations": entry})


def decoded_loader(png: bytes) -> Callable[[], Image.Image]:
    """The node's former partition: the decoded image, which the folder encodes again."""
    return lambda: Image.open(io.BytesIO(png))


def seconds_per_image(partitions: dict[str, Any], folder: Path) -> float:
    started = time.perf_counter()
    generations_catalog(folder).save("generations", partitions)
    return (time.perf_counter() - started) / len(partitions)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument("--quick", action="store_true", help="4 images of 256 px: checks the script runs")
    args = parser.parse_args()
    if args.quick:
        args.images, args.side = 4, 256
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "drawn").mkdir()
        pngs = {
            f"model/{path.stem}": path.read_bytes()
            for path in write_images(root / "drawn", args.images, args.side, 0.65)
        }
        mean_mb = sum(len(png) for png in pngs.values()) / len(pngs) / 1e6
        encoded = seconds_per_image({key: EncodedImage(png) for key, png in pngs.items()}, root / "encoded")
        decoded = seconds_per_image({key: decoded_loader(png) for key, png in pngs.items()}, root / "decoded")
        written = {f"model/{path.stem}": path.read_bytes() for path in (root / "encoded" / "model").iterdir()}
        assert written == pngs, "EncodedImage partitions must be written as they are"
    print(f"{len(pngs)} images, {args.side}x{args.side} PNG, {mean_mb:.2f} MB each on average")
    print(f"decoded and encoded again (before): {decoded * 1000:8.1f} ms per image")
    print(f"written as they are (EncodedImage):  {encoded * 1000:8.1f} ms per image")
    print(f"ratio before / now:                  {decoded / encoded:8.1f}x")


if __name__ == "__main__":
    main()
