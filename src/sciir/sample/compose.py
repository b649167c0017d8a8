"""Lay panels out on one white figure: a grid of cells separated by clean white gutters.

Each panel is first padded to a size curation accepts as a panel (short side at least
200 px, aspect ratio well inside [0.4, 2.5]), then centred in its grid cell, so any two
panels are at least one gutter apart and the gutters hold no ink.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from sciir.sample.drawing import WHITE

# Where a panel lies in the figure: x0, y0, x1, y1 (x1 and y1 exclusive).
PanelBounds = tuple[int, int, int, int]

MIN_PANEL_SIDE = 200
# Padding targets a band inside the accepted [0.4, 2.5] so rounding never crosses it.
PANEL_ASPECT_BAND = (0.5, 2.0)
MIN_FIGURE_WIDTH = 500
MAX_FIGURE_WIDTH = 1800
FIGURE_MARGIN = 24
GUTTER_CHOICES = (32, 40, 48)
MAX_GRID_ROWS = 3


@dataclass(frozen=True)
class GridLayout:
    """Cell sizes of a grid: one width per column, one height per row."""

    columns: int
    column_widths: tuple[int, ...]
    row_heights: tuple[int, ...]
    gutter: int
    margin: int

    @property
    def width(self) -> int:
        return sum(self.column_widths) + self.gutter * (self.columns - 1) + 2 * self.margin

    @property
    def height(self) -> int:
        return sum(self.row_heights) + self.gutter * (len(self.row_heights) - 1) + 2 * self.margin


def pad_to(image: Image.Image, width: int, height: int) -> Image.Image:
    """Centre ``image`` on a white canvas of at least ``width`` x ``height``."""
    canvas = Image.new("RGB", (max(width, image.width), max(height, image.height)), WHITE)
    canvas.paste(image, ((canvas.width - image.width) // 2, (canvas.height - image.height) // 2))
    return canvas


def fit_panel(image: Image.Image) -> Image.Image:
    """Pad a panel with white up to the minimum side and into the accepted aspect band."""
    low, high = PANEL_ASPECT_BAND
    width, height = max(image.width, MIN_PANEL_SIDE), max(image.height, MIN_PANEL_SIDE)
    if width / height > high:
        height = math.ceil(width / high)
    if width / height < low:
        width = math.ceil(height * low)
    return pad_to(image, width, height)


def column_options(n_panels: int) -> list[int]:
    """Column counts giving a grid of at most three rows and no empty row."""
    options = []
    for columns in range(1, n_panels + 1):
        rows = math.ceil(n_panels / columns)
        if rows <= MAX_GRID_ROWS and rows * columns - n_panels < columns:
            options.append(columns)
    return options


def grid_layout(
    panels: Sequence[Image.Image], columns: int, gutter: int, margin: int = FIGURE_MARGIN
) -> GridLayout:
    """Cell sizes when ``panels`` fill a grid of ``columns`` in reading order."""
    rows = math.ceil(len(panels) / columns)
    widths = tuple(max(p.width for p in panels[c::columns]) for c in range(columns))
    heights = tuple(max(p.height for p in panels[r * columns : (r + 1) * columns]) for r in range(rows))
    return GridLayout(columns, widths, heights, gutter, margin)


def compose_grid(panels: Sequence[Image.Image], layout: GridLayout) -> tuple[Image.Image, list[PanelBounds]]:
    """Paste panels row by row, each centred in its cell; returns the figure and each panel's box."""
    width = max(layout.width, MIN_FIGURE_WIDTH)
    canvas = Image.new("RGB", (width, layout.height), WHITE)
    left = (width - layout.width) // 2 + layout.margin
    boxes: list[PanelBounds] = []
    for index, panel in enumerate(panels):
        row, column = divmod(index, layout.columns)
        cell_x = left + sum(layout.column_widths[:column]) + layout.gutter * column
        cell_y = layout.margin + sum(layout.row_heights[:row]) + layout.gutter * row
        x0 = cell_x + (layout.column_widths[column] - panel.width) // 2
        y0 = cell_y + (layout.row_heights[row] - panel.height) // 2
        canvas.paste(panel, (x0, y0))
        boxes.append((x0, y0, x0 + panel.width, y0 + panel.height))
    return canvas, boxes


def layout_figure(panels: Sequence[Image.Image], rng: random.Random) -> tuple[Image.Image, list[PanelBounds]]:
    """Fit the panels, pick a gutter and a grid no wider than the maximum, and compose them."""
    fitted = [fit_panel(panel) for panel in panels]
    gutter = rng.choice(GUTTER_CHOICES)
    layouts = [grid_layout(fitted, columns, gutter) for columns in column_options(len(fitted))]
    fitting = [layout for layout in layouts if layout.width <= MAX_FIGURE_WIDTH]
    if not fitting:
        widths = [layout.width for layout in layouts]
        raise ValueError(f"no grid of {len(fitted)} panels fits {MAX_FIGURE_WIDTH} px (widths {widths})")
    return compose_grid(fitted, rng.choice(fitting))
