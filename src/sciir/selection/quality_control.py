"""Statistical quality control of SciIR appendix C.1, applied to benchmark candidates in this order:

1. term density: more than three scientific terms (``min_terms``, 4 by default);
2. IQR on the term count: keep [Q1, Q3], dropping overly simple and cluttered figures;
3. secondary IQR on the rendered text length;
4. secondary IQR on the retained text length.

The paper names the two secondary lengths ``rendered_text_stage2`` and ``retained_text_stage3``. Here they
are measured on annotate's columns, stage 2 being its reasoning task and stage 3 its abstract prompt:

- rendered text length: characters of the strings in ``required_text`` (the text the reasoning task says
  the image renders and a redrawing must reproduce);
- retained text length: characters of those strings that the ``abstract_prompt`` still quotes exactly.
  Annotate writes no retained-text column of its own; the abstract-prompt task is told to keep every
  required string quoted exactly, so the quoted strings are the nearest honest measure of what it kept.

Each IQR filter takes its quartiles from the candidates the previous filter left (a cascade: the counts
after each filter are the selection's metrics) and skips, with its log note, below ``min_samples``
candidates, where quartiles are noise. Quartiles are pandas' default (linear interpolation).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pandas as pd

RENDERED_TEXT_LENGTH = "rendered_text_length"
RETAINED_TEXT_LENGTH = "retained_text_length"
# The IQR filters in cascade order: the column each filters on, and the name of its count in the metrics.
IQR_STEPS = (
    ("term_count", "after_iqr_terms"),
    (RENDERED_TEXT_LENGTH, "after_iqr_rendered_text"),
    (RETAINED_TEXT_LENGTH, "after_iqr_retained_text"),
)
FilterResult = tuple[pd.DataFrame, str]


def _strings(value: object) -> list[str]:
    return [str(item) for item in json.loads(value)] if isinstance(value, str) and value else []


def rendered_text_length(required_text: object) -> int:
    """Characters of the text the image renders (``required_text``, a JSON list; repeats counted once)."""
    return sum(len(text) for text in dict.fromkeys(_strings(required_text)))


def retained_text_length(required_text: object, abstract_prompt: object) -> int:
    """Characters of the rendered strings that the abstract prompt still quotes exactly, in straight or
    typographic double quotes."""
    prompt = abstract_prompt if isinstance(abstract_prompt, str) else ""
    kept = [
        text
        for text in dict.fromkeys(_strings(required_text))
        if f'"{text}"' in prompt or f"\u201c{text}\u201d" in prompt
    ]
    return sum(len(text) for text in kept)


def with_text_lengths(pool: pd.DataFrame) -> pd.DataFrame:
    """``pool`` with its rendered and retained text lengths (from required_text and abstract_prompt)."""
    return pool.assign(
        **{
            RENDERED_TEXT_LENGTH: [rendered_text_length(text) for text in pool["required_text"]],
            RETAINED_TEXT_LENGTH: [
                retained_text_length(text, prompt)
                for text, prompt in zip(pool["required_text"], pool["abstract_prompt"], strict=True)
            ],
        }
    )


def density_filter(pool: pd.DataFrame, min_terms: int) -> FilterResult:
    """Keep candidates with at least ``min_terms`` terms (the paper's "more than three" is 4)."""
    kept = pool[pool["term_count"] >= min_terms]
    return (
        kept,
        f"term-density filter kept {len(kept)} of {len(pool)} candidates with {min_terms} terms or more",
    )


def iqr_filter(pool: pd.DataFrame, column: str, min_samples: int) -> FilterResult:
    """Keep ``column`` within [Q1, Q3] of ``pool``; skipped below ``min_samples`` candidates."""
    if len(pool) < min_samples:
        return (
            pool,
            f"IQR filter on {column} skipped: {len(pool)} candidates, "
            f"fewer than iqr_min_samples={min_samples}",
        )
    q1, q3 = pool[column].quantile([0.25, 0.75])
    kept = pool[pool[column].between(q1, q3)]
    return kept, f"IQR filter on {column} kept {len(kept)} of {len(pool)} candidates in [{q1:g}, {q3:g}]"


def quality_control(
    pool: pd.DataFrame, min_terms: int, iqr: bool, min_samples: int, log: Callable[[str], None]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """The C.1 cascade on ``pool`` (needs term_count, required_text and abstract_prompt): the candidates
    left, and the count before and after each filter (an IQR filter that is off keeps all). ``log`` gets
    each filter's note."""
    counts = {"candidates_before": len(pool)}
    pool, note = density_filter(with_text_lengths(pool), min_terms)
    log(note)
    counts["after_density"] = len(pool)
    for column, count_name in IQR_STEPS:
        if iqr:
            pool, note = iqr_filter(pool, column, min_samples)
            log(note)
        counts[count_name] = len(pool)
    return pool, counts
