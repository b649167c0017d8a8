"""AIBench scores (section 3.5): accuracy per level and the question-level global average, in which
every answered question weighs the same; unanswered questions are excluded and reported as coverage.
An answer that picks the insufficient-information option of a multiple-choice question is answered (it
counts in coverage and is correct only where it is the correct option) and is also counted apart: how
often the solver said the image does not show enough (``insufficient_rate``).
References (the logic graph drawn exactly, or with planted faults) are scored alongside the contestants
to show what the solver makes of images of known content, marked by their role and listed last."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from sciir.aibench.questions import LEVELS
from sciir.backends.base import CONTESTANT


def _accuracy(correct: pd.Series) -> float:
    """Share of answered questions answered correctly; NaN when none was answered."""
    answered = correct.dropna()
    return float(answered.astype(bool).mean()) if len(answered) else math.nan


def _insufficient(frame: pd.DataFrame) -> dict[str, Any]:
    """How often the insufficient-information option was given, of the answers to questions offering it
    (NaN when no answered question offers one; a table without the column offers none)."""
    given = frame["insufficient"].dropna() if "insufficient" in frame else pd.Series(dtype=bool)
    count = int(given.astype(bool).sum())
    return {"n_insufficient": count, "insufficient_rate": count / len(given) if len(given) else math.nan}


def score_answers(answers: pd.DataFrame, roles: Mapping[str, str] | None = None) -> pd.DataFrame:
    """``aibench_scores``: per model, its role (``roles``; contestant when not named), accuracy per level
    and overall (question-level global average: every answered question weighs the same), coverage
    (answered / all questions) overall and per level, and how often it gave the insufficient-information
    option; contestants first, then references."""
    rows = []
    for model, frame in answers.groupby("model", sort=True):
        answered = frame["status"] == "answered"
        row: dict[str, Any] = {"model": model, "role": (roles or {}).get(str(model), CONTESTANT)}
        for level in LEVELS:
            at_level = frame[frame["level"] == level]
            row[f"level{level}"] = _accuracy(at_level["correct"])
            row[f"coverage_level{level}"] = (
                float(answered[at_level.index].mean()) if len(at_level) else math.nan
            )
        row["overall"] = _accuracy(frame["correct"])
        row["coverage"] = float(answered.mean()) if len(frame) else math.nan
        row["n_questions"] = len(frame)
        row["n_answered"] = int(answered.sum())
        row |= _insufficient(frame)
        rows.append(row)
    columns = ["model", "role", *(f"level{level}" for level in LEVELS), "overall", "coverage"]
    columns += [f"coverage_level{level}" for level in LEVELS] + ["n_questions", "n_answered"]
    columns += ["n_insufficient", "insufficient_rate"]
    table = pd.DataFrame(rows, columns=columns)
    references_last = table["role"] != CONTESTANT
    return (
        table.assign(_last=references_last)
        .sort_values(["_last", "model"], kind="stable")
        .drop(columns="_last")
        .reset_index(drop=True)
    )


def metrics_from_table(table: pd.DataFrame, name: Callable[[str, str], str]) -> dict[str, float]:
    """``{name(model, column): value}`` for every numeric cell of a table with one row per model (text
    cells, such as the role, are left out)."""
    metrics: dict[str, float] = {}
    for record in table.to_dict("records"):
        model = str(record.pop("model"))
        metrics |= {
            name(model, str(column)): float(value)  # the table's columns are named by text
            for column, value in record.items()
            if not isinstance(value, str)
        }
    return metrics
