"""The categories a sample is scored in, and the order they are shown in.

``text`` holds a sample's layer-1 questions; ``entity``, ``process`` and ``law`` hold its layer-2
questions of that track; a benchmark of one's own may name its own categories (shown after SciIR's);
``other`` holds questions of a verdicts file whose track is unknown. ``final`` is a sample's overall
result (``sciir.evaluation.scoring``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
import pandas as pd

CATEGORIES = ("text", "entity", "process", "law")
LAYER2_TRACKS = ("entity", "process", "law")
OTHER = "other"
FINAL = "final"
# What a sample is scored in, as the leaderboard shows it: ``final``, then each category.
SCORE_CATEGORIES = (FINAL, *CATEGORIES)


def is_unset(value: object) -> bool:
    """True for None, NA and NaN: a result or a label that has no value."""
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def question_category(verdicts: pd.DataFrame) -> pd.Series:
    """Each verdict row's category: ``text`` for layer 1, else its track, SciIR's or a benchmark's own
    category name (``other`` when it has none)."""
    tracks = verdicts["track"].where(verdicts["track"].notna() & (verdicts["track"] != ""), OTHER)
    return pd.Series(np.where(verdicts["layer"] == 1, "text", tracks.astype(str)), index=verdicts.index)


def extra_categories(names: Iterable[str]) -> list[str]:
    """The category names among ``names`` beyond SciIR's (a benchmark's own), in name order."""
    return sorted({str(name) for name in names} - {*SCORE_CATEGORIES, OTHER})


def labelled_tracks(benchmark: pd.DataFrame) -> dict[str, list[str]]:
    """Per benchmark sample, the Layer-2 tracks of its labels (column ``tracks``: a list or a JSON list;
    SciIR's tracks or a benchmark's own categories); empty when the benchmark has no such column (then
    only tracks with questions are required)."""
    if "tracks" not in benchmark.columns:
        return {}
    labelled: dict[str, list[str]] = {}
    for sample_id, value in zip(benchmark["sample_id"], benchmark["tracks"], strict=True):
        tracks = json.loads(value) if isinstance(value, str) else ([] if is_unset(value) else list(value))
        labelled[str(sample_id)] = [str(track) for track in tracks if str(track) not in ("text", FINAL)]
    return labelled


def category_order(names: Iterable[str]) -> dict[str, int]:
    """Rank of each category present in ``names``: SciIR's first (final, text, entity, process, law), then
    a benchmark's own in name order, then ``other``."""
    present = {str(name) for name in names}
    order = [*SCORE_CATEGORIES, *extra_categories(present), OTHER]
    return {name: rank for rank, name in enumerate(name for name in order if name in present)}
