"""The leaderboard as text: the fixed-width tables evaluate logs (ranks with their intervals, the paired
comparisons, each adapter's fine-tuning effect and the difference the benchmark detects under them), and the closing lines of a run (the
leaderboard, then where the report and the MLflow UI are)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sciir.evaluation.comparison_text import (
    comparisons_text,
    detectable_text,
    finetune_effect_text,
    not_separated_text,
    rank_words,
)
from sciir.evaluation.tracks import SCORE_CATEGORIES
from sciir.runs.results_folder import results_folder

_RULE_HEADINGS = {
    "sciir_veto": "strict veto pass rates",
    "tifa": "TIFA scores (mean of per-prompt means)",
    "question_mean": "question-level means",
    "dsg": "DSG scores (dependency-aware)",
}


def _percent(value: Any) -> str:
    return "n/a" if pd.isna(value) else f"{100 * value:.1f}%"


def score_cell(value: Any, low: Any, high: Any, n: Any) -> str:
    """``83.3% [70.8, 95.8] n=24``: a rate, its 95% interval when it has one, and the samples it is over;
    ``n/a n=0`` when no sample has a result."""
    count = f" n={int(n)}" if not pd.isna(n) else ""
    if pd.isna(value) or pd.isna(low) or pd.isna(high):
        return f"{_percent(value)}{count}"
    return f"{_percent(value)} [{100 * low:.1f}, {100 * high:.1f}]{count}"


def format_leaderboard(board: pd.DataFrame) -> str:
    """One rule's leaderboard as a fixed-width table: the rank with its bootstrap interval (when the board
    has one), per track the rate with its 95% interval and the number of samples it is over, then
    coverage, the role and the number of samples."""
    shown = pd.DataFrame({"model": board["model"]})
    if "rank_lo" in board:
        cells = zip(board["rank"], board["rank_lo"], board["rank_hi"], strict=True)
        shown.insert(0, "rank", [rank_words(*cell) for cell in cells])
    for column in SCORE_CATEGORIES:
        parts = [
            board.get(f"{column}{suffix}", pd.Series(float("nan"), index=board.index))
            for suffix in ("", "_lo", "_hi", "_n")
        ]
        shown[column] = [score_cell(*cell) for cell in zip(*parts, strict=True)]
    shown["coverage"] = board["coverage"].map(_percent)
    if "role" in board:
        shown["role"] = board["role"]
    shown["n_samples"] = board["n_samples"]
    return shown.to_string(index=False)


def coverage_note(board: pd.DataFrame) -> str | None:
    """A sentence for models whose questions were not all judged (None when coverage is 100%)."""
    partial = board[board["coverage"].fillna(0.0) < 1.0].drop_duplicates("model")
    if partial.empty:
        return None
    listed = ", ".join(f"{row.model} {_percent(row.coverage)}" for row in partial.itertuples())
    return (
        f"Coverage is below 100% for {listed}: unjudged questions (abstained, failed, or no image) make "
        "their category unjudged, so those scores count fewer samples (n=...) than the benchmark holds."
    )


def _rule_block(
    rule: str, rows: pd.DataFrame, pairwise: pd.DataFrame | None, effect: pd.DataFrame | None = None
) -> str:
    """One rule's leaderboard with its heading, then (with ``pairwise``) its paired comparisons and the
    ranks they cannot tell apart, then (with ``effect``, a ``finetune_effect`` table) each adapter's
    fine-tuning effect."""
    ranks = "rank [bootstrap interval], " if "rank_lo" in rows else ""
    block = (
        f"SciIR leaderboard ({_RULE_HEADINGS.get(rule, rule)}, {ranks}95% bootstrap interval, "
        "n = samples counted; "
        f"coverage = share of questions judged)\n\n{format_leaderboard(rows)}"
    )
    effect_lines = finetune_effect_text(effect, rule) if effect is not None else None
    if pairwise is None:
        return "\n\n".join([block, *([effect_lines] if effect_lines else [])])
    separated = not_separated_text(rows)
    found = [comparisons_text(pairwise, rule), separated, effect_lines]
    return "\n\n".join([block, *(text for text in found if text)])


def leaderboard_text(
    board: pd.DataFrame, pairwise: pd.DataFrame | None = None, effect: pd.DataFrame | None = None
) -> str:
    """Every rule's leaderboard with its heading (and, given the ``pairwise`` table, its paired comparisons
    and the ranks they cannot tell apart; given the ``finetune_effect`` table, each adapter against its
    base), then the smallest difference the benchmark detects per group, then the coverage sentence when
    coverage is partial."""
    blocks = [
        _rule_block(str(rule), rows, pairwise, effect)
        for rule, rows in board.groupby("aggregation", sort=False)
    ]
    detectable = detectable_text(pairwise) if pairwise is not None else None
    note = coverage_note(board)
    return "\n\n".join([*blocks, *([detectable] if detectable else []), *([note] if note else [])])


def print_run_summary(catalog: Any, project_path: Path, runtime_params: dict[str, Any] | None = None) -> None:
    """The leaderboard in words, and where the report and the MLflow UI are; a run on another benchmark,
    folder of images or verdicts file (``runtime_params``) has its report in its own results folder."""
    board = catalog.load("leaderboard")
    pairwise = catalog.load("pairwise") if "pairwise" in catalog else None
    effect = catalog.load("finetune_effect") if "finetune_effect" in catalog else None
    evaluate = (runtime_params or {}).get("evaluate") or {}
    benchmark, images_dir, verdicts_file = (
        evaluate.get(name) for name in ("benchmark", "images_dir", "verdicts_file")
    )
    folder = results_folder(benchmark, images_dir, verdicts_file, "data/08_reporting")
    report = project_path / folder / "report" / "index.html"
    print(f"\n{leaderboard_text(board, pairwise, effect)}")
    print(f"\nReport: {report}")
    print(
        "MLflow: mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db   (then open http://127.0.0.1:5000)\n"
    )
