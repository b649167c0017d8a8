"""Strict veto scoring of SciIR appendix D.3, pass rates, coverage and the leaderboard.

Categories: ``text`` holds a sample's layer-1 questions; ``entity``, ``process`` and ``law`` hold its
layer-2 questions of that track. A question is *judged* when the judge said "yes" or "no"; an
abstention or a failure (failed request, missing image) leaves it *unjudged*.

Per (model, sample, category), with ``unjudged_policy``:

- ``exclude`` (default): unjudged questions are left out. The category passes when every judged
  question is "yes" and at least one was judged; fails when any judged question is "no"; and is
  unjudged (``passed`` null) when none was judged. What was left out shows up as coverage.
- ``fail``: an unjudged question counts as a failed check, so a category with any unjudged
  question fails and ``passed`` is never null.

A sample's ``final`` row (track ``final``) takes its categories' results: it fails when any
category fails, passes when every category with a result passes, and is unjudged when no category has a
result. Under ``exclude`` a category without a result is therefore not held against the sample.

A pass rate is passed / scored samples, where scored samples are those with a non-null ``passed``
(NaN when none). Coverage is judged questions / questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

import numpy as np
import pandas as pd

CATEGORIES = ("text", "entity", "process", "law")
FINAL = "final"
TRACKS = (FINAL, *CATEGORIES)
LEADERBOARD_COLUMNS = ("model", FINAL, *CATEGORIES, "coverage", "n_samples")
SAMPLE_SCORE_COLUMNS = (
    "model",
    "sample_id",
    "group",
    "setting",
    "track",
    "passed",
    "n_questions",
    "n_judged",
    "n_yes",
)

UnjudgedPolicy = Literal["exclude", "fail"]


def category_pass(n_questions: int, n_judged: int, n_yes: int, policy: UnjudgedPolicy) -> bool | None:
    """Veto result of one category from its counts of questions, judged questions and "yes" answers."""
    if n_judged > n_yes:
        return False
    if policy == "fail" and n_judged < n_questions:
        return False
    if n_judged == 0:
        return None
    return True


def final_pass(category_passes: Iterable[bool | None]) -> bool | None:
    """A sample's final result from its categories' results (null ones are left out)."""
    results = [passed for passed in category_passes if passed is not None and passed is not pd.NA]
    if not results:
        return None
    return all(results)


def question_category(verdicts: pd.DataFrame) -> pd.Series:
    """Each verdict row's category: ``text`` for layer 1, else its track."""
    return pd.Series(np.where(verdicts["layer"] == 1, "text", verdicts["track"]), index=verdicts.index)


