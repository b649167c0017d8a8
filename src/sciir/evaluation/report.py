"""The HTML report of an evaluation, written as a folder (jinja2 templates shipped in ``sciir/evaluation/templates``).

The summary page (``index.html``) stays small whatever the benchmark's size: the leaderboard with
bootstrap intervals, coverage, the breakdowns, a models x groups heatmap, the images that were missing,
and one link per model with its counts; a table may have a plot beside it (a PNG file in ``plots/``).
Each model's page (``models/<model>.html``) links back to the summary and to each plot, and shows, per
sample, the image's thumbnail (a PNG file in ``thumbnails/``, loaded lazily by the browser) beside its
checklist: failed checks carry the class ``fail``, abstained or failed questions the class
``unjudged`` with their reason, and each row the judge's evidence and reasoning. A small script marks
each image of a page ``data-loaded`` once the browser has decoded it.

A thumbnail (``sciir.evaluation.thumbnails``) is named by the sha256 of its source image and its size,
so the folder dataset (``sciir.catalog.report_dataset``) keeps the thumbnails already written and makes
only those of new images. A model page is rendered when the dataset writes it, from that model's views
alone (``sciir.evaluation.report_views``), so the report's memory does not grow with the number of models.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import PurePosixPath
from typing import Any, cast

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from sciir.evaluation.comparison_text import rank_words
from sciir.evaluation.plots import Plot
from sciir.evaluation.report_views import ImageViews, ModelPage, model_page
from sciir.evaluation.scoring import breakdown_table
from sciir.evaluation.tracks import CATEGORIES, FINAL, SCORE_CATEGORIES
from sciir.runs.results_folder import SAMPLE_BENCHMARK

SUMMARY_PAGE = "index.html"


@dataclass(frozen=True)
class ReportFolder:
    """A report as files by path relative to the folder, ``/``-separated (written by
    ``sciir.catalog.report_dataset``): ``pages`` (HTML text), ``thumbnails`` (a maker of each file's
    bytes, called only for a file not written yet) and ``plots`` (PNG bytes, written on every save)."""

    pages: Mapping[str, str]
    thumbnails: Mapping[str, Callable[[], bytes]]
    plots: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Table:
    """A table ready to print: a title, column names, rows of display strings and the plot shown beside it."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    plot: Plot | None = None


def format_cell(value: Any) -> str:
    """Display text of a table cell: fractions with three decimals, missing values as n/a."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def table_from_frame(title: str, frame: pd.DataFrame) -> Table:
    """A display table from a data frame (index dropped)."""
    rows = [[format_cell(value) for value in record] for record in frame.itertuples(index=False)]
    return Table(title=title, columns=[str(column) for column in frame.columns], rows=rows)


def interval_text(score: Any, low: Any, high: Any) -> str:
    """A score with its interval, e.g. ``0.833 [0.708, 0.958]``; n/a when there is no score."""
    if pd.isna(score):
        return "n/a"
    if pd.isna(low) or pd.isna(high):
        return format_cell(float(score))
    return f"{score:.3f} [{low:.3f}, {high:.3f}]"


def leaderboard_table(title: str, board: pd.DataFrame) -> Table:
    """One rule's leaderboard: the rank with its bootstrap interval and the models the paired test does
    not tell apart from it (when the board has them), each track's score with its interval and the
    number of samples it is over (``n=``), then coverage, role (references are never ranked) and sample
    count."""
    frame = pd.DataFrame({"model": board["model"]})
    if "rank_lo" in board:
        ranks = zip(board["rank"], board["rank_lo"], board["rank_hi"], strict=True)
        frame.insert(0, "rank [interval]", [rank_words(*rank) for rank in ranks])
        frame["not told apart from"] = board["not_separated_from"].fillna("")
    for track in SCORE_CATEGORIES:
        cells = zip(
            board[track], board[f"{track}_lo"], board[f"{track}_hi"], board[f"{track}_n"], strict=True
        )
        frame[track] = [f"{interval_text(score, low, high)} n={int(n)}" for score, low, high, n in cells]
    frame["coverage"] = board["coverage"]
    frame["role"] = board["role"]
    frame["n_samples"] = board["n_samples"]
    frame["checklist_defects"] = board["checklist_defects"]
    return table_from_frame(title, frame)


def coverage_table(title: str, board: pd.DataFrame) -> Table:
    """Coverage (judged / all questions) per model, overall and per category."""
    columns = {"coverage": FINAL} | {f"coverage_{category}": category for category in CATEGORIES}
    return table_from_frame(title, board[["model", *columns]].rename(columns=columns))


Interval = tuple[float, float, float]  # score, low, high


def _breakdown_cells(
    scores: pd.DataFrame, breakdown: str
) -> tuple[list[str], list[tuple[str, list[Interval]]]]:
    """The groups (or settings) in name order, and per model (score, low, high) for each of them."""
    tables = [breakdown_table(scores, breakdown, column) for column in ("score", "ci_low", "ci_high")]
    values = [column for column in tables[0].columns if column != "model"]
    rows = [
        (str(model), [_cell_interval(tables, index, value) for value in values])
        for index, model in enumerate(tables[0]["model"])
    ]
    return values, rows


def _cell_interval(tables: list[pd.DataFrame], index: int, value: str) -> Interval:
    """(score, low, high): the cell at ``index``, ``value`` of each of the three tables (a number, which
    pandas-stubs types as any scalar)."""
    score, low, high = (float(cast(float, table.at[index, value])) for table in tables)
    return score, low, high


def breakdown_intervals(title: str, scores: pd.DataFrame, breakdown: str) -> Table:
    """Scores with intervals per model (rows) and group or setting (columns)."""
    values, rows = _breakdown_cells(scores, breakdown)
    cells = [[model, *(interval_text(*cell) for cell in cells)] for model, cells in rows]
    return Table(title=title, columns=["model", *values], rows=cells)


@dataclass(frozen=True)
class HeatCell:
    """One heatmap cell: its text, background colour and hover title."""

    text: str
    colour: str
    title: str


@dataclass(frozen=True)
class Heatmap:
    """A models x values table whose cells are coloured by score (0 red, 1 green, grey when n/a)."""

    title: str
    columns: list[str]
    rows: list[tuple[str, list[HeatCell]]]


def heat_colour(value: float) -> str:
    """Background for a score in [0, 1]: from light red (0) through light yellow to light green (1)."""
    if math.isnan(value):
        return "#eeeeee"
    value = min(max(value, 0.0), 1.0)
    red = 249 if value < 0.5 else round(249 - (value - 0.5) * 2 * (249 - 200))
    green = round(200 + min(value, 0.5) * 2 * (240 - 200))
    return f"#{red:02x}{green:02x}c8"


def heatmap(title: str, scores: pd.DataFrame, breakdown: str) -> Heatmap:
    """A heatmap of final scores per model and group (or setting), intervals in the hover titles."""
    values, rows = _breakdown_cells(scores, breakdown)
    cells = [
        (
            model,
            [
                HeatCell(format_cell(score), heat_colour(score), interval_text(score, low, high))
                for score, low, high in intervals
            ],
        )
        for model, intervals in rows
    ]
    return Heatmap(title=title, columns=values, rows=cells)


@dataclass(frozen=True)
class MissingImages:
    """One model's (model, sample) pairs that had no usable image, each with why."""

    model: str
    items: list[tuple[str, str]]


