"""The paired comparisons in words and in the report: the matrix seen from each row's model, the lines under
the leaderboard, the detectable difference per group, ranks with their intervals, and escaping."""

from __future__ import annotations

import pandas as pd
from lxml import html

from sciir.evaluation.comparison_text import (
    comparisons_text,
    detectable_text,
    interval_points,
    not_separated_text,
    points,
    rank_words,
)
from sciir.evaluation.comparisons import pairwise_table, with_rank_intervals
from sciir.evaluation.leaderboard_text import format_leaderboard, leaderboard_text
from sciir.evaluation.params import ComparisonParams
from sciir.evaluation.report import leaderboard_table, render_report
from sciir.evaluation.report_comparisons import comparison_sections
from sciir.evaluation.report_views import ImageViews
from sciir.evaluation.tracks import SCORE_CATEGORIES
from sciir.stats.bootstrap import BootstrapConfig

BOOT = BootstrapConfig(n_boot=200, seed=0)
ODD = "<b>odd</b>"  # a model folder named so: shown as text, never as markup


def finals(model: str, passed: list[float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "aggregation": "sciir_veto",
            "model": model,
            "sample_id": [f"s{i:02d}" for i in range(len(passed))],
            "group": ["All_Three", "Entity_Law"] * (len(passed) // 2),
            "setting": "instruction_following",
            "track": "final",
            "score": [float("nan") if value is None else value for value in passed],
            "weight": [0.0 if value is None else 1.0 for value in passed],
        }
    )


def example() -> tuple[pd.DataFrame, pd.DataFrame]:
    """strong passes 30 of 40, weak 10 (a subset of strong's), ODD 11 (weak's and one more), none nothing
    judged; the reference is never compared."""
    scores = pd.concat(
        [
            finals("strong", [1.0] * 30 + [0.0] * 10),
            finals("weak", [1.0] * 10 + [0.0] * 30),
            finals(ODD, [1.0] * 11 + [0.0] * 29),
            finals("none", [None] * 40),
            finals("reference_renderer", [1.0] * 40),
        ],
        ignore_index=True,
    )
    models = ["strong", ODD, "weak", "none", "reference_renderer"]
    board = pd.DataFrame(
        {
            "aggregation": "sciir_veto",
            "model": models,
            "role": ["contestant"] * 4 + ["reference"],
            "rank": pd.array([1, 2, 3, pd.NA, pd.NA], dtype="Int64"),
            "final": [0.75, 0.275, 0.25, float("nan"), 1.0],
            "coverage": 1.0,
            "n_samples": 40,
        }
    )
    for track in SCORE_CATEGORIES:
        board[f"{track}_lo"], board[f"{track}_hi"], board[f"{track}_n"] = board["final"], board["final"], 40
        board[track] = board["final"]
    board["checklist_defects"] = 0
    pairwise = pairwise_table(scores, board, ComparisonParams(), BOOT)
    return with_rank_intervals(board, scores, pairwise, BOOT), pairwise


def test_the_lines_under_the_leaderboard_name_the_verdict_the_evidence_and_the_coverage():
    board, pairwise = example()
    text = comparisons_text(pairwise, "sciir_veto")
    assert "exact McNemar test" in text and "Holm's correction over 3 pairs" in text
    assert "strong vs weak: strong better than weak: +50.0 points [" in text
    assert "40 samples shared, 0 left out" in text
    assert f"{ODD} vs weak: no detectable difference: +2.5 points" in text
    assert (
        "strong vs none: not tested: no sample scored for both models (0 samples shared, 40 left out)" in text
    )
    assert not_separated_text(board) == (
        "Ranks not told apart (the paired test of final finds no detectable difference, or the two share no "
        f"scored sample): {ODD} and weak."
    )
    detectable = detectable_text(pairwise)
    assert detectable.splitlines()[1].startswith("  all samples: ")
    assert "points (40 of 40 samples shared" in detectable and "alpha 0.05 / 3" in detectable


def test_the_leaderboard_shows_ranks_with_intervals():
    board, pairwise = example()
    lines = format_leaderboard(board).splitlines()
    assert lines[0].split()[:2] == ["rank", "model"]
    assert lines[1].split()[:4] == ["1", "[1,", "1]", "strong"]
    assert lines[4].split()[:2] == ["-", "none"]  # no rank, no interval
    text = leaderboard_text(board, pairwise)
    assert "rank [bootstrap interval]" in text and "Smallest difference of final pass rate" in text
    assert rank_words(2, 2, 3) == "2 [2, 3]" and rank_words(pd.NA, pd.NA, pd.NA) == "-"
    assert (points(0.125), points(-0.0), points(-0.0004), interval_points(-1.0, -0.0)) == (
        "+12.5", "+0.0", "+0.0", "[-100.0, +0.0]"
    )  # fmt: skip


def test_the_report_shows_the_matrix_from_each_rows_side_escaped():
    board, pairwise = example()
    sections = comparison_sections(pairwise, {"sciir_veto": "pass rate (strict veto)"})
    folder = render_report(
        [leaderboard_table("Leaderboard", board), *sections], ImageViews({}, {}, {}, {}), {"judge": "offline"}
    )
    page = folder.pages["index.html"]
    assert ODD not in page and "&lt;b&gt;odd&lt;/b&gt;" in page
    doc = html.fromstring(page)
    matrix = doc.xpath("//table[@class='comparisons']")[0]
    assert [th.text_content() for th in matrix.xpath(".//thead//th")] == [
        "row vs column",
        "strong",
        ODD,
        "weak",
        "none",
    ]
    cells = {
        (row.xpath("./th")[0].text_content(), index): cell
        for row in matrix.xpath(".//tbody/tr")
        for index, cell in enumerate(row.xpath("./td"))
    }
    assert cells[("strong", 2)].get("class") == "comparison better"
    assert cells[("strong", 2)].xpath(".//strong")[0].text == "better"
    assert "+50.0 points" in cells[("strong", 2)].text_content()
    assert (
        cells[("weak", 0)].get("class") == "comparison worse"
        and "-50.0 points" in cells[("weak", 0)].text_content()
    )
    assert cells[(ODD, 2)].get("class") == "comparison same"
    assert cells[("none", 0)].get("class") == "comparison untested"
    assert cells[("strong", 0)].get("class") == "comparison self"
    assert (
        "Holm's correction over the 3 pairs tested"
        in doc.xpath("//p[contains(@class, 'comparison-note')]")[0].text
    )
    leader = doc.xpath("//table[@class='summary']")[0]
    assert [th.text for th in leader.xpath(".//th")][:2] == ["rank [interval]", "model"]
    assert f"{ODD}" in leader.text_content()  # not separated from weak, shown as text
    titles = [h2.text_content() for h2 in doc.xpath("//h2")]
    assert any(title.startswith("Paired comparisons per track, group and setting") for title in titles)
    assert any(title.startswith("What the benchmark can detect") for title in titles)
