"""Training images: each (image, caption) row loaded at the training size nearest its aspect ratio (its
aspect bucket), unusable rows kept with their reason, and the images grouped by size."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps

from sciir.training.config import Size

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingImage:
    """One (image, caption) pair; ``pixels`` is (3, height, width) float32 in [-1, 1], at a training size."""

    sample_id: str
    caption: str
    pixels: np.ndarray


@dataclass(frozen=True)
class SkippedImage:
    """A training row whose image could not be used, with the reason."""

    sample_id: str
    image_path: str
    reason: str


def nearest_size(width: int, height: int, sizes: Sequence[Size]) -> Size:
    """The size in ``sizes`` whose aspect ratio is nearest ``width / height`` (on a log scale, so 2:1
    and 1:2 are as far from 1:1); the first listed on a tie."""
    ratio = math.log(width / height)
    return min(sizes, key=lambda size: abs(math.log(size[0] / size[1]) - ratio))


def load_pixels(path: str | Path, sizes: Sequence[Size]) -> np.ndarray:
    """An image as a (3, h, w) float32 array in [-1, 1]: resized to cover the size of ``sizes`` nearest
    its aspect ratio, then centre-cropped to it.

    Raises:
        OSError: the file is missing, not an image, or truncated.
    """
    with Image.open(path) as image:
        image.load()  # decode now, so a truncated file fails here and not later
        size = nearest_size(image.width, image.height, sizes)
        fitted = ImageOps.fit(image.convert("RGB"), size, Image.Resampling.LANCZOS)
    return (np.asarray(fitted, dtype=np.float32) / 127.5 - 1.0).transpose(2, 0, 1)


def load_training_images(
    rows: Iterable[Mapping[str, Any]], sizes: Sequence[Size]
) -> tuple[list[TrainingImage], list[SkippedImage]]:
    """The usable (image, caption) pairs of rows with sample_id, prompt and image_path, each image at the
    training size of ``sizes`` nearest its aspect ratio.

    A missing or unreadable image is skipped with a logged warning naming the file; it is
    returned among the skipped rows, never dropped silently.
    """
    images: list[TrainingImage] = []
    skipped: list[SkippedImage] = []
    for row in rows:
        sample, path = str(row["sample_id"]), row["image_path"]
        try:
            if not isinstance(path, str) or not path:
                raise ValueError("the row has no image_path")
            pixels = load_pixels(path, sizes)
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            reason = (
                f"training image {path!r} of sample {sample} is unusable: {type(error).__name__}: {error}"
            )
            logger.warning("Skipped a training image: %s", reason)
            skipped.append(SkippedImage(sample_id=sample, image_path=str(path), reason=reason))
            continue
        images.append(TrainingImage(sample_id=sample, caption=str(row["prompt"]), pixels=pixels))
    return images, skipped


def image_size(image: TrainingImage) -> Size:
    """The (width, height) an image was loaded at."""
    _, height, width = image.pixels.shape
    return width, height


def by_size(images: Sequence[TrainingImage]) -> list[list[TrainingImage]]:
    """The images grouped by size, groups in the order their first image comes, images in their order."""
    groups: dict[Size, list[TrainingImage]] = {}
    for image in images:
        groups.setdefault(image_size(image), []).append(image)
    return list(groups.values())


def describe_buckets(images: Sequence[TrainingImage]) -> dict[str, int]:
    """Images per training size, as ``{"<width>x<height>": count}``."""
    return {"{}x{}".format(*image_size(group[0])): len(group) for group in by_size(images)}
