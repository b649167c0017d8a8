"""A self-contained HTML report of an evaluation (jinja2 template shipped in ``sciir/templates``).

It shows the leaderboard and pass-rate breakdowns, then per model and sample the image (embedded
as a downscaled base64 PNG) beside its checklist: failed checks carry the class ``fail``,
abstained or failed questions the class ``unjudged`` with their reason, and each row the judge's
evidence and reasoning.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from PIL import Image

from sciir.judging import image_png_bytes

CHECK_CLASS = {"yes": "pass", "no": "fail"}


@dataclass(frozen=True)
class Table:
    """A table ready to print: a title, column names and rows of display strings."""

    title: str
    columns: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class CheckView:
    """One checklist question of one image with the judge's answer."""

    question_id: str
    track: str
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
    image_uri: str | None
    image_note: str | None
    results: list[tuple[str, str]] = field(default_factory=list)  # (track, pass / fail / unjudged)
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


def thumbnail_data_uri(image: Image.Image, size: int) -> str:
    """The image downscaled to fit ``size`` px, as a base64 PNG data URI."""
    small = image.convert("RGB")
    small.thumbnail((size, size))
    return "data:image/png;base64," + base64.b64encode(image_png_bytes(small)).decode("ascii")


def _image_or_note(
    image_id: str, images: Mapping[str, Callable[[], Image.Image]], unavailable: Mapping[str, str], size: int
) -> tuple[str | None, str | None]:
    """(data URI, None) for a judged image; (None, why not) when there was no usable image."""
    if image_id in unavailable:
        return None, unavailable[image_id]
    if image_id not in images:
        return None, f"no image file for {image_id}"
    try:
        return thumbnail_data_uri(images[image_id](), size), None
    except (OSError, ValueError) as exc:
        return None, f"image {image_id} could not be read for the report: {exc}"


def _result_label(passed: Any) -> str:
    """pass / fail / unjudged for a nullable boolean."""
    if passed is None or passed is pd.NA:
        return "unjudged"
    return "pass" if passed else "fail"


def _check_view(row: Any) -> CheckView:
    """A display row of one verdict joined with its question."""
    verdict = row.verdict if row.status == "judged" else row.status
    return CheckView(
        question_id=row.question_id,
        track=row.track,
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
    images: Mapping[str, Callable[[], Image.Image]],
    unavailable: Mapping[str, str],
    thumbnail_px: int,
) -> list[ImageView]:
    """One view per (model, sample) that has verdicts, in model then sample order."""
    checks = verdicts.merge(
        checklists[["sample_id", "question_id", "question", "expected_text"]],
        on=["sample_id", "question_id"],
        how="left",
    )
    results = {key: group for key, group in sample_scores.groupby(["model", "sample_id"], sort=False)}
    samples = benchmark.set_index("sample_id")
    views = []
    for (model, sample_id), rows in checks.groupby(["model", "sample_id"], sort=True):
        image_id = f"{model}/{sample_id}"
        uri, note = _image_or_note(image_id, images, unavailable, thumbnail_px)
        scores = results.get((model, sample_id), sample_scores.iloc[0:0])
        sample = samples.loc[sample_id] if sample_id in samples.index else None
        views.append(
            ImageView(
                model=model,
                sample_id=sample_id,
                group="n/a" if sample is None else str(sample["group"]),
                setting="n/a" if sample is None else str(sample["setting"]),
                prompt="" if sample is None else str(sample["prompt"]),
                image_uri=uri,
                image_note=note,
                results=[(r.track, _result_label(r.passed)) for r in scores.itertuples(index=False)],
                checks=[_check_view(row) for row in rows.itertuples(index=False)],
            )
        )
    return views


def render_report(tables: Sequence[Table], views: Sequence[ImageView], meta: Mapping[str, str]) -> str:
    """The HTML report from its summary tables, image views and run facts (template version ...)."""
    environment = Environment(
        loader=PackageLoader("sciir", "templates"), autoescape=select_autoescape(["html"]), trim_blocks=True
    )
    return environment.get_template("report.html").render(tables=tables, views=views, meta=meta)
