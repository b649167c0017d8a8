"""Near-duplicate panels by perceptual hash (pHash: the signs of an image's low DCT frequencies).

A resized or recompressed copy of a panel keeps its low frequencies, so its 64-bit hash differs from
the original's in a few bits; a different figure's differs in about half. Hashes are compared through
bands: with a distance limit of d, the 64 bits are cut into d + 1 bands, and two hashes within d bits
agree exactly on at least one band (pigeonhole), so only hashes sharing a band are compared: no
all-pairs comparison at any scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise

import numpy as np
from PIL import Image

_HASH_SIDE = 8
_SAMPLE_SIDE = 32


def phash(image: Image.Image) -> int:
    """A 64-bit perceptual hash: a 32x32 grey thumbnail's 8x8 lowest DCT frequencies against their median."""
    from scipy.fft import dctn

    grey = image.convert("L").resize((_SAMPLE_SIDE, _SAMPLE_SIDE), Image.Resampling.LANCZOS)
    low = dctn(np.asarray(grey, dtype=np.float64), norm="ortho")[:_HASH_SIDE, :_HASH_SIDE]
    bits = (low > np.median(low)).ravel()
    return int(sum(1 << index for index, bit in enumerate(bits) if bit))


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def _bands(value: int, count: int) -> list[tuple[int, int]]:
    """(band index, band bits) for ``count`` bands covering the 64 bits."""
    edges = np.linspace(0, 64, count + 1).astype(int)
    return [
        (index, (value >> int(lo)) & ((1 << int(hi - lo)) - 1))
        for index, (lo, hi) in enumerate(pairwise(edges))
    ]


class BandIndex:
    """Hashes indexed by band (see the module docstring): those within ``max_distance`` bits of a query
    are found without comparing all pairs."""

    def __init__(self, max_distance: int) -> None:
        if max_distance < 0 or max_distance > 31:
            raise ValueError(f"near-duplicate distance must be 0-31 bits, got {max_distance}")
        self.max_distance = max_distance
        self._buckets: dict[tuple[int, int], list[int]] = {}
        self._hashes: dict[int, int] = {}

    def add(self, index: int, value: int) -> None:
        self._hashes[index] = value
        for key in _bands(value, self.max_distance + 1):
            self._buckets.setdefault(key, []).append(index)

    def nearest(self, value: int) -> tuple[int, int] | None:
        """(index, distance) of the lowest-indexed hash within ``max_distance`` bits, or None."""
        keys = _bands(value, self.max_distance + 1)
        for other in sorted({other for key in keys for other in self._buckets.get(key, [])}):
            distance = hamming(value, self._hashes[other])
            if distance <= self.max_distance:
                return other, distance
        return None


def first_copies(hashes: Sequence[int | None], max_distance: int) -> list[tuple[int, int] | None]:
    """Per hash, (index of the earlier hash it nearly duplicates, distance), or None for a first copy.

    None hashes (panels not hashed) are never duplicates. The earliest kept original wins, so the
    outcome follows the input order.
    """
    index = BandIndex(max_distance)
    result: list[tuple[int, int] | None] = []
    for position, value in enumerate(hashes):
        match = None if value is None else index.nearest(value)
        result.append(match)
        if value is not None and match is None:
            index.add(position, value)
    return result


def copies_of(
    originals: Sequence[int | None], hashes: Sequence[int | None], max_distance: int
) -> list[tuple[int, int] | None]:
    """Per hash, (index of an original it nearly duplicates, distance), or None; None hashes match nothing."""
    index = BandIndex(max_distance)
    for position, value in enumerate(originals):
        if value is not None:
            index.add(position, value)
    return [None if value is None else index.nearest(value) for value in hashes]


def hex_hash(value: int) -> str:
    return f"{value:016x}"


def parse_hashes(values: Iterable[object]) -> list[int | None]:
    """Hex hashes from a table column (missing values stay None)."""
    return [int(value, 16) if isinstance(value, str) and value else None for value in values]
