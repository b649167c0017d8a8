import math

import pandas as pd

from sciir.evaluation.leaderboard_text import coverage_note, format_leaderboard, leaderboard_text


def board_row(model: str, final: float, text: float, coverage: float, **more) -> dict:
    return {"model": model, "final": final, "text": text, "coverage": coverage, "n_samples": 24} | more


def test_rates_print_as_percentages_and_nothing_scored_as_na():
    board = pd.DataFrame(
        [
            board_row(
                "programmatic", 0.8333, 0.8333, 0.44, final_n=24, text_n=24, entity=math.nan, entity_n=0
            ),
            board_row("noise", 0.0, 0.0, 0.44, final_n=20, text_n=24, entity=math.nan, entity_n=0),
        ]
    )
    lines = format_leaderboard(board).splitlines()
    assert lines[0].split() == ["model", "final", "text", "entity", "process", "law", "coverage", "n_samples"]
    expected = ["programmatic", "83.3%", "n=24", "83.3%", "n=24", "n/a", "n=0", "n/a", "n/a", "44.0%", "24"]
    assert lines[1].split() == expected
    assert lines[2].split()[:5] == ["noise", "0.0%", "n=20", "0.0%", "n=24"]


def test_rates_carry_their_interval_and_samples_counted():
    board = pd.DataFrame(
        [
            board_row(
                "programmatic", 0.8333, math.nan, 0.44,
                final_lo=0.7083, final_hi=0.9583, final_n=23, text_lo=math.nan, text_hi=math.nan, text_n=0,
            )
        ]
    )  # fmt: skip
    cells = format_leaderboard(board).splitlines()[1].split()
    assert cells[:7] == ["programmatic", "83.3%", "[70.8,", "95.8]", "n=23", "n/a", "n=0"]
    assert cells[-2:] == ["44.0%", "24"]


def test_partial_coverage_is_said_in_words_per_rule_block():
    board = pd.DataFrame(
        [
            board_row("a", 0.5, 0.5, 0.439, aggregation="sciir_veto"),
            board_row("b", 1.0, 1.0, 1.0, aggregation="sciir_veto"),
            board_row("a", 0.7, 0.7, 0.439, aggregation="tifa"),
        ]
    )
    note = coverage_note(board)
    assert note is not None and "below 100% for a 43.9%" in note and "b " not in note
    text = leaderboard_text(board)
    assert "strict veto pass rates" in text and "TIFA scores" in text and text.endswith(note)
    assert coverage_note(board[board.model == "b"]) is None
