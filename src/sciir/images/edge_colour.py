"""The colour of an image's border: the background a figure's panels are cut from (paper B.1) and the
padding a standardised image is centred on (paper B.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

# Edge pixels are binned by their top 4 bits per channel to find the dominant colour despite
# JPEG noise.
_EDGE_BIN_SHIFT = 4


@dataclass(frozen=True)
class EdgeColour:
    """Colour statistics of an image's one-pixel border."""

    dominant: tuple[int, int, int]
    dominant_share: float
    mean: tuple[int, int, int]


def edge_colour(rgb: np.ndarray, tolerance: int) -> EdgeColour:
    """Dominant and mean colour of the border of an H x W x 3 array; share counts pixels within tolerance."""
    return edge_colour_of(np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]), tolerance)


def border_pixels(image: Image.Image) -> np.ndarray:
    """The one-pixel border of an image as an N x 3 RGB array, read without converting the whole image."""
    width, height = image.size
    strips = [
        (0, 0, width, 1),
        (0, height - 1, width, height),
        (0, 0, 1, height),
        (width - 1, 0, width, height),
    ]
    return np.concatenate([np.asarray(image.crop(strip).convert("RGB")).reshape(-1, 3) for strip in strips])


def edge_colour_of(edges: np.ndarray, tolerance: int) -> EdgeColour:
    """Dominant and mean colour of N x 3 border pixels; share counts pixels within tolerance."""
    edges = edges.astype(np.int32)
    bins = edges >> _EDGE_BIN_SHIFT
    keys = (bins[:, 0] << 8) | (bins[:, 1] << 4) | bins[:, 2]
    values, counts = np.unique(keys, return_counts=True)
    in_mode_bin = keys == values[np.argmax(counts)]
    dominant = np.rint(edges[in_mode_bin].mean(axis=0)).astype(int)
    near_dominant = np.abs(edges - dominant).max(axis=1) <= tolerance
    mean = np.rint(edges.mean(axis=0)).astype(int)
    return EdgeColour(
        dominant=(int(dominant[0]), int(dominant[1]), int(dominant[2])),
        dominant_share=float(near_dominant.mean()),
        mean=(int(mean[0]), int(mean[1]), int(mean[2])),
    )


def foreground_mask(rgb: np.ndarray, tolerance: int) -> np.ndarray:
    """True where a pixel differs from the dominant edge colour by more than ``tolerance`` in any channel."""
    background = np.array(edge_colour(rgb, tolerance).dominant, dtype=np.int16)
    return np.abs(rgb.astype(np.int16) - background).max(axis=2) > tolerance


def padding_colour(edges: np.ndarray, tolerance: int, dominant_share: float) -> tuple[int, int, int]:
    """Dominant edge colour when it covers more than ``dominant_share`` of the border, else the mean edge RGB."""
    colours = edge_colour_of(edges, tolerance)
    return colours.dominant if colours.dominant_share > dominant_share else colours.mean
