"""Panel splitting (SciIR paper, B.1): a figure cut into content boxes along background gutters.

Panels are found by a recursive XY-cut: the background is the dominant edge colour (within a
tolerance, sciir.images.edge_colour), and a figure is cut along full-width or full-height background
gutters at least ``min_gutter_px`` wide, rows first, so panels come out in reading (row-major) order.
Parts thinner than ``min_part_px`` across a cut (a title row, a column of axis labels) stay with their
neighbour, so a plot keeps its title and labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict

from sciir.images.edge_colour import foreground_mask


@dataclass(frozen=True)
class Box:
    """A pixel rectangle; ``x1`` and ``y1`` are exclusive."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def width(self) -> int:
        return self.x1 - self.x0

    @property
    def height(self) -> int:
        return self.y1 - self.y0


class SplitSettings(BaseModel):
    """How figures are cut into panels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # A pixel is background when every channel is within this distance of the dominant edge colour.
    background_tolerance: int = 24
    min_gutter_px: int = 12
    # Parts thinner than this across a cut (titles, axis labels, legends) are joined to a neighbour
    # (0 keeps every cut).
    min_part_px: int = 96


def _trim(foreground: np.ndarray, box: Box) -> Box | None:
    """The smallest box holding all foreground inside ``box``; None when it holds none."""
    region = foreground[box.y0 : box.y1, box.x0 : box.x1]
    rows = np.flatnonzero(region.any(axis=1))
    cols = np.flatnonzero(region.any(axis=0))
    if rows.size == 0:
        return None
    return Box(
        box.x0 + int(cols[0]), box.y0 + int(rows[0]), box.x0 + int(cols[-1]) + 1, box.y0 + int(rows[-1]) + 1
    )


def _merge_thin_segments(segments: list[tuple[int, int]], min_part_px: int) -> list[tuple[int, int]]:
    """Join each segment thinner than ``min_part_px`` to the neighbour across the narrower gutter.

    Keeps panel letters, axis titles and legends with the panel they label instead of cutting
    them off as fragments.
    """
    segments = list(segments)
    while len(segments) > 1:
        extents = [end - start for start, end in segments]
        thinnest = int(np.argmin(extents))
        if extents[thinnest] >= min_part_px:
            break
        gap_before = segments[thinnest][0] - segments[thinnest - 1][1] if thinnest > 0 else None
        gap_after = (
            segments[thinnest + 1][0] - segments[thinnest][1] if thinnest + 1 < len(segments) else None
        )
        merge_before = gap_after is None or (gap_before is not None and gap_before <= gap_after)
        first = thinnest - 1 if merge_before else thinnest
        segments[first : first + 2] = [(segments[first][0], segments[first + 1][1])]
    return segments


def _gutter_segments(has_ink: np.ndarray, min_gutter_px: int, min_part_px: int) -> list[tuple[int, int]]:
    """Split a 1-D ink profile (ink at both ends) at blank runs of at least ``min_gutter_px``."""
    padded = np.concatenate([[True], has_ink, [True]])
    changes = np.flatnonzero(np.diff(padded.astype(np.int8)))
    blank_starts, blank_ends = changes[0::2], changes[1::2]
    segments, start = [], 0
    for blank_start, blank_end in zip(blank_starts, blank_ends, strict=True):
        if blank_end - blank_start >= min_gutter_px:
            segments.append((start, int(blank_start)))
            start = int(blank_end)
    segments.append((start, has_ink.size))
    return _merge_thin_segments(segments, min_part_px)


def _split(foreground: np.ndarray, box: Box, min_gutter_px: int, min_part_px: int) -> list[Box]:
    """Cut a trimmed box along horizontal gutters, else vertical ones; one box when there is none."""
    region = foreground[box.y0 : box.y1, box.x0 : box.x1]
    # region is 2-D: along one axis, any() is an array (NumPy types it a scalar too, for 1-D input)
    row_segments = _gutter_segments(cast(np.ndarray, region.any(axis=1)), min_gutter_px, min_part_px)
    if len(row_segments) > 1:
        return [Box(box.x0, box.y0 + top, box.x1, box.y0 + bottom) for top, bottom in row_segments]
    col_segments = _gutter_segments(cast(np.ndarray, region.any(axis=0)), min_gutter_px, min_part_px)
    return [Box(box.x0 + left, box.y0, box.x0 + right, box.y1) for left, right in col_segments]


def xy_cut(foreground: np.ndarray, min_gutter_px: int, min_part_px: int = 0) -> list[Box]:
    """Recursive XY-cut of a foreground mask into content boxes, in reading order."""
    panels: list[Box] = []
    pending = [Box(0, 0, foreground.shape[1], foreground.shape[0])]
    while pending:
        trimmed = _trim(foreground, pending.pop())
        if trimmed is None:
            continue
        parts = _split(foreground, trimmed, min_gutter_px, min_part_px)
        if len(parts) == 1:
            panels.append(trimmed)
        else:
            # Reversed so the first part is processed next: a depth-first walk keeps reading order.
            pending.extend(reversed(parts))
    return panels


def split_panels(image: Image.Image, settings: SplitSettings) -> list[Box]:
    """Panel boxes of a figure in row-major order; one box for a single-panel figure, none for a blank one."""
    rgb = np.asarray(image.convert("RGB"))
    mask = foreground_mask(rgb, settings.background_tolerance)
    return xy_cut(mask, settings.min_gutter_px, settings.min_part_px)
