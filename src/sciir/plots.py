"""Figures for the evaluation and the human-correlation study.

Figures are built with ``matplotlib.figure.Figure`` directly (no pyplot state), so they render
headless and are saved by the catalog's MatplotlibDataset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_track_pass_rates(board: pd.DataFrame, tracks: Sequence[str]) -> Figure:
    """Grouped bars: per model, one bar per track's pass rate; a track with nothing judged reads n/a."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(max(6.0, 1.4 * len(board) * len(tracks) / 3), 4.2))
    axes = figure.subplots()
    positions = np.arange(len(board))
    width = 0.8 / max(len(tracks), 1)
    for offset, track in enumerate(tracks):
        rates = board[track].astype(float).to_numpy()
        x = positions + (offset - (len(tracks) - 1) / 2) * width
        axes.bar(x, np.nan_to_num(rates), width, label=track)
        for xi, rate in zip(x, rates, strict=True):
            if math.isnan(rate):
                axes.text(xi, 0.01, "n/a", ha="center", va="bottom", rotation=90, fontsize=7)
    axes.set_xticks(positions, list(board["model"]), rotation=20, ha="right")
    axes.set_ylim(0, 1.05)
    axes.set_ylabel("pass rate (strict veto)")
    axes.set_title("SciIR-Bench pass rate per track")
    axes.legend(ncols=min(len(tracks), 5), fontsize=8, loc="upper right")
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
