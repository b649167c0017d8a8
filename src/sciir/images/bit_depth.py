"""Samples deeper than 8 bits made 8-bit, scaled by their real value range (SciIR paper, B.2).

Integers are scaled by the smallest bit depth that holds their maximum (12-bit data in a 16-bit
container is not left 16 times too dark); floats in [0, 1] or [0, 255] are taken as such and any other
range is stretched from its minimum to its maximum. Alpha uses its type's full range.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

_DEEP_GREY_MODES = frozenset({"I", "I;16", "I;16L", "I;16B", "I;16N", "F"})
# Bit depths integer samples are assumed to have: the smallest that holds the image's maximum.
_INTEGER_DEPTHS = (8, 10, 12, 14, 16)


def scale_to_eight_bit(values: np.ndarray) -> np.ndarray:
    """Samples of any depth as uint8, scaled by their real value range (see the module docstring)."""
    if np.issubdtype(values.dtype, np.floating):
        return _float_to_eight_bit(values)
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= 2 ** _INTEGER_DEPTHS[-1]:
        return _stretched(values.astype(np.float32), low, high)
    depth = next(bits for bits in _INTEGER_DEPTHS if high < 2**bits)
    # A lookup table: one pass, no float copy of the whole image.
    table = np.rint(np.arange(2**depth) * (255.0 / (2**depth - 1))).astype(np.uint8)
    return table[values]


def _float_to_eight_bit(values: np.ndarray) -> np.ndarray:
    values = np.nan_to_num(values.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    low, high = float(values.min()), float(values.max())
    if low >= 0.0 and high <= 1.0:
        return np.rint(values * 255.0).astype(np.uint8)
    if low >= 0.0 and high <= 255.0:
        return np.rint(values).astype(np.uint8)
    return _stretched(values, low, high)


def _stretched(values: np.ndarray, low: float, high: float) -> np.ndarray:
    scale = 255.0 / (high - low) if high > low else 0.0
    return np.clip(np.rint((values - low) * scale), 0, 255).astype(np.uint8)


def _alpha_to_eight_bit(alpha: np.ndarray) -> np.ndarray:
    """Alpha uses its type's full range (0 transparent, maximum opaque)."""
    if np.issubdtype(alpha.dtype, np.floating):
        return np.rint(np.clip(np.nan_to_num(alpha), 0.0, 1.0) * 255.0).astype(np.uint8)
    return np.rint(alpha.astype(np.float32) * (255.0 / np.iinfo(alpha.dtype).max)).astype(np.uint8)


def eight_bit(pixels: Image.Image | np.ndarray) -> Image.Image:
    """8-bit samples: deep grey modes and full-depth RGB(A) arrays scaled; other images as they are."""
    if isinstance(pixels, np.ndarray):
        colour = scale_to_eight_bit(pixels[..., :3])
        if pixels.shape[2] == 4:
            colour = np.dstack([colour, _alpha_to_eight_bit(pixels[..., 3])])
        return Image.fromarray(colour)
    if pixels.mode in _DEEP_GREY_MODES:
        return Image.fromarray(scale_to_eight_bit(np.asarray(pixels)))
    return pixels
