import math

import pandas as pd

from sciir.summary import format_leaderboard


def test_rates_print_as_percentages_and_unjudged_as_a_dash():
    board = pd.DataFrame(
        [
            {
                "model": "programmatic",
                "final": 0.8333,
                "text": 0.8333,
                "entity": math.nan,
                "coverage": 0.44,
                "n_samples": 24,
            },
            {
                "model": "noise",
                "final": 0.0,
                "text": 0.0,
                "entity": math.nan,
                "coverage": 0.44,
                "n_samples": 24,
            },
        ]
    )
    lines = format_leaderboard(board).splitlines()
    assert lines[0].split() == ["model", "final", "text", "entity", "coverage", "n_samples"]
    assert lines[1].split() == ["programmatic", "83.3%", "83.3%", "-", "44.0%", "24"]
    assert lines[2].split() == ["noise", "0.0%", "0.0%", "-", "44.0%", "24"]


def test_rates_carry_their_interval_when_the_board_has_one():
    board = pd.DataFrame(
        [
            {
                "model": "programmatic",
                "final": 0.8333, "final_lo": 0.7083, "final_hi": 0.9583,
                "text": math.nan, "text_lo": math.nan, "text_hi": math.nan,
                "coverage": 0.44, "coverage_text": 0.5, "n_samples": 24, "aggregation": "sciir_veto",
            }
        ]
    )  # fmt: skip
    lines = format_leaderboard(board).splitlines()
    assert lines[0].split() == ["model", "final", "text", "coverage", "n_samples"]
    assert lines[1].split() == ["programmatic", "83.3%", "[70.8,", "95.8]", "-", "44.0%", "24"]
