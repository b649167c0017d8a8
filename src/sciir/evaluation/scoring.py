"""SciIR scoring (paper section 4, appendix D.3): per-sample results, score tables with bootstrap
intervals and coverage, and the leaderboard.

Categories (``sciir.evaluation.tracks``): ``text`` holds a sample's layer-1 questions; ``entity``,
``process`` and ``law`` hold its layer-2 questions of that track (``other`` holds questions of a
verdicts file whose track is unknown; they count towards ``final`` only). A question is *judged* when
the judge said "yes" or "no"; an abstention or a failure (failed request, missing image) leaves it
*unjudged*.

The strict veto, per (model, sample, category): the category **passes** only when it has questions and
every one of them is judged and answered "yes"; it **fails** when one is answered "no". Otherwise (a
question unjudged, or no question at all) it is *unjudged* under ``unjudged_policy: exclude`` (left out
of that category's score, and so out of ``final``) and failed under ``fail``. An unjudged category is
never a pass.

A sample's ``final`` passes only when ``text`` (when it has text questions) and every Layer-2 track of
the sample's labels (the benchmark's ``tracks`` column; without it, the tracks that have questions)
pass; it fails when one of them fails and is otherwise unjudged. A labelled track without a single
question is a *checklist defect*: a row with ``n_questions`` 0 and ``checklist_defect`` true, unjudged
(``exclude``) or failed (``fail``), counted in ``n_defects``, never a silent pass.

``passed`` is always this strict veto. ``score`` and ``weight`` follow each configured aggregation rule
(``sciir.evaluation.aggregation``; for ``sciir_veto`` the score is ``passed`` as 1.0 / 0.0, NaN with weight 0 when
unjudged): a model's score on a track, group or setting is sum(score x weight) / sum(weight) over its
samples, with a bootstrap interval that resamples samples (``sciir.stats.bootstrap``), over ``n_scored``
samples (a score over none is NaN, shown as n/a). Coverage is judged questions / questions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sciir.backends.base import CONTESTANT
from sciir.evaluation.aggregation import (
    AggregationRule,
    UnjudgedPolicy,
    judged_mask,
    rule_correctness,
    weighted_mean,
    with_unit_scores,
)
from sciir.evaluation.tracks import (
    CATEGORIES,
    FINAL,
    SCORE_CATEGORIES,
    category_order,
    extra_categories,
    is_unset,
    labelled_tracks,
    question_category,
)
from sciir.stats.bootstrap import BootstrapConfig, weighted_mean_interval

BREAKDOWNS = ("track", "group", "setting")
INTERVAL_SUFFIXES = ("", "_lo", "_hi", "_n")
LEADERBOARD_COLUMNS = (
    "aggregation",
    "rank",
    "model",
    "role",
    *(f"{track}{suffix}" for track in SCORE_CATEGORIES for suffix in INTERVAL_SUFFIXES),
    "coverage",
    *(f"coverage_{category}" for category in CATEGORIES),
    "n_samples",
    "checklist_defects",
)
SAMPLE_SCORE_COLUMNS = (
    "aggregation",
    "model",
    "sample_id",
    "group",
    "setting",
    "track",
    "passed",
    "checklist_defect",
    "score",
    "weight",
    "n_questions",
    "n_judged",
    "n_yes",
    "n_counted",
    "n_correct",
)
SCORE_COLUMNS = (
    "aggregation",
    "model",
    "breakdown",
    "value",
    "score",
    "ci_low",
    "ci_high",
    "n_samples",
    "n_scored",
    "n_defects",
    "n_questions",
    "n_judged",
    "coverage",
)
_COUNT_COLUMNS = ("n_questions", "n_judged", "n_yes", "n_counted")
# Samples of a verdicts file that the benchmark does not hold have no group or setting.
UNASSIGNED = "unassigned"


def category_pass(n_questions: int, n_judged: int, n_yes: int, policy: UnjudgedPolicy) -> bool | None:
    """Strict veto of one category of one sample: True only when it has questions and every one is
    judged "yes"; False when one is judged "no"; otherwise None (``exclude``) or False (``fail``)."""
    if n_judged > n_yes:
        return False
    if n_questions > 0 and n_judged == n_questions:
        return True
    return False if policy == "fail" else None


def final_pass(category_passes: Iterable[bool | None]) -> bool | None:
    """A sample's final result from every category it must pass: False when one fails, None when none
    fails but one is unjudged (or there is none), True only when all pass."""
    results = [None if is_unset(passed) else bool(passed) for passed in category_passes]
    if any(passed is False for passed in results):
        return False
    if not results or any(passed is None for passed in results):
        return None
    return True


def _category_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per (model, sample, category): questions, judged questions and "yes" answers."""
    judged = judged_mask(verdicts)
    frame = verdicts[["model", "sample_id", "question_id"]].assign(
        track=question_category(verdicts), is_judged=judged, is_yes=judged & (verdicts["verdict"] == "yes")
    )
    return (
        frame.groupby(["model", "sample_id", "track"], sort=True)
        .agg(n_questions=("question_id", "size"), n_judged=("is_judged", "sum"), n_yes=("is_yes", "sum"))
        .reset_index()
    )


