"""SciIR scoring (paper section 4, appendix D.3): per-sample results, score tables with bootstrap
intervals and coverage, and the leaderboard.

Categories: ``text`` holds a sample's layer-1 questions; ``entity``, ``process`` and ``law`` hold its
layer-2 questions of that track (``other`` holds questions of a verdicts file whose track is unknown;
they count towards ``final`` only). A question is *judged* when the judge said "yes" or "no"; an
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

``passed`` is always this strict veto. ``score`` and ``weight`` follow the configured aggregation rule
(``sciir.aggregation``; for ``sciir_veto`` the score is ``passed`` as 1.0 / 0.0): a model's score on a
track, group or setting is sum(score x weight) / sum(weight) over its samples, with a bootstrap
interval that resamples samples (``sciir.bootstrap``). Coverage is judged questions / questions.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from sciir.aggregation import (
    AggregationRule,
    UnjudgedPolicy,
    judged_mask,
    rule_correctness,
    weighted_mean,
    with_unit_scores,
)
from sciir.bootstrap import BootstrapConfig, weighted_mean_interval

CATEGORIES = ("text", "entity", "process", "law")
OTHER = "other"
FINAL = "final"
TRACKS = (FINAL, *CATEGORIES)
BREAKDOWNS = ("track", "group", "setting")
INTERVAL_SUFFIXES = ("", "_lo", "_hi")
LEADERBOARD_COLUMNS = (
    "model",
    *(f"{track}{suffix}" for track in TRACKS for suffix in INTERVAL_SUFFIXES),
    "coverage",
    *(f"coverage_{category}" for category in CATEGORIES),
    "n_samples",
    "aggregation",
)
SAMPLE_SCORE_COLUMNS = (
    "model",
    "sample_id",
    "group",
    "setting",
    "track",
    "passed",
    "score",
    "weight",
    "n_questions",
    "n_judged",
    "n_yes",
    "n_counted",
    "n_correct",
)
SCORE_COLUMNS = (
    "model",
    "breakdown",
    "value",
    "score",
    "ci_low",
    "ci_high",
    "n_samples",
    "n_scored",
    "n_questions",
    "n_judged",
    "coverage",
)
_COUNT_COLUMNS = ("n_questions", "n_judged", "n_yes", "n_counted")
# Samples of a verdicts file that the benchmark does not hold have no group or setting.
UNASSIGNED = "unassigned"


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
    """Each verdict row's category: ``text`` for layer 1, else its track (``other`` when unknown)."""
    tracks = verdicts["track"].where(verdicts["track"].isin(CATEGORIES), OTHER)
    return pd.Series(np.where(verdicts["layer"] == 1, "text", tracks), index=verdicts.index)


def _category_counts(verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy) -> pd.DataFrame:
    """Per (model, sample, category): questions, judged, "yes", counted questions and their correctness."""
    judged = judged_mask(verdicts)
    frame = verdicts[["model", "sample_id", "question_id"]].assign(
        track=question_category(verdicts),
        is_judged=judged,
        is_yes=judged & (verdicts["verdict"] == "yes"),
        correct=rule_correctness(verdicts, rule, policy),
    )
    return (
        frame.groupby(["model", "sample_id", "track"], sort=True)
        .agg(
            n_questions=("question_id", "size"),
            n_judged=("is_judged", "sum"),
            n_yes=("is_yes", "sum"),
            n_counted=("correct", "count"),
            n_correct=("correct", "sum"),
        )
        .reset_index()
    )


def _final_rows(categories: pd.DataFrame) -> pd.DataFrame:
    """One ``final`` row per (model, sample) from its category rows."""
    finals = categories.groupby(["model", "sample_id"], sort=True).agg(
        **{column: (column, "sum") for column in (*_COUNT_COLUMNS, "n_correct")},
        passed=("passed", final_pass),
    )
    return finals.reset_index().assign(track=FINAL)


def score_samples(
    verdicts: pd.DataFrame,
    benchmark: pd.DataFrame,
    policy: UnjudgedPolicy,
    rule: AggregationRule = "sciir_veto",
) -> pd.DataFrame:
    """The ``sample_scores`` table: one row per (model, sample, category) plus one ``final`` row.

    ``n_yes`` (judged questions answered "yes") lets later stages compute a checklist pass rate;
    ``n_counted`` / ``n_correct`` are the questions the rule counted and their summed correctness.
    The ``dsg`` rule needs a ``parent_ids`` column in ``verdicts``.
    """
    categories = _category_counts(verdicts, rule, policy)
    categories["passed"] = [
        category_pass(row.n_questions, row.n_judged, row.n_yes, policy) for row in categories.itertuples()
    ]
    scores = (
        pd.concat([categories, _final_rows(categories)], ignore_index=True) if len(categories) else categories
    )
    scores = with_unit_scores(scores, rule)
    scores = scores.merge(benchmark[["sample_id", "group", "setting"]], on="sample_id", how="left")
    scores["passed"] = scores["passed"].astype("boolean")
    scores = scores.astype({column: "int64" for column in _COUNT_COLUMNS} | {"n_correct": "float64"})
    track_rank = scores["track"].map({track: rank for rank, track in enumerate((*TRACKS, OTHER))})
    scores = scores.assign(track_rank=track_rank).sort_values(["model", "sample_id", "track_rank"])
    return scores[list(SAMPLE_SCORE_COLUMNS)].reset_index(drop=True)


