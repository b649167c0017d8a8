"""Grid composition: panel sizes, reading order and clean white gutters."""

from __future__ import annotations

import random

import numpy as np
import pytest
from PIL import Image

from sciir.sample.compose import (
    MIN_FIGURE_WIDTH,
    column_options,
    compose_grid,
    fit_panel,
    grid_layout,
    layout_figure,
)


def _panel(width: int, height: int, grey: int = 0) -> Image.Image:
    """A panel that is ink all over, so any ink outside its box is a layout error."""
    return Image.new("RGB", (width, height), (grey, grey, grey))


@pytest.mark.parametrize(
    ("size", "expected"),
    [((120, 90), (200, 200)), ((900, 200), (900, 450)), ((210, 800), (400, 800)), ((400, 300), (400, 300))],
)
def test_fit_panel_pads_to_minimum_side_and_aspect_band(
    size: tuple[int, int], expected: tuple[int, int]
) -> None:
    fitted = fit_panel(_panel(*size))
    assert fitted.size == expected
    ink = np.asarray(fitted.convert("L")) < 128
    assert ink.sum() == size[0] * size[1]  # the drawing is kept whole, only white is added


def test_column_options_allow_no_empty_row_and_at_most_three_rows() -> None:
    assert column_options(1) == [1]
    assert column_options(2) == [1, 2]
    assert column_options(3) == [1, 2, 3]
    assert column_options(4) == [2, 3, 4]


def test_compose_grid_places_panels_row_major_with_white_gutters() -> None:
    panels = [_panel(300, 200), _panel(250, 260), _panel(320, 210)]
    figure, boxes = compose_grid(panels, grid_layout(panels, columns=2, gutter=40))
    assert figure.width >= MIN_FIGURE_WIDTH
    assert [(b[2] - b[0], b[3] - b[1]) for b in boxes] == [p.size for p in panels]
    first, second, third = boxes
    assert second[0] - first[2] >= 40  # same row, to the right
    assert third[1] - max(first[3], second[3]) >= 40  # next row
    outside = np.ones((figure.height, figure.width), dtype=bool)
    for x0, y0, x1, y1 in boxes:
        outside[y0:y1, x0:x1] = False
    assert (np.asarray(figure.convert("L"))[outside] == 255).all()


def test_layout_figure_refuses_panels_too_wide_for_any_grid() -> None:
    with pytest.raises(ValueError, match="no grid of 2 panels fits"):
        layout_figure([_panel(1900, 1000), _panel(1900, 1000)], random.Random(0))
