"""Lanczos downsizing and padding to a square by libvips (SIMD resamplers), for standardisation (paper B.2).

libvips' ``reduce`` with the ``lanczos3`` kernel uses the same kernel and centre convention as Pillow's
``LANCZOS`` and gives the same pixels within a fraction of a level: a 2 Mpx RGB figure takes about 7 ms
against Pillow's 25. On one band its horizontal pass is not vectorised (in libvips 8.18 it costs as much
as all of Pillow's grey resize), so a grey image gets two vertical passes, the second on the transpose
(OpenCV transposes in one cheap pass): 2.5 ms against Pillow's 13, the same pixels as ``reduce``. On
four bands the transposes cost more than they save.

It only shrinks: libvips enlarges through an affine transform with a bicubic interpolator, not Lanczos,
so an image smaller than its target is left to Pillow (sciir.figures.standardisation.standardise).

pyvips (the ``pyvips-binary`` wheel bundles libvips, so no system package is needed) is imported by the
first call, not by importing this module's callers.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

import cv2
import numpy as np
from PIL import Image

if TYPE_CHECKING:
    import pyvips


@cache
def _vips() -> ModuleType:
    """pyvips, set for one image at a time in a worker process that has one core to itself."""
    import pyvips

    # Every image is new: the operation cache would only hold on to finished pixels.
    pyvips.cache_set_max(0)
    # Curate runs one worker process per core; libvips threads would compete with the other workers.
    pyvips.concurrency_set(1)
    return pyvips


def _vips_image(image: Image.Image) -> pyvips.Image:
    """An 8-bit ``L`` or ``RGB`` Pillow image as a libvips image, sharing its pixels where Pillow can.

    Pillow exports an image held in one memory block through Arrow without a copy, ``RGB`` as four bytes
    a pixel (``RGBX``; libvips resizes four bands as fast as three, while dropping the fourth would cost
    a pass); ``np.asarray`` would cost a copy of about 1 ms per Mpx. Larger images, held in several
    blocks, are copied.
    """
    import pyarrow

    vips = _vips()
    width, height = image.size
    try:
        exported = pyarrow.array(image)
    except ValueError:  # rows in several memory blocks
        pixels = np.asarray(image)
        return vips.Image.new_from_memory(pixels.data, width, height, len(image.getbands()), "uchar")
    if image.mode == "L":
        return vips.Image.new_from_memory(exported.buffers()[1], width, height, 1, "uchar")
    return vips.Image.new_from_memory(exported.values.buffers()[1], width, height, 4, "uchar")


def _pixels(image: pyvips.Image) -> np.ndarray:
    """A libvips image computed into an H x W x bands uint8 array."""
    return np.frombuffer(image.write_to_memory(), dtype=np.uint8).reshape(
        image.height, image.width, image.bands
    )


def _lanczos_down_columns(image: pyvips.Image, height: int) -> np.ndarray:
    """Each column of ``image`` resampled to ``height`` rows by Lanczos-3, as an array."""
    resized = _pixels(image.reducev(image.height / height, kernel="lanczos3"))
    if resized.shape[0] != height:  # libvips rounds height / shrink; never off here
        raise RuntimeError(f"libvips made {resized.shape[0]} rows, not {height}")
    return resized


def _transposed(pixels: np.ndarray) -> pyvips.Image:
    """An H x W x bands array as its W x H transpose in libvips (OpenCV transposes in one fast pass)."""
    flipped = cv2.transpose(pixels).reshape(pixels.shape[1], pixels.shape[0], pixels.shape[2])
    return _vips().Image.new_from_memory(
        flipped.data, flipped.shape[1], flipped.shape[0], flipped.shape[2], "uchar"
    )


def _box_preshrunk(image: pyvips.Image, new_size: tuple[int, int], gap: float) -> pyvips.Image:
    """Pillow's ``reducing_gap``: an integer box shrink first while Lanczos would still reduce by ``gap``."""
    across = max(1, int(image.width / new_size[0] / gap))
    down = max(1, int(image.height / new_size[1] / gap))
    return image if across == down == 1 else image.shrink(across, down)


def _lanczos(image: pyvips.Image, new_size: tuple[int, int]) -> np.ndarray:
    """``image`` resampled to ``new_size`` (width, height; no larger) by Lanczos-3, as an array of one
    band (H x W) or three (H x W x 3: an ``RGBX`` image's fourth band is dropped after resizing, by
    OpenCV, which takes a third of the time libvips' ``extract_band`` adds)."""
    if image.bands == 1:  # two vertical passes (module docstring)
        shorter = _lanczos_down_columns(image, new_size[1])
        return cv2.transpose(_lanczos_down_columns(_transposed(shorter), new_size[0]))
    resized = _pixels(image.reduce(image.width / new_size[0], image.height / new_size[1], kernel="lanczos3"))
    if resized.shape[1::-1] != new_size:  # libvips rounds size / shrink; never off here
        raise RuntimeError(f"libvips made {resized.shape[1]}x{resized.shape[0]}, not {new_size}")
    return cv2.cvtColor(resized, cv2.COLOR_RGBA2RGB) if image.bands == 4 else resized


def shrink_and_pad(
    image: Image.Image, new_size: tuple[int, int], size: int, fill: tuple[int, ...], gap: float
) -> np.ndarray:
    """An 8-bit ``L`` or ``RGB`` image shrunk to ``new_size`` (width, height; no larger than the image)
    with Lanczos-3 and centred on a ``size`` x ``size`` canvas of ``fill`` (one value per band), as an
    array: ``size`` x ``size`` for ``L``, ``size`` x ``size`` x 3 for ``RGB``.

    ``gap`` is Pillow's ``reducing_gap``: an integer box shrink goes first while the Lanczos step would
    still reduce by at least that much.
    """
    width, height = image.size
    if image.mode not in ("L", "RGB"):
        raise ValueError(f"an 8-bit L or RGB image is expected, not {image.mode}")
    if new_size[0] > width or new_size[1] > height:
        raise ValueError(f"{width}x{height} cannot be shrunk to {new_size[0]}x{new_size[1]}")
    if len(fill) != len(image.getbands()):
        raise ValueError(f"a fill of {len(fill)} values for an {image.mode} image")
    resized = _lanczos(_box_preshrunk(_vips_image(image), new_size, gap), new_size)
    left, top = (size - new_size[0]) // 2, (size - new_size[1]) // 2
    padded = cv2.copyMakeBorder(
        resized,
        top,
        size - new_size[1] - top,
        left,
        size - new_size[0] - left,
        cv2.BORDER_CONSTANT,
        value=list(fill),
    )
    return padded.reshape(size, size) if image.mode == "L" else padded
