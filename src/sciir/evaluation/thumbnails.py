"""Thumbnails of the report's model pages: one PNG per distinct image and size, made on demand.

A thumbnail's path names its content (the sha256 of the source image, and the size), so the report
folder (``sciir.catalog.report_dataset``) keeps the thumbnails already written and calls ``make``
only for the images it has not seen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from sciir.evaluation.generated_images import ImageLoaders
from sciir.images.payload import ImageFile, ImageLimits, converted, image_file, read_header

THUMBNAILS = "thumbnails"  # folder of the thumbnails, one per distinct image and size


@dataclass(frozen=True)
class Thumbnail:
    """An image's thumbnail: its path in the report folder, named by the source image's content and the
    size, and the function that makes its PNG bytes (called only when that file is not there yet)."""

    path: str
    make: Callable[[], bytes]


def thumbnail_png(image: ImageFile, size: int) -> bytes:
    """The image downscaled to fit ``size`` px (never enlarged), as 8-bit PNG bytes."""
    return bytes(converted(image.read(), image.name, ImageLimits(max_side=size, image_format="PNG")))


def thumbnail_path(source_sha256: str, size: int) -> str:
    """Where the ``size`` px thumbnail of the image with that sha256 lives in the report folder."""
    return f"{THUMBNAILS}/{source_sha256[:32]}-{size}.png"


def thumbnail_or_note(
    image_id: str, images: ImageLoaders, unavailable: Mapping[str, str], size: int
) -> tuple[Thumbnail | None, str | None]:
    """(thumbnail, None) for a judged image (its file read and hashed, not decoded); (None, why not)
    when there was no usable image."""
    if image_id in unavailable:
        return None, unavailable[image_id]
    if image_id not in images:
        return None, f"no image file for {image_id}"
    try:
        handle = image_file(images[image_id])
        data = handle.read()
        read_header(data, handle.name)
    except (OSError, ValueError) as exc:
        return None, f"image {image_id} could not be read for the report: {exc}"
    path = thumbnail_path(hashlib.sha256(data).hexdigest(), size)
    return Thumbnail(path, partial(thumbnail_png, handle, size)), None
