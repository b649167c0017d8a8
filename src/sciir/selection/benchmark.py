"""Benchmark selection of SciIR appendix C, and the train split (its leakage control: ``sciir.selection.leakage``).

Candidates are labelled annotated samples that show at least two tracks: "samples are assigned to semiotic
groups only when they contain non-empty terms and visualization data in at least two tracks" (C.2), read
from annotate's per-track columns ``terms_<track>`` and ``visualizations_<track>``; a track only the
caption or the label scores name does not count. Statistical quality control (C.1: term density and IQR
filters) is ``sciir.selection.quality_control``. Each candidate joins the group named by the exact set of tracks it
shows; up to ``n_per_group`` per group are drawn by a seeded hash, independent of row order; within each group, samples below the median term count of the group's drawn samples (after the
filters) get the abstract prompt (intrinsic reasoning), the others, ties at the median included, the
Sci-RCoT (instruction following) (C.3).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

import pandas as pd

from sciir.tasks.annotation import TRACKS

GROUPS: dict[frozenset[str], str] = {
    frozenset({"entity", "process", "law"}): "All_Three",
    frozenset({"entity", "law"}): "Entity_Law",
    frozenset({"law", "process"}): "Law_Process",
    frozenset({"entity", "process"}): "Entity_Process",
}
GROUP_NAMES = tuple(GROUPS.values())
INSTRUCTION_FOLLOWING = "instruction_following"
INTRINSIC_REASONING = "intrinsic_reasoning"
SETTINGS = (INSTRUCTION_FOLLOWING, INTRINSIC_REASONING)
BENCHMARK_COLUMNS = ("sample_id", "group", "setting", "tracks", "term_count", "prompt", "plan")
TRAIN_COLUMNS = ("sample_id", "prompt", "image_path")


def _is_on(label: Any) -> bool:
    return label is not None and not pd.isna(label) and bool(label)


def active_tracks(row: Mapping[Hashable, object]) -> frozenset[str]:
    """The tracks whose label is on in an ``annotations`` row (a null label is off)."""
    return frozenset(track for track in TRACKS if _is_on(row.get(f"label_{track}")))


def group_of(tracks: Iterable[str]) -> str | None:
    """The semiotic group of a set of tracks; None with fewer than two."""
    return GROUPS.get(frozenset(tracks))


def _json_list(value: object) -> list:
    return json.loads(value) if isinstance(value, str) else []


def shown_tracks(row: Mapping[Hashable, object]) -> frozenset[str]:
    """The tracks an ``annotations`` row has non-empty terms and visualisations for (C.2); a row without
    the per-track columns (an older table) shows none."""
    return frozenset(
        track
        for track in TRACKS
        if _json_list(row.get(f"terms_{track}")) and _json_list(row.get(f"visualizations_{track}"))
    )


def labelled(annotations: pd.DataFrame) -> pd.DataFrame:
    """``ok`` rows with at least one label, with their active tracks as a column."""
    ok = annotations[annotations["status"] == "ok"].copy()
    # A column of frozensets (an object column): pandas-stubs types a column's values as scalars.
    ok["tracks"] = [active_tracks(row) for row in ok.to_dict("records")]  # type: ignore[assignment]
    return ok.loc[ok["tracks"].astype(bool)]


def candidates(
    annotations: pd.DataFrame, checklists: pd.DataFrame, require_text_checks: bool
) -> pd.DataFrame:
    """Samples that may enter the benchmark: labelled, a group (terms and visualisations in two tracks or
    more), both prompts, a checklist, and when required a text-rendering check (layer 1). Adds ``group``
    and ``term_count``."""
    pool = labelled(annotations)
    pool["group"] = [group_of(shown_tracks(row)) for row in pool.to_dict("records")]
    pool["term_count"] = pool["terms"].map(lambda terms: len(_json_list(terms)))
    questions = checklists[checklists["layer"] == 1] if require_text_checks else checklists
    eligible = (
        pool["group"].notna()
        & pool["sci_rcot"].notna()
        & pool["abstract_prompt"].notna()
        & pool["sample_id"].isin(set(questions["sample_id"]))
    )
    return pool[eligible]


def draw_order(sample_id: str, seed: int) -> str:
    """A seeded, order-independent sort key: the same seed draws the same samples from any row order."""
    return hashlib.sha256(f"{seed}:{sample_id}".encode()).hexdigest()


def pick_per_group(pool: pd.DataFrame, n_per_group: int, seed: int) -> pd.DataFrame:
    """Up to ``n_per_group`` samples of each group, drawn deterministically."""
    ranked = pool.assign(_draw=pool["sample_id"].map(lambda sid: draw_order(sid, seed)))
    ranked = ranked.sort_values(["group", "_draw"])
    return ranked.groupby("group", sort=True).head(n_per_group).drop(columns="_draw")


def assign_settings(selected: pd.DataFrame) -> pd.Series:
    """Per sample, intrinsic reasoning below the median term count of its group in ``selected``, else
    (at the median or above) instruction following."""
    median = selected.groupby("group")["term_count"].transform("median")
    return (selected["term_count"] < median).map({True: INTRINSIC_REASONING, False: INSTRUCTION_FOLLOWING})


def plan_json(required_text: object, relations: object) -> str:
    """The structured plan a planner-aware generator draws from: labels and directed edges."""
    return json.dumps(
        {"labels": _json_list(required_text), "edges": _json_list(relations)}, ensure_ascii=False
    )


def benchmark_table(selected: pd.DataFrame) -> pd.DataFrame:
    """The ``benchmark`` table: group, labelled tracks, setting, the setting's prompt and the plan of each
    sample."""
    if selected.empty:
        return pd.DataFrame(columns=list(BENCHMARK_COLUMNS))
    table = selected.assign(setting=assign_settings(selected))
    table["prompt"] = table["abstract_prompt"].where(
        table["setting"] == INTRINSIC_REASONING, table["sci_rcot"]
    )
    table["plan"] = [plan_json(t, r) for t, r in zip(table["required_text"], table["relations"], strict=True)]
    # The labelled tracks, which the strict veto requires of every sample (``sciir.evaluation.scoring``).
    table["tracks"] = [
        json.dumps([track for track in TRACKS if track in tracks]) for tracks in table["tracks"]
    ]
    table["term_count"] = table["term_count"].astype(int)
    ordered = table.sort_values(["group", "setting", "sample_id"])
    return ordered[list(BENCHMARK_COLUMNS)].reset_index(drop=True)


def train_candidates(annotations: pd.DataFrame, benchmark_ids: Iterable[str]) -> list[str]:
    """Every labelled ``ok`` sample outside the benchmark (before leakage control, ``sciir.selection.leakage``)."""
    held_out = set(benchmark_ids)
    return sorted(sid for sid in labelled(annotations)["sample_id"] if sid not in held_out)


def train_table(annotations: pd.DataFrame, sample_ids: Iterable[str], image_dir: str) -> pd.DataFrame:
    """The train split of ``sample_ids``, each prompted by its Sci-RCoT, in sample order."""
    wanted = set(sample_ids)
    pool = labelled(annotations)
    train = pool[pool["sample_id"].isin(wanted)].sort_values("sample_id")
    return pd.DataFrame(
        {
            "sample_id": train["sample_id"],
            "prompt": train["sci_rcot"],
            "image_path": [f"{image_dir.rstrip('/')}/{sid}.png" for sid in train["sample_id"]],
        },
        columns=list(TRAIN_COLUMNS),
    ).reset_index(drop=True)