def _score_row(model: str, breakdown: str, value: str, units: pd.DataFrame, config: BootstrapConfig) -> dict:
    """One row of the score table from the sample rows of one model and one track, group or setting."""
    units = units.sort_values("sample_id")  # resampling is seeded by position: fix the order
    weights = units["weight"].to_numpy(dtype=float)
    low, high = weighted_mean_interval(units["score"].to_numpy(dtype=float), weights, config)
    n_questions, n_judged = int(units["n_questions"].sum()), int(units["n_judged"].sum())
    return {
        "model": model,
        "breakdown": breakdown,
        "value": value,
        "score": weighted_mean(units["score"], weights),
        "ci_low": low,
        "ci_high": high,
        "n_samples": int(units["sample_id"].nunique()),
        "n_scored": int((weights > 0).sum()),
        "n_questions": n_questions,
        "n_judged": n_judged,
        "coverage": n_judged / n_questions if n_questions else float("nan"),
    }


def score_table(sample_scores: pd.DataFrame, config: BootstrapConfig) -> pd.DataFrame:
    """Scores with bootstrap intervals and coverage per model and track, group and setting.

    Rows of breakdown ``track`` cover every track (``final`` included); rows of ``group`` and ``setting``
    hold final results per group / setting. Columns: ``SCORE_COLUMNS``.
    """
    finals = sample_scores[sample_scores["track"] == FINAL].fillna(
        {"group": UNASSIGNED, "setting": UNASSIGNED}
    )
    sources = {"track": sample_scores, "group": finals, "setting": finals}
    rows = [
        _score_row(str(model), breakdown, str(value), units, config)
        for breakdown, frame in sources.items()
        for (model, value), units in frame.groupby(["model", breakdown], sort=True)
    ]
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def breakdown_table(scores: pd.DataFrame, breakdown: str, column: str = "score") -> pd.DataFrame:
    """One row per model (column ``model``) and one column per track / group / setting of ``column``."""
    rows = scores[scores["breakdown"] == breakdown]
    table = rows.pivot(index="model", columns="value", values=column)
    if breakdown == "track":
        table = table.reindex(columns=[track for track in (*TRACKS, OTHER) if track in table.columns])
    table.columns.name = None
    return table.reset_index()


def leaderboard(scores: pd.DataFrame, rule: AggregationRule = "sciir_veto") -> pd.DataFrame:
    """One row per model: per track and final the score (fraction 0-1, NaN where nothing was scored)
    with its interval (``<track>_lo`` / ``<track>_hi``), coverage overall and per category, n_samples
    (samples with at least one question) and the aggregation rule; best final score first."""
    tracks = scores[scores["breakdown"] == "track"].set_index(["model", "value"])
    models = sorted(tracks.index.get_level_values("model").unique())
    board = pd.DataFrame({"model": models})

    def cells(track: str, column: str) -> list[float]:
        return [tracks[column].get((model, track), np.nan) for model in models]

    for track in TRACKS:
        for suffix, column in zip(INTERVAL_SUFFIXES, ("score", "ci_low", "ci_high"), strict=True):
            board[f"{track}{suffix}"] = cells(track, column)
    board["coverage"] = cells(FINAL, "coverage")
    for category in CATEGORIES:
        board[f"coverage_{category}"] = cells(category, "coverage")
    board["n_samples"] = np.array(cells(FINAL, "n_samples"), dtype="int64")
    board["aggregation"] = rule
    board = board.sort_values([FINAL, "model"], ascending=[False, True], na_position="last")
    return board[list(LEADERBOARD_COLUMNS)].reset_index(drop=True)


def model_metrics(scores: pd.DataFrame, model: str) -> dict[str, float]:
    """One model's scores as metrics: ``<track>``, ``group.<group>``, ``setting.<setting>``, each with
    ``.ci_low`` / ``.ci_high``; ``coverage`` (all questions), ``coverage.<track>`` and ``n_samples``."""
    metrics: dict[str, float] = {}
    for row in scores[scores["model"] == model].itertuples(index=False):
        name = row.value if row.breakdown == "track" else f"{row.breakdown}.{row.value}"
        metrics |= {name: row.score, f"{name}.ci_low": row.ci_low, f"{name}.ci_high": row.ci_high}
        if row.breakdown == "track":
            metrics["coverage" if row.value == FINAL else f"coverage.{row.value}"] = row.coverage
            if row.value == FINAL:
                metrics["n_samples"] = float(row.n_samples)
    return {name: float(value) for name, value in metrics.items()}


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
