"""The closing lines of a run: the leaderboard and where to look next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

_SCORE_COLUMNS = ["final", "text", "entity", "process", "law"]
_SHOWN_COLUMNS = ["model", *_SCORE_COLUMNS, "coverage", "n_samples"]
_RULE_HEADINGS = {
    "sciir_veto": "strict veto pass rates",
    "tifa": "TIFA scores (mean of per-prompt means)",
    "question_mean": "question-level means",
    "dsg": "DSG scores (dependency-aware)",
}


def _percent(value: Any) -> str:
    return "-" if pd.isna(value) else f"{100 * value:.1f}%"


def _with_interval(value: Any, low: Any, high: Any) -> str:
    """``83.3% [70.8, 95.8]``; the rate alone without an interval, '-' when unjudged."""
    if pd.isna(value) or pd.isna(low) or pd.isna(high):
        return _percent(value)
    return f"{_percent(value)} [{100 * low:.1f}, {100 * high:.1f}]"


def format_leaderboard(board: pd.DataFrame) -> str:
    """Leaderboard as a fixed-width table: rates as percentages with their 95% interval in brackets
    when the board has ``<track>_lo`` / ``<track>_hi``, unjudged as '-'."""
    shown = board[[column for column in _SHOWN_COLUMNS if column in board]].copy()
    for column in _SCORE_COLUMNS:
        if column not in shown:
            continue
        if f"{column}_lo" in board and f"{column}_hi" in board:
            cells = zip(board[column], board[f"{column}_lo"], board[f"{column}_hi"], strict=True)
            shown[column] = [_with_interval(*cell) for cell in cells]
        else:
            shown[column] = board[column].map(_percent)
    if "coverage" in shown:
        shown["coverage"] = board["coverage"].map(_percent)
    return shown.to_string(index=False)


def print_run_summary(catalog: Any, project_path: Path) -> None:
    board = catalog.load("leaderboard")
    report = project_path / "data" / "08_reporting" / "report.html"
    rule = board["aggregation"].iloc[0] if "aggregation" in board and len(board) else "sciir_veto"
    heading = _RULE_HEADINGS.get(rule, rule)
    print(f"\nSciIR leaderboard ({heading}, 95% bootstrap interval; coverage = share of questions judged)\n")
    print(format_leaderboard(board))
    print(f"\nReport: {report}")
    print(
        "MLflow: mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db   (then open http://127.0.0.1:5000)\n"
    )
