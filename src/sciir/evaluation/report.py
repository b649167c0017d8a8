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
only those of new images.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape

from sciir.evaluation.generated_images import ImageLoaders
from sciir.evaluation.plots import Plot
from sciir.evaluation.scoring import breakdown_table, rules_in
from sciir.evaluation.thumbnails import Thumbnail, thumbnail_or_note
from sciir.evaluation.tracks import CATEGORIES, FINAL, SCORE_CATEGORIES
from sciir.runs.results_folder import SAMPLE_BENCHMARK

CHECK_CLASS = {"yes": "pass", "no": "fail"}
MODEL_PAGES = "models"  # folder of the per-model pages
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


@dataclass(frozen=True)
class CheckView:
    """One checklist question of one image with the judge's answer."""

    question_id: str
    track: str
    constraint: str  # e.g. "relation, negative" from the question's kind and polarity, when known
    question: str
    expected_text: str | None
    verdict: str
    css_class: str
    evidence: str | None
    reasoning: str | None
    reason: str | None


@dataclass(frozen=True)
class ImageView:
    """One generated image (or why there is none), its category results and its checks."""

    model: str
    sample_id: str
    group: str
    setting: str
    prompt: str
    thumbnail: Thumbnail | None
    image_note: str | None
    # (track, pass / fail / unjudged, a note such as a checklist defect or "")
    results: list[tuple[str, str, str]] = field(default_factory=list)
    checks: list[CheckView] = field(default_factory=list)


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
    """One rule's leaderboard: each track's score with its interval and the number of samples it is
    over (``n=``), then coverage, role (references are never ranked) and sample count."""
    frame = pd.DataFrame({"model": board["model"]})
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
        (str(model), [tuple(float(table.at[index, value]) for table in tables) for value in values])
        for index, model in enumerate(tables[0]["model"])
    ]
    return values, rows


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


def _result_label(passed: Any) -> str:
    """pass / fail / unjudged for a nullable boolean."""
    if passed is None or passed is pd.NA:
        return "unjudged"
    return "pass" if passed else "fail"


def _defect_note(track: str, checklist_defect: bool) -> str:
    """Why a result is what it is when the checklist lacks questions for a labelled track."""
    if not checklist_defect:
        return ""
    return "a labelled track has no questions" if track == FINAL else "no questions (checklist defect)"


def _constraint(kind: Any, polarity: Any) -> str:
    """``relation, negative``: what a question checks, from its structured fields (empty when unknown)."""
    return ", ".join(str(value) for value in (kind, polarity) if isinstance(value, str) and value)


def _check_view(row: Any) -> CheckView:
    """A display row of one verdict joined with its question."""
    verdict = row.verdict if row.status == "judged" else row.status
    return CheckView(
        question_id=row.question_id,
        track=row.track,
        constraint=_constraint(getattr(row, "kind", None), getattr(row, "polarity", None)),
        question=row.question,
        expected_text=None if pd.isna(row.expected_text) else row.expected_text,
        verdict=verdict,
        css_class=CHECK_CLASS.get(row.verdict, "unjudged") if row.status == "judged" else "unjudged",
        evidence=None if pd.isna(row.evidence) else row.evidence,
        reasoning=None if pd.isna(row.reasoning) else row.reasoning,
        reason=None if pd.isna(row.reason) else row.reason,
    )


def image_views(
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    sample_scores: pd.DataFrame,
    benchmark: pd.DataFrame,
    images: ImageLoaders,
    unavailable: Mapping[str, str],
    thumbnail_px: int,
) -> list[ImageView]:
    """One view per (model, sample) that has verdicts, in model then sample order."""
    described = ["question", "expected_text", *(c for c in ("kind", "polarity") if c in checklists.columns)]
    checks = verdicts.drop(columns=["kind", "polarity"], errors="ignore").merge(
        checklists[["sample_id", "question_id", *described]],
        on=["sample_id", "question_id"],
        how="left",
    )
    if len(sample_scores):  # pass / fail are the same under every rule: show the primary rule's rows
        sample_scores = sample_scores[sample_scores["aggregation"] == rules_in(sample_scores)[0]]
    results = {key: group for key, group in sample_scores.groupby(["model", "sample_id"], sort=False)}
    samples = benchmark.set_index("sample_id")
    views = []
    for (model, sample_id), rows in checks.groupby(["model", "sample_id"], sort=True):
        image_id = f"{model}/{sample_id}"
        thumbnail, note = thumbnail_or_note(image_id, images, unavailable, thumbnail_px)
        scores = results.get((model, sample_id), sample_scores.iloc[0:0])
        sample = samples.loc[sample_id] if sample_id in samples.index else None
        views.append(
            ImageView(
                model=model,
                sample_id=sample_id,
                group="n/a" if sample is None else str(sample["group"]),
                setting="n/a" if sample is None else str(sample["setting"]),
                prompt="" if sample is None else str(sample["prompt"]),
                thumbnail=thumbnail,
                image_note=note,
                results=[
                    (r.track, _result_label(r.passed), _defect_note(r.track, r.checklist_defect))
                    for r in scores.itertuples(index=False)
                ],
                checks=[_check_view(row) for row in rows.itertuples(index=False)],
            )
        )
    return views


@dataclass(frozen=True)
class ModelPage:
    """One model's page: its path in the report folder and what its samples show at a glance."""

    model: str
    path: str
    n_samples: int
    n_images: int
    n_failed_checks: int
    n_unjudged_checks: int


def model_page_path(model: str) -> str:
    """``models/<model>.html``; a name that is not a plain file name (spaces, slashes, a leading dot) is
    made one and given a hash of the name, so two models never share a page."""
    safe = re.sub(r"^\.", "_", re.sub(r"[^A-Za-z0-9._-]", "_", model))
    if not model or safe != model:
        safe = f"{safe}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"
    return f"{MODEL_PAGES}/{safe}.html"


def model_page(model: str, views: Sequence[ImageView]) -> ModelPage:
    """The page of ``model`` showing ``views``, with its counts."""
    checks = [check for view in views for check in view.checks]
    return ModelPage(
        model=model,
        path=model_page_path(model),
        n_samples=len(views),
        n_images=sum(view.thumbnail is not None for view in views),
        n_failed_checks=sum(check.css_class == "fail" for check in checks),
        n_unjudged_checks=sum(check.css_class == "unjudged" for check in checks),
    )


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


def render_report(
    tables: Sequence[Table],
    views: Sequence[ImageView],
    meta: Mapping[str, str],
    heatmaps: Sequence[Heatmap] = (),
    missing: Sequence[MissingImages] = (),
    title: str = DEFAULT_TITLE,
) -> ReportFolder:
    """The report's files: the summary page (tables with their plots, heatmaps, missing images, run facts,
    links to the model pages), one page per model with its image views and links back to the summary and
    its plots, and the thumbnails and plots those pages show."""
    by_model: dict[str, list[ImageView]] = {}
    for view in views:
        by_model.setdefault(view.model, []).append(view)
    pages = [model_page(model, model_views) for model, model_views in by_model.items()]
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
    files = {SUMMARY_PAGE: summary} | {
        page.path: model_template.render(
            page=page,
            views=by_model[page.model],
            plots=plots,
            meta=meta,
            root=_to_root(page.path),
            title=title,
        )
        for page in pages
    }
    thumbnails = {view.thumbnail.path: view.thumbnail.make for view in views if view.thumbnail is not None}
    return ReportFolder(files, thumbnails, {plot.path: plot.png for plot in plots})