def _category_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Questions, judged questions and "yes" answers per (model, sample, category)."""
    frame = verdicts.assign(
        track=question_category(verdicts),
        is_judged=verdicts["status"] == "judged",
        is_yes=(verdicts["status"] == "judged") & (verdicts["verdict"] == "yes"),
    )
    return (
        frame.groupby(["model", "sample_id", "track"], sort=True)
        .agg(n_questions=("question_id", "size"), n_judged=("is_judged", "sum"), n_yes=("is_yes", "sum"))
        .reset_index()
    )


def _final_rows(categories: pd.DataFrame) -> pd.DataFrame:
    """One ``final`` row per (model, sample) from its category rows."""
    finals = categories.groupby(["model", "sample_id"], sort=True).agg(
        n_questions=("n_questions", "sum"),
        n_judged=("n_judged", "sum"),
        n_yes=("n_yes", "sum"),
        passed=("passed", final_pass),
    )
    return finals.reset_index().assign(track=FINAL)


def score_samples(verdicts: pd.DataFrame, benchmark: pd.DataFrame, policy: UnjudgedPolicy) -> pd.DataFrame:
    """The ``sample_scores`` table: one row per (model, sample, category) plus one ``final`` row.

    ``n_yes`` (judged questions answered "yes") lets later stages compute a checklist pass rate.
    """
    categories = _category_counts(verdicts)
    categories["passed"] = [
        category_pass(row.n_questions, row.n_judged, row.n_yes, policy) for row in categories.itertuples()
    ]
    scores = (
        pd.concat([categories, _final_rows(categories)], ignore_index=True) if len(categories) else categories
    )
    scores = scores.merge(benchmark[["sample_id", "group", "setting"]], on="sample_id", how="left")
    scores["passed"] = scores["passed"].astype("boolean")
    scores = scores.astype({"n_questions": "int64", "n_judged": "int64", "n_yes": "int64"})
    track_rank = scores["track"].map({track: rank for rank, track in enumerate(TRACKS)})
    scores = scores.assign(track_rank=track_rank).sort_values(["model", "sample_id", "track_rank"])
    return scores[list(SAMPLE_SCORE_COLUMNS)].reset_index(drop=True)


def pass_rates(sample_scores: pd.DataFrame, by: Sequence[str] = ("model",)) -> pd.DataFrame:
    """Pass rate and coverage per ``by`` columns and track.

    Columns: *by, track, n_samples, n_scored, n_passed, pass_rate (NaN when nothing scored),
    n_questions, n_judged, coverage.
    """
    frame = sample_scores.assign(
        is_scored=sample_scores["passed"].notna(),
        is_passed=sample_scores["passed"].fillna(False).astype(bool),
    )
    rates = (
        frame.groupby([*by, "track"], sort=True, dropna=False)
        .agg(
            n_samples=("sample_id", "nunique"),
            n_scored=("is_scored", "sum"),
            n_passed=("is_passed", "sum"),
            n_questions=("n_questions", "sum"),
            n_judged=("n_judged", "sum"),
        )
        .reset_index()
    )
    rates["pass_rate"] = rates["n_passed"].div(rates["n_scored"].where(rates["n_scored"] > 0))
    rates["coverage"] = rates["n_judged"].div(rates["n_questions"].where(rates["n_questions"] > 0))
    return rates


def leaderboard(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """One row per model: pass rates (fractions 0-1, NaN where nothing was judged) per track and final,
    coverage (judged / all questions) and n_samples (samples with at least one question), sorted by
    final pass rate, best first."""
    rates = pass_rates(sample_scores, by=("model",))
    board = rates.pivot(index="model", columns="track", values="pass_rate").reindex(columns=list(TRACKS))
    finals = rates[rates["track"] == FINAL].set_index("model")
    board["coverage"] = finals["coverage"]
    board["n_samples"] = finals["n_samples"].astype("int64")
    board = board.reset_index().sort_values([FINAL, "model"], ascending=[False, True], na_position="last")
    board.columns.name = None
    return board[list(LEADERBOARD_COLUMNS)].reset_index(drop=True)


def coverage_by_track(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """Coverage (judged / all questions) per model (rows) and track (columns, ``final`` = overall)."""
    rates = pass_rates(sample_scores, by=("model",))
    table = rates.pivot(index="model", columns="track", values="coverage")
    return _wide(table.reindex(columns=[track for track in TRACKS if track in table.columns]))


def final_pass_rate_by(sample_scores: pd.DataFrame, column: str) -> pd.DataFrame:
    """Final pass rate per model (rows) and value of ``column`` (columns), e.g. group or setting."""
    rates = pass_rates(sample_scores, by=("model", column))
    finals = rates[rates["track"] == FINAL]
    return _wide(finals.pivot(index="model", columns=column, values="pass_rate"))


def _wide(table: pd.DataFrame) -> pd.DataFrame:
    """A pivoted table with its index back as the ``model`` column."""
    table.columns.name = None
    return table.reset_index()


def image_metrics(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """Per image (``<model>/<sample_id>``): the checklist metrics that are compared with ratings.

    - ``checklist_pass_rate``: judged questions answered "yes" / judged questions (NaN when none judged);
    - ``text_pass``: the text category's veto result as 1.0 / 0.0 (NaN when unjudged or absent);
    - ``final_pass``: the sample's final result as 1.0 / 0.0 (NaN when unjudged).
    """
    finals = sample_scores[sample_scores["track"] == FINAL].set_index(["model", "sample_id"])
    texts = sample_scores[sample_scores["track"] == "text"].set_index(["model", "sample_id"])
    table = finals[["group", "setting"]].copy()
    table["checklist_pass_rate"] = finals["n_yes"].div(finals["n_judged"].where(finals["n_judged"] > 0))
    table["text_pass"] = texts["passed"].astype("Float64").reindex(finals.index).astype(float)
    table["final_pass"] = finals["passed"].astype("Float64").astype(float)
    table = table.reset_index()
    table.insert(0, "image_id", table["model"] + "/" + table["sample_id"])
    return table
