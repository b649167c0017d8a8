"""Standardisation (SciIR paper, B.2): a panel resized to a square canvas padded with its edge colour,
encoded as PNG.

Decoding is sciir.images.decode's and colour normalisation sciir.images.colour's; standardisation here pads
and resizes an 8-bit sRGB image (shrinking by libvips, sciir.images.vips_resize; the padding colour from
sciir.images.edge_colour) and encodes the result.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from sciir.images.edge_colour import border_pixels, padding_colour
from sciir.images.vips_resize import shrink_and_pad

# Pillow shrinks by an integer factor with a box filter first when the Lanczos step would still
# reduce by at least this much; at 3.0 the result is indistinguishable from Lanczos alone.
_REDUCING_GAP = 3.0
# Every so many rows are compared first when looking for a grey image among RGB ones.
_GREY_SAMPLE_ROWS = 16


def fitted_size(size: tuple[int, int], target: int) -> tuple[int, int]:
    """``size`` scaled so its longer side is ``target``."""
    scale = target / max(size)
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def standardised_pixels(image: Image.Image, size: int, tolerance: int, dominant_share: float) -> np.ndarray:
    """An 8-bit sRGB ``L`` or ``RGB`` image resized (Lanczos, aspect kept) to fit ``size`` and centred on
    a ``size`` x ``size`` canvas padded with the edge colour (paper B.2), as an array with the image's
    bands: ``size`` x ``size`` for ``L``, ``size`` x ``size`` x 3 for ``RGB``.

    Shrinking is libvips' (three to five times faster than Pillow on one core, the same pixels within a
    fraction of a level); enlarging is Pillow's.
    """
    fill = padding_colour(border_pixels(image), tolerance, dominant_share)
    band_fill = fill[:1] if image.mode == "L" else fill
    new_size = fitted_size(image.size, size)
    if new_size[0] <= image.width and new_size[1] <= image.height:
        return shrink_and_pad(image, new_size, size, band_fill, _REDUCING_GAP)
    # Enlarging: libvips has no Lanczos interpolator for it (sciir.images.vips_resize), Pillow has.
    resized = image.resize(new_size, Image.Resampling.LANCZOS, reducing_gap=_REDUCING_GAP)
    canvas = Image.new(image.mode, (size, size), band_fill[0] if image.mode == "L" else band_fill)
    canvas.paste(resized, ((size - new_size[0]) // 2, (size - new_size[1]) // 2))
    return np.asarray(canvas)


def standardise(image: Image.Image, size: int, tolerance: int, dominant_share: float) -> Image.Image:
    """``standardised_pixels`` as an ``RGB`` image (a grey image made RGB)."""
    standardised = Image.fromarray(standardised_pixels(image, size, tolerance, dominant_share))
    return standardised if standardised.mode == "RGB" else standardised.convert("RGB")


def standardised_png(image: Image.Image, size: int, tolerance: int, dominant_share: float) -> bytes:
    """The PNG curate writes for a panel: ``standardised_pixels`` encoded with no Pillow image between
    the resizer and the encoder, a grey panel (``L``, or ``RGB`` with three equal bands) as a grey PNG: a
    third of the bytes to filter and compress and, read as RGB, the same pixels as ``standardise``."""
    return encoded_png(_one_band_if_grey(standardised_pixels(image, size, tolerance, dominant_share)))


def _one_band_if_grey(pixels: np.ndarray) -> np.ndarray:
    """An H x W x 3 array whose bands are all equal as its first band; any other array as it is.

    Sampled rows rule out a colour image first, so it costs a colour panel almost nothing; a grey one is
    then compared whole on split bands (OpenCV splits in one pass, three times faster than comparing
    numpy's strided views).
    """
    import cv2

    sample = pixels[::_GREY_SAMPLE_ROWS]
    if (
        pixels.ndim == 2
        or (sample[..., 0] != sample[..., 1]).any()
        or (sample[..., 1] != sample[..., 2]).any()
    ):
        return pixels
    red, green, blue = cv2.split(pixels)
    grey = cv2.countNonZero(cv2.absdiff(red, green)) == 0 and cv2.countNonZero(cv2.absdiff(green, blue)) == 0
    return red if grey else pixels


def standardise_changes(source_size: tuple[int, int], size: int) -> list[str]:
    """What standardising an image of ``source_size`` to ``size`` x ``size`` does to it."""
    changes = ["resized"] if max(source_size) != size else []
    return changes + (["padded"] if source_size[0] != source_size[1] else [])


def encoded_png(pixels: np.ndarray) -> bytes:
    """A PNG of an H x W (grey) or H x W x 3 (RGB) uint8 array, encoded by OpenCV's libpng with Paeth
    filtering and run-length deflate: about three times faster than Pillow's default encoder at about the
    same size; libvips' encoder is faster only at larger sizes (docs/benchmarks.md)."""
    import cv2

    if pixels.dtype != np.uint8 or not (pixels.ndim == 2 or (pixels.ndim == 3 and pixels.shape[2] == 3)):
        raise ValueError(f"an H x W or H x W x 3 uint8 array is expected, not {pixels.shape} {pixels.dtype}")
    bands = pixels if pixels.ndim == 2 else cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    options = [
        cv2.IMWRITE_PNG_FILTER,
        cv2.IMWRITE_PNG_FILTER_PAETH,
        cv2.IMWRITE_PNG_STRATEGY,
        cv2.IMWRITE_PNG_STRATEGY_RLE,
    ]
    ok, encoded = cv2.imencode(".png", bands, options)
    if not ok:
        raise ValueError(f"OpenCV could not encode a {pixels.shape[1]}x{pixels.shape[0]} image as PNG")
    return encoded.tobytes()


def png_bytes(image: Image.Image) -> bytes:
    """A PNG of an ``L`` or ``RGB`` image (``encoded_png``), in the image's mode."""
    if image.mode not in ("L", "RGB"):
        raise ValueError(f"an L or RGB image is expected, not {image.mode}")
    return encoded_png(np.asarray(image))