def _defect_rows(categories: pd.DataFrame, labelled: dict[str, list[str]]) -> pd.DataFrame:
    """A row without questions for every labelled track that a (model, sample) has no question of."""
    present = set(zip(categories["model"], categories["sample_id"], categories["track"], strict=True))
    pairs = categories[["model", "sample_id"]].drop_duplicates().itertuples(index=False)
    rows = [
        {"model": model, "sample_id": sample, "track": track, "n_questions": 0, "n_judged": 0, "n_yes": 0}
        for model, sample in pairs
        for track in labelled.get(sample, [])
        if (model, sample, track) not in present
    ]
    return pd.DataFrame(rows, columns=list(categories.columns))


def _rule_counts(verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy) -> pd.DataFrame:
    """Per (model, sample, category): the questions ``rule`` counted and their summed correctness."""
    frame = verdicts[["model", "sample_id"]].assign(
        track=question_category(verdicts), correct=rule_correctness(verdicts, rule, policy)
    )
    return (
        frame.groupby(["model", "sample_id", "track"], sort=True)
        .agg(n_counted=("correct", "count"), n_correct=("correct", "sum"))
        .reset_index()
    )


def _final_rows(categories: pd.DataFrame) -> pd.DataFrame:
    """One ``final`` row per (model, sample) from all its category rows (checklist defects included)."""
    finals = categories.groupby(["model", "sample_id"], sort=True).agg(
        **{column: (column, "sum") for column in (*_COUNT_COLUMNS, "n_correct")},
        passed=("passed", final_pass),
        checklist_defect=("checklist_defect", "any"),
    )
    return finals.reset_index().assign(track=FINAL)


def _veto_results(verdicts: pd.DataFrame, benchmark: pd.DataFrame, policy: UnjudgedPolicy) -> pd.DataFrame:
    """Per (model, sample, category) the counts and the strict-veto result, checklist defects included."""
    counts = _category_counts(verdicts)
    categories = pd.concat([counts, _defect_rows(counts, labelled_tracks(benchmark))], ignore_index=True)
    categories["checklist_defect"] = categories["n_questions"] == 0
    # Each row's fields are typed by the table (pandas-stubs types each as any scalar).
    rows: Iterable[Any] = categories.itertuples()
    categories["passed"] = [category_pass(row.n_questions, row.n_judged, row.n_yes, policy) for row in rows]
    return categories


def _rule_scores(
    results: pd.DataFrame, verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy
) -> pd.DataFrame:
    """Category and final rows of one rule: the veto results plus the rule's counts, score and weight."""
    categories = results.merge(
        _rule_counts(verdicts, rule, policy), on=["model", "sample_id", "track"], how="left"
    ).fillna({"n_counted": 0, "n_correct": 0.0})
    scores = pd.concat([categories, _final_rows(categories)], ignore_index=True)
    if rule == "sciir_veto":  # the score is the veto itself, defects included
        judged = scores["passed"].map(lambda passed: not is_unset(passed))
        scores["score"] = scores["passed"].map(lambda passed: np.nan if is_unset(passed) else float(passed))
        scores["weight"] = judged.astype(float)
        return scores.assign(aggregation=rule)
    return with_unit_scores(scores, rule).assign(aggregation=rule)


