"""The closing lines of a run: the leaderboard and where to look next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

_RATE_COLUMNS = ["final", "text", "entity", "process", "law", "coverage"]


def format_leaderboard(board: pd.DataFrame) -> str:
    """Leaderboard as a fixed-width table, rates as percentages, unjudged as '-'."""
    shown = board.copy()
    for column in _RATE_COLUMNS:
        if column in shown:
            shown[column] = shown[column].map(lambda v: "-" if pd.isna(v) else f"{100 * v:5.1f}%")
    return shown.to_string(index=False)


def print_run_summary(catalog: Any, project_path: Path) -> None:
    board = catalog.load("leaderboard")
    report = project_path / "data" / "08_reporting" / "report.html"
    print("\nSciIR leaderboard (strict veto pass rates; coverage = share of questions judged)\n")
    print(format_leaderboard(board))
    print(f"\nReport: {report}")
    print("MLflow: mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db   (then open http://127.0.0.1:5000)\n")
