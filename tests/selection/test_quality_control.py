"""Statistical quality control (SciIR C.1) on hand-made candidate tables: the term-density threshold, the
IQR quartiles and bounds, the text lengths, and the cascade with its counts."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sciir.selection.quality_control import (
    density_filter,
    iqr_filter,
    quality_control,
    rendered_text_length,
    retained_text_length,
)


def _pool(term_counts: list[int]) -> pd.DataFrame:
    return pd.DataFrame(
        {"sample_id": [f"s{i:02d}" for i in range(len(term_counts))], "term_count": term_counts}
    )


def _candidate(sample_id: str, n_terms: int, text_length: int, quoted: bool = True) -> dict:
    """A candidate whose one required string has ``text_length`` characters, quoted or not by its prompt."""
    text = "x" * text_length
    return {
        "sample_id": sample_id,
        "term_count": n_terms,
        "required_text": json.dumps([text]),
        "abstract_prompt": f'A diagram showing "{text}".' if quoted else f"A diagram showing {text}.",
    }


def test_density_needs_more_than_three_terms() -> None:
    kept, note = density_filter(_pool([2, 3, 4, 5]), min_terms=4)
    assert list(kept["term_count"]) == [4, 5]
    assert note == "term-density filter kept 2 of 4 candidates with 4 terms or more"


def test_iqr_keeps_the_linearly_interpolated_quartile_range() -> None:
    # 1..11: Q1 = 3.5 and Q3 = 8.5 by linear interpolation; other quartile rules keep 3 or 9 as well.
    kept, note = iqr_filter(_pool(list(range(1, 12))), "term_count", min_samples=4)
    assert list(kept["term_count"]) == [4, 5, 6, 7, 8]
    assert note == "IQR filter on term_count kept 5 of 11 candidates in [3.5, 8.5]"


def test_iqr_bounds_are_inclusive() -> None:
    kept, _ = iqr_filter(_pool([1, 2, 3, 4, 5]), "term_count", min_samples=4)  # Q1 = 2, Q3 = 4
    assert list(kept["term_count"]) == [2, 3, 4]


def test_iqr_runs_from_min_samples_and_skips_below() -> None:
    values = [1, 2, 3, 4, 5]
    kept, _ = iqr_filter(_pool(values), "term_count", min_samples=5)
    assert len(kept) == 3
    kept, note = iqr_filter(_pool(values), "term_count", min_samples=6)
    assert list(kept["term_count"]) == values
    assert note == "IQR filter on term_count skipped: 5 candidates, fewer than iqr_min_samples=6"


def test_rendered_text_counts_each_required_string_once() -> None:
    assert rendered_text_length(json.dumps(["Vin", "R1", "Vin", "Oxygen release"])) == 3 + 2 + 14
    assert rendered_text_length(None) == 0 and rendered_text_length("[]") == 0


def test_retained_text_counts_the_required_strings_the_prompt_still_quotes() -> None:
    required = json.dumps(["Vin", "R1", "R", "Oxygen"])
    prompt = 'A circuit with "Vin" and \u201cR1\u201d; Oxygen is not quoted, nor is R alone.'
    assert retained_text_length(required, prompt) == len("Vin") + len("R1")
    assert retained_text_length(required, None) == 0


@pytest.fixture
def cascade_pool() -> pd.DataFrame:
    # After density (4 terms or more) ten remain with 4, 5 x7, 6 and 30 terms: Q1 = Q3 = 5 keeps the seven
    # with 5. Their rendered lengths 10..70 give [25, 55]: 30, 40, 50 stay (the long texts of the dropped
    # candidates would have widened the range). Of those, the one with 40 is not quoted by its prompt:
    # retained 30, 0, 50 give [15, 40], which keeps the one with 30.
    rows = [_candidate("few-terms", 3, 40)]
    rows += [_candidate(f"kept-{length}", 5, length, quoted=length != 40) for length in range(10, 80, 10)]
    rows += [_candidate(f"outlier-{n}", n, 1000) for n in (4, 6, 30)]
    return pd.DataFrame(rows)


def test_the_cascade_filters_each_on_what_the_previous_left_and_counts(cascade_pool: pd.DataFrame) -> None:
    notes: list[str] = []
    kept, counts = quality_control(cascade_pool, min_terms=4, iqr=True, min_samples=3, log=notes.append)
    assert list(kept["sample_id"]) == ["kept-30"]
    assert counts == {
        "candidates_before": 11,
        "after_density": 10,
        "after_iqr_terms": 7,
        "after_iqr_rendered_text": 3,
        "after_iqr_retained_text": 1,
    }
    assert len(notes) == 4
    assert "rendered_text_length kept 3 of 7 candidates in [25, 55]" in notes[2]
    assert "retained_text_length kept 1 of 3 candidates in [15, 40]" in notes[3]


def test_with_the_iqr_filters_off_only_density_filters(cascade_pool: pd.DataFrame) -> None:
    kept, counts = quality_control(cascade_pool, min_terms=4, iqr=False, min_samples=3, log=lambda note: None)
    assert len(kept) == 10 and "few-terms" not in set(kept["sample_id"])
    assert counts["after_iqr_terms"] == counts["after_iqr_retained_text"] == 10