def score_samples(
    verdicts: pd.DataFrame,
    benchmark: pd.DataFrame,
    policy: UnjudgedPolicy,
    rules: AggregationRule | Sequence[AggregationRule] = "sciir_veto",
) -> pd.DataFrame:
    """The ``sample_scores`` table: per rule, one row per (model, sample, category) plus one ``final`` row.

    ``passed`` and ``checklist_defect`` are the same under every rule; ``n_yes`` (judged questions
    answered "yes") lets later stages compute a checklist pass rate; ``n_counted`` / ``n_correct`` are
    the questions the rule counted and their summed correctness. The ``dsg`` rule needs a
    ``parent_ids`` column in ``verdicts``.
    """
    rules = [rules] if isinstance(rules, str) else list(rules)
    if verdicts.empty:
        return pd.DataFrame(columns=list(SAMPLE_SCORE_COLUMNS))
    results = _veto_results(verdicts, benchmark, policy)
    scores = pd.concat([_rule_scores(results, verdicts, rule, policy) for rule in rules], ignore_index=True)
    scores = scores.merge(benchmark[["sample_id", "group", "setting"]], on="sample_id", how="left")
    scores["passed"] = scores["passed"].astype("boolean")
    scores["checklist_defect"] = scores["checklist_defect"].astype(bool)
    scores = scores.astype({column: "int64" for column in _COUNT_COLUMNS} | {"n_correct": "float64"})
    order = {
        "rule_rank": scores["aggregation"].map({rule: rank for rank, rule in enumerate(rules)}),
        "track_rank": scores["track"].map(category_order(scores["track"])),
    }
    scores = scores.assign(**order).sort_values(["rule_rank", "model", "sample_id", "track_rank"])
    return scores[list(SAMPLE_SCORE_COLUMNS)].reset_index(drop=True)


def _score_row(keys: tuple[str, str, str, str], units: pd.DataFrame, config: BootstrapConfig) -> dict:
    """One row of the score table from the sample rows of one rule, model and track, group or setting."""
    units = units.sort_values("sample_id")  # resampling is seeded by position: fix the order
    weights = units["weight"].to_numpy(dtype=float)
    low, high = weighted_mean_interval(units["score"].to_numpy(dtype=float), weights, config)
    n_questions, n_judged = int(units["n_questions"].sum()), int(units["n_judged"].sum())
    return dict(zip(("aggregation", "model", "breakdown", "value"), keys, strict=True)) | {
        "score": weighted_mean(units["score"], weights),
        "ci_low": low,
        "ci_high": high,
        "n_samples": int(units["sample_id"].nunique()),
        "n_scored": int((weights > 0).sum()),
        "n_defects": int(units["checklist_defect"].sum()),
        "n_questions": n_questions,
        "n_judged": n_judged,
        "coverage": n_judged / n_questions if n_questions else float("nan"),
    }


def score_table(sample_scores: pd.DataFrame, config: BootstrapConfig) -> pd.DataFrame:
    """Scores with bootstrap intervals and coverage per rule, model and track, group and setting.

    Rows of breakdown ``track`` cover every track (``final`` included); rows of ``group`` and ``setting``
    hold final results per group / setting. ``n_scored`` is the number of samples a score is over
    (those with a result); ``n_samples`` counts every sample. Columns: ``SCORE_COLUMNS``.
    """
    finals = sample_scores[sample_scores["track"] == FINAL].fillna(
        {"group": UNASSIGNED, "setting": UNASSIGNED}
    )
    sources = {"track": sample_scores, "group": finals, "setting": finals}
    rows = [
        _score_row((str(rule), str(model), breakdown, str(value)), units, config)
        for breakdown, frame in sources.items()
        for (rule, model, value), units in frame.groupby(["aggregation", "model", breakdown], sort=False)
    ]
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def rules_in(scores: pd.DataFrame) -> list[str]:
    """The aggregation rules of a score table, in the configured order (the first is the primary)."""
    return list(pd.unique(scores["aggregation"]))


def breakdown_table(scores: pd.DataFrame, breakdown: str, column: str = "score") -> pd.DataFrame:
    """One row per model (column ``model``) and one column per track / group / setting of ``column``,
    for the primary (first) aggregation rule of ``scores`` (no row when nothing was scored)."""
    rules = rules_in(scores)
    if not rules:
        return pd.DataFrame({"model": pd.Series(dtype=str)})
    rows = scores[(scores["breakdown"] == breakdown) & (scores["aggregation"] == rules[0])]
    table = rows.pivot(index="model", columns="value", values=column)
    if breakdown == "track":
        table = table.reindex(columns=list(category_order(table.columns)))
    table.columns.name = None
    return table.reset_index()


