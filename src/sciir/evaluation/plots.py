"""Figures for the evaluation and the human-correlation study.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot state), so they render
headless and are saved by the catalog's MatplotlibDataset; the report shows the same figures as
:class:`Plot` files of its own folder (``figure_png`` writes them as that dataset does).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PLOTS = "plots"  # the report folder's folder of plots
# The save_args of the plots' MatplotlibDataset entries (conf/base/catalog*.yml): the report's copies match.
PNG_SAVE_ARGS: dict[str, Any] = {"dpi": 110, "bbox_inches": "tight"}


@dataclass(frozen=True)
class Plot:
    """A figure as a file of the report folder: its name (the file ``plots/<name>.png``, the anchor
    ``plot-<name>`` on the summary page), its caption and its PNG bytes."""

    name: str
    caption: str
    png: bytes

    @property
    def path(self) -> str:
        return f"{PLOTS}/{self.name}.png"

    @property
    def anchor(self) -> str:
        return f"plot-{self.name}"


def figure_png(figure: Figure) -> bytes:
    """The figure as PNG bytes, drawn as the catalog's MatplotlibDataset saves it (``PNG_SAVE_ARGS``)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", **PNG_SAVE_ARGS)
    return buffer.getvalue()


def _whiskers(board: pd.DataFrame, track: str, rates: np.ndarray) -> np.ndarray | None:
    """Error-bar lengths (below, above) from ``<track>_lo`` / ``<track>_hi``; None without intervals."""
    if f"{track}_lo" not in board or f"{track}_hi" not in board:
        return None
    low = board[f"{track}_lo"].astype(float).to_numpy()
    high = board[f"{track}_hi"].astype(float).to_numpy()
    return np.nan_to_num(np.vstack([rates - low, high - rates]))


def plot_track_pass_rates(board: pd.DataFrame, tracks: Sequence[str], ylabel: str = "pass rate") -> Figure:
    """Grouped bars: per model, one bar per track's score with its interval as a whisker (when the
    board has ``<track>_lo`` / ``<track>_hi``); a track with nothing scored reads n/a."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(6.0, 1.4 * len(board) * len(tracks) / 3), 4.2))
    axes = figure.subplots()
    positions = np.arange(len(board))
    width = 0.8 / max(len(tracks), 1)
    for offset, track in enumerate(tracks):
        rates = board[track].astype(float).to_numpy()
        x = positions + (offset - (len(tracks) - 1) / 2) * width
        axes.bar(x, np.nan_to_num(rates), width, label=track, yerr=_whiskers(board, track, rates), capsize=2)
        for xi, rate in zip(x, rates, strict=True):
            if math.isnan(rate):
                axes.text(xi, 0.01, "n/a", ha="center", va="bottom", rotation=90, fontsize=7)
    axes.set_xticks(positions, list(board["model"]), rotation=20, ha="right")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel(ylabel)
    axes.set_title("SciIR-Bench score per track (whiskers: bootstrap 95% interval)")
    axes.legend(ncols=min(len(tracks), 5), fontsize=8, loc="upper right")
    figure.tight_layout()
    return figure


def plot_group_heatmap(table: pd.DataFrame, title: str) -> Figure:
    """Heatmap of a models x groups table (column ``model`` plus one column per group), values 0-1
    written in each cell; a cell with nothing scored is blank and reads n/a."""
    from matplotlib.figure import Figure

    groups = [column for column in table.columns if column != "model"]
    values = table[groups].astype(float).to_numpy()
    figure = Figure(figsize=(max(4.5, 1.5 * len(groups) + 2), max(2.2, 0.5 * len(table) + 1.4)))
    axes = figure.subplots()
    axes.set_title(title)
    if values.size == 0:  # an AIBench-only run scores no SciIR group: say so rather than draw empty axes
        axes.set_axis_off()
        axes.text(0.5, 0.5, "nothing scored per group", ha="center", va="center", transform=axes.transAxes)
        return figure
    image = axes.imshow(np.ma.masked_invalid(values), vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for (row, column), value in np.ndenumerate(values):
        label, colour = (
            ("n/a", "black") if math.isnan(value) else (f"{value:.2f}", "white" if value < 0.6 else "black")
        )
        axes.text(column, row, label, ha="center", va="center", fontsize=8, color=colour)
    axes.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
    axes.set_yticks(range(len(table)), list(table["model"]))
    figure.colorbar(image, ax=axes)
    figure.tight_layout()
    return figure


def plot_metric_scatter(
    table: pd.DataFrame, metrics: Sequence[str], rating: str, rating_label: str
) -> Figure:
    """One scatter per metric against the ``rating`` column, with the number of complete pairs in each title."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4.0 * max(len(metrics), 1), 3.8))
    axes_row = np.atleast_1d(figure.subplots(1, max(len(metrics), 1), squeeze=False)[0])
    for axes, metric in zip(axes_row, metrics, strict=False):
        pairs = table[[metric, rating]].astype(float).dropna()
        axes.scatter(pairs[metric], pairs[rating], alpha=0.6, s=18)
        axes.set_xlabel(metric)
        axes.set_ylabel(rating_label)
        axes.set_title(f"{metric} (n={len(pairs)})", fontsize=9)
    figure.tight_layout()
    return figure