def missing_images(unavailable: Mapping[str, str]) -> list[MissingImages]:
    """Per model, in name order, the samples without a usable image and the reason for each."""
    by_model: dict[str, list[tuple[str, str]]] = {}
    for image_id, reason in sorted(unavailable.items()):
        model, sample_id = image_id.rsplit("/", 1)
        by_model.setdefault(model, []).append((sample_id, reason))
    return [MissingImages(model, items) for model, items in by_model.items()]


def _to_root(path: str) -> str:
    """The relative prefix from the page at ``path`` back to the report folder (``../`` for models/x.html)."""
    return "../" * len(PurePosixPath(path).parent.parts)


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("sciir.evaluation", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


DEFAULT_TITLE = "SciIR-Bench evaluation report"


def report_title(benchmark: str) -> str:
    """The report's title: SciIR-Bench's own, or one naming the benchmark evaluated."""
    return DEFAULT_TITLE if benchmark == SAMPLE_BENCHMARK else f"{benchmark}: evaluation report"


class RenderedPages(Mapping[str, str]):
    """A report's pages by path, each rendered when it is read and not kept: the folder dataset writes
    them one at a time, so a report of 8,000 images never holds every page's text (nor every model's
    views) at once."""

    def __init__(self, renderers: Mapping[str, Callable[[], str]]) -> None:
        self._renderers = dict(renderers)

    def __getitem__(self, path: str) -> str:
        return self._renderers[path]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._renderers)

    def __len__(self) -> int:
        return len(self._renderers)


def render_report(
    tables: Sequence[Any],
    views: ImageViews,
    meta: Mapping[str, str],
    heatmaps: Sequence[Heatmap] = (),
    missing: Sequence[MissingImages] = (),
    title: str = DEFAULT_TITLE,
) -> ReportFolder:
    """The report's files: the summary page (tables with their plots, or comparison matrices (any object
    with ``is_matrix``: ``sciir.evaluation.report_comparisons``), heatmaps, missing images, run facts,
    links to the model pages), one page per model with its image views and links back to the summary and
    its plots (rendered when read), and the thumbnails and plots those pages show."""
    pages = [model_page(model, views.of_model(model)) for model in views.models]
    plots = [table.plot for table in tables if table.plot is not None]
    environment = _environment()
    summary = environment.get_template("report_summary.html").render(
        tables=tables,
        heatmaps=heatmaps,
        missing=missing,
        pages=pages,
        page_of={page.model: page.path for page in pages},
        meta=meta,
        title=title,
    )
    model_template = environment.get_template("report_model.html")

    def model_html(page: ModelPage) -> str:
        return model_template.render(
            page=page,
            views=views.of_model(page.model),
            plots=plots,
            meta=meta,
            root=_to_root(page.path),
            title=title,
        )

    renderers = {SUMMARY_PAGE: lambda: summary} | {page.path: partial(model_html, page) for page in pages}
    return ReportFolder(RenderedPages(renderers), views.thumbnails(), {plot.path: plot.png for plot in plots})