def _rule_board(tracks: pd.DataFrame, roles: Mapping[str, str]) -> pd.DataFrame:
    """The leaderboard rows of one rule from its ``track`` rows indexed by (model, track)."""
    models = sorted(tracks.index.get_level_values("model").unique())
    board = pd.DataFrame({"model": models})
    board["role"] = [roles.get(model, CONTESTANT) for model in models]

    def cells(track: str, column: str) -> list[float]:
        return [tracks[column].get((model, track), np.nan) for model in models]

    extra = extra_categories(tracks.index.get_level_values("value"))
    for track in (*SCORE_CATEGORIES, *extra):
        for suffix, column in zip(INTERVAL_SUFFIXES, ("score", "ci_low", "ci_high", "n_scored"), strict=True):
            board[f"{track}{suffix}"] = cells(track, column)
        board[f"{track}_n"] = board[f"{track}_n"].fillna(0).astype("int64")
    board["coverage"] = cells(FINAL, "coverage")
    for category in (*CATEGORIES, *extra):
        board[f"coverage_{category}"] = cells(category, "coverage")
    board["n_samples"] = np.array(cells(FINAL, "n_samples"), dtype="int64")
    board["checklist_defects"] = np.array(cells(FINAL, "n_defects"), dtype="int64")
    return board


def leaderboard(scores: pd.DataFrame, roles: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Per aggregation rule (the primary first), one row per model: per track and final the score
    (fraction 0-1, NaN where no sample has a result) with its interval (``<track>_lo`` / ``<track>_hi``)
    and the number of samples it is over (``<track>_n``), coverage overall and per category, n_samples
    (samples with at least one question) and checklist defects. ``role`` is ``contestant`` or, for a
    reference renderer (``roles``), ``reference``: references are listed after the contestants and
    get no ``rank`` (nor does a model without a final score). Within a rule and role, best final
    score first."""
    roles = roles or {}
    boards = []
    for rank, rule in enumerate(rules_in(scores)):
        rows = scores[(scores["breakdown"] == "track") & (scores["aggregation"] == rule)]
        board = _rule_board(rows.set_index(["model", "value"]), roles)
        boards.append(board.assign(aggregation=rule, rule_rank=rank))
    if not boards:
        return pd.DataFrame(columns=list(LEADERBOARD_COLUMNS))
    board = pd.concat(boards, ignore_index=True).assign(is_reference=lambda b: b["role"] != CONTESTANT)
    extra = extra_categories(scores.loc[scores["breakdown"] == "track", "value"])
    board = board.sort_values(
        ["rule_rank", "is_reference", FINAL, "model"],
        ascending=[True, True, False, True],
        na_position="last",
    )
    ranked = ~board["is_reference"] & board[FINAL].notna()
    board["rank"] = ranked.groupby(board["rule_rank"]).cumsum().where(ranked).astype("Int64")
    return board[leaderboard_columns(extra)].reset_index(drop=True)


def leaderboard_columns(extra: Sequence[str] = ()) -> list[str]:
    """The leaderboard's columns: SciIR's, then score, interval, samples and coverage of each of a
    benchmark's own categories ``extra``."""
    return [
        *LEADERBOARD_COLUMNS,
        *(f"{name}{suffix}" for name in extra for suffix in INTERVAL_SUFFIXES),
        *(f"coverage_{name}" for name in extra),
    ]


def _metric_prefix(rule: str, primary: str) -> str:
    """Metric names of the primary rule stand alone; another rule's carry its name: ``tifa.final``."""
    return "" if rule == primary else f"{rule}."


def model_metrics(scores: pd.DataFrame, model: str) -> dict[str, float]:
    """One model's scores as metrics: ``<track>``, ``group.<group>``, ``setting.<setting>``, each with
    ``.ci_low`` / ``.ci_high`` / ``.n_samples`` (samples the score is over); ``coverage`` (all
    questions), ``coverage.<track>``, ``n_samples`` and ``checklist_defects``. Names of a rule other
    than the primary (first) one start with the rule's name."""
    primary = rules_in(scores)[0] if len(scores) else ""
    metrics: dict[str, float] = {}
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in scores[scores["model"] == model].itertuples(index=False):
        prefix = _metric_prefix(row.aggregation, primary)
        name = prefix + (row.value if row.breakdown == "track" else f"{row.breakdown}.{row.value}")
        metrics |= {name: row.score, f"{name}.ci_low": row.ci_low, f"{name}.ci_high": row.ci_high}
        metrics[f"{name}.n_samples"] = row.n_scored
        if row.breakdown == "track" and not prefix:
            metrics["coverage" if row.value == FINAL else f"coverage.{row.value}"] = row.coverage
            if row.value == FINAL:
                metrics["n_samples"] = row.n_samples
                metrics["checklist_defects"] = row.n_defects
    return {name: float(value) for name, value in metrics.items()}
