"""AIBench scores (section 3.5): accuracy per level and the question-level global average, in which
every answered question weighs the same; unanswered questions are excluded and reported as coverage."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from sciir.aibench.questions import LEVELS


def _accuracy(correct: pd.Series) -> float:
    """Share of answered questions answered correctly; NaN when none was answered."""
    answered = correct.dropna()
    return float(answered.astype(bool).mean()) if len(answered) else math.nan


def score_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """``aibench_scores``: per model, accuracy per level and overall (question-level global average:
    every answered question weighs the same), coverage (answered / all questions) overall and per level."""
    rows = []
    for model, frame in answers.groupby("model", sort=True):
        answered = frame["status"] == "answered"
        row: dict[str, Any] = {"model": model}
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
        rows.append(row)
    columns = ["model", *(f"level{level}" for level in LEVELS), "overall", "coverage"]
    columns += [f"coverage_level{level}" for level in LEVELS] + ["n_questions", "n_answered"]
    return pd.DataFrame(rows, columns=columns)


def metrics_from_table(table: pd.DataFrame, name: Callable[[str, str], str]) -> dict[str, float]:
    """``{name(model, column): value}`` for every numeric cell of a table with one row per model."""
    metrics: dict[str, float] = {}
    for record in table.to_dict("records"):
        model = str(record.pop("model"))
        metrics |= {name(model, column): float(value) for column, value in record.items()}
    return metrics
