"""What a report's model pages show: per judged image, its thumbnail (or why there is none), its results
per track and every checklist question beside the judge's answer.

The views are built one model at a time (:meth:`ImageViews.of_model`), when that model's page is
rendered, and dropped after it: a benchmark of 800 samples x 10 models holds one model's views at a
time, not 8,000 images' worth of rows and display objects. Only each image's thumbnail is found up front
(its file read and hashed once, one file at a time), since the report folder must know every thumbnail.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from sciir.evaluation.generated_images import ImageLoaders
from sciir.evaluation.scoring import rules_in
from sciir.evaluation.thumbnails import Thumbnail, thumbnail_or_note
from sciir.evaluation.tracks import FINAL

CHECK_CLASS = {"yes": "pass", "no": "fail"}
MODEL_PAGES = "models"  # folder of the per-model pages


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


@dataclass(frozen=True)
class SampleFacts:
    """What a model page says of a benchmark sample beside each model's image of it."""

    group: str
    setting: str
    prompt: str


UNKNOWN_SAMPLE = SampleFacts("n/a", "n/a", "")


@dataclass(frozen=True)
class ImageViews:
    """Every judged image's view, grouped by model (in name order) and built on demand per model.

    ``checks`` and ``scores`` hold each model's verdict rows joined with their questions and its sample
    results under the primary rule; ``images`` each image's thumbnail or the note saying why it has none."""

    checks: Mapping[str, pd.DataFrame]
    scores: Mapping[str, pd.DataFrame]
    samples: Mapping[str, SampleFacts]
    images: Mapping[str, tuple[Thumbnail | None, str | None]]

    @property
    def models(self) -> list[str]:
        return list(self.checks)

    def of_model(self, model: str) -> list[ImageView]:
        """``model``'s views, one per sample it has verdicts for, in sample order."""
        results: dict[str, list[tuple[str, str, str]]] = {}
        row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
        for row in self.scores.get(model, pd.DataFrame()).itertuples(index=False):
            results.setdefault(row.sample_id, []).append(
                (row.track, _result_label(row.passed), _defect_note(row.track, row.checklist_defect))
            )
        views = []
        for key, rows in self.checks[model].groupby("sample_id", sort=True):
            sample_id = cast(str, key)  # a text column
            facts = self.samples.get(sample_id, UNKNOWN_SAMPLE)
            thumbnail, note = self.images[f"{model}/{sample_id}"]
            views.append(
                ImageView(
                    model=model,
                    sample_id=sample_id,
                    group=facts.group,
                    setting=facts.setting,
                    prompt=facts.prompt,
                    thumbnail=thumbnail,
                    image_note=note,
                    results=results.get(sample_id, []),
                    checks=[_check_view(row) for row in rows.itertuples(index=False)],
                )
            )
        return views

    def thumbnails(self) -> dict[str, Callable[[], bytes]]:
        """Each distinct thumbnail's path in the report folder and the maker of its bytes."""
        return {thumb.path: thumb.make for thumb, _ in self.images.values() if thumb is not None}


def image_views(
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    sample_scores: pd.DataFrame,
    benchmark: pd.DataFrame,
    images: ImageLoaders,
    unavailable: Mapping[str, str],
    thumbnail_px: int,
) -> ImageViews:
    """The views of every (model, sample) that has verdicts; each image's file is read and hashed here,
    the display rows are built per model when its page is rendered."""
    described = ["question", "expected_text", *(c for c in ("kind", "polarity") if c in checklists.columns)]
    checks = verdicts.drop(columns=["kind", "polarity"], errors="ignore").merge(
        checklists[["sample_id", "question_id", *described]],
        on=["sample_id", "question_id"],
        how="left",
    )
    if len(sample_scores):  # pass / fail are the same under every rule: show the primary rule's rows
        sample_scores = sample_scores[sample_scores["aggregation"] == rules_in(sample_scores)[0]]
    pairs = checks[["model", "sample_id"]].drop_duplicates().sort_values(["model", "sample_id"])
    return ImageViews(
        checks={str(model): rows for model, rows in checks.groupby("model", sort=True)},
        scores={str(model): rows for model, rows in sample_scores.groupby("model", sort=False)},
        samples={
            str(row.sample_id): SampleFacts(str(row.group), str(row.setting), str(row.prompt))
            for row in benchmark.itertuples(index=False)
        },
        images={
            image_id: thumbnail_or_note(image_id, images, unavailable, thumbnail_px)
            for image_id in (f"{m}/{s}" for m, s in pairs.itertuples(index=False))
        },
    )


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
