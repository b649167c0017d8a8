"""Benchmark selection rules on hand-made annotation tables."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sciir.selection.benchmark import (
    assign_settings,
    benchmark_table,
    candidates,
    group_of,
    pick_per_group,
    shown_tracks,
    train_candidates,
    train_table,
)
from sciir.selection.quality_control import quality_control

TRACKS = ("entity", "process", "law")

LABELS = {
    "All_Three": (True, True, True),
    "Entity_Law": (True, False, True),
    "Law_Process": (False, True, True),
    "Entity_Process": (True, True, False),
    "entity_only": (True, False, False),
    "none": (False, False, False),
}


def _evidence(sample_id: str, shown: tuple[bool, bool, bool]) -> dict:
    """Per-track columns: a shown track has a term and a visualisation, any other track none."""
    columns = {}
    for track, on in zip(TRACKS, shown, strict=True):
        columns[f"terms_{track}"] = json.dumps([f"{sample_id}-{track}"] if on else [])
        columns[f"visualizations_{track}"] = json.dumps([f"drawn {track}"] if on else [])
    return columns


def _row(
    sample_id: str, kind: str, n_terms: int, status: str = "ok", shown: tuple[bool, bool, bool] | None = None
) -> dict:
    """An annotation row labelled as ``kind`` names; its drawing shows the same tracks unless ``shown``."""
    entity, process, law = LABELS[kind]
    terms = [f"{sample_id}-term{i}" for i in range(n_terms)]
    return {
        **_evidence(sample_id, LABELS[kind] if shown is None else shown),
        "sample_id": sample_id,
        "score_entity": 9 if entity else 2,
        "score_process": 9 if process else 2,
        "score_law": 9 if law else 2,
        "label_entity": entity,
        "label_process": process,
        "label_law": law,
        "terms": json.dumps(terms),
        "required_text": json.dumps(terms[:2]),
        "relations": json.dumps([terms[:2]] if n_terms >= 2 else []),
        "sci_rcot": f"rcot of {sample_id}",
        "abstract_prompt": f"abstract of {sample_id}",
        "status": status,
        "reason": None if status == "ok" else f"sample {sample_id}: reasoning failed",
    }


def _annotations(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    for track in ("entity", "process", "law"):
        frame[f"label_{track}"] = frame[f"label_{track}"].astype("boolean")
    return frame


def _checklists(sample_ids: list[str], layer: int = 1) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sample_id": sample_ids,
            "question_id": ["L1-01" if layer == 1 else "L2-entity-01"] * len(sample_ids),
            "layer": [layer] * len(sample_ids),
        }
    )


@pytest.fixture
def annotations() -> pd.DataFrame:
    rows = [
        _row("all-a", "All_Three", 2),
        _row("all-b", "All_Three", 5),
        _row("all-c", "All_Three", 6),
        _row("all-d", "All_Three", 9),
        _row("el-a", "Entity_Law", 3),
        _row("lp-a", "Law_Process", 4),
        _row("ep-a", "Entity_Process", 4),
        _row("ent-a", "entity_only", 7),
        _row("low-a", "none", 3),
        _row("fail-a", "All_Three", 5, status="failed"),
    ]
    return _annotations(rows)


def test_group_membership_is_the_exact_label_set() -> None:
    assert group_of({"entity", "process", "law"}) == "All_Three"
    assert group_of({"law", "entity"}) == "Entity_Law"
    assert group_of({"process", "law"}) == "Law_Process"
    assert group_of({"entity", "process"}) == "Entity_Process"
    assert group_of({"entity"}) is None
    assert group_of(set()) is None


def test_a_track_is_shown_only_with_terms_and_visualisations() -> None:
    row = _evidence("s", (True, True, False))
    assert shown_tracks(row) == {"entity", "process"}
    row["visualizations_process"] = "[]"  # terms without anything drawn: not shown
    row["terms_law"] = json.dumps(["V = I R"])  # ... nor the other way round
    assert shown_tracks(row) == {"entity"}
    assert shown_tracks({"terms": "[]"}) == frozenset()  # a table without per-track columns
    assert shown_tracks({"terms_entity": None, "visualizations_entity": None}) == frozenset()


def test_groups_come_from_the_tracks_drawn_not_from_the_labels() -> None:
    rows = [
        _row("labelled-three-drawn-two", "All_Three", 5, shown=(True, False, True)),
        _row("labelled-three-drawn-one", "All_Three", 5, shown=(False, False, True)),
        _row("labelled-one-drawn-two", "entity_only", 5, shown=(True, True, False)),
        _row("unlabelled-drawn-three", "none", 5, shown=(True, True, True)),
    ]
    annotations = _annotations(rows)
    pool = candidates(annotations, _checklists(list(annotations["sample_id"])), require_text_checks=True)
    groups = dict(zip(pool["sample_id"], pool["group"], strict=True))
    # Low-reasoning rows (no label) have no checklist or prompts, so they never reach the pool.
    assert groups == {"labelled-three-drawn-two": "Entity_Law", "labelled-one-drawn-two": "Entity_Process"}
    # The benchmark's tracks stay the labelled ones, which its checklist's layer 2 was written for.
    bench = benchmark_table(pick_per_group(pool, n_per_group=5, seed=0)).set_index("sample_id")
    assert json.loads(bench.loc["labelled-one-drawn-two", "tracks"]) == ["entity"]


def test_candidates_need_two_tracks_shown_ok_status_and_a_text_check(annotations: pd.DataFrame) -> None:
    ids = list(annotations["sample_id"])
    pool = candidates(annotations, _checklists(ids), require_text_checks=True)
    assert sorted(pool["sample_id"]) == ["all-a", "all-b", "all-c", "all-d", "el-a", "ep-a", "lp-a"]
    assert dict(zip(pool["sample_id"], pool["group"], strict=True))["all-d"] == "All_Three"
    assert dict(zip(pool["sample_id"], pool["term_count"], strict=True))["all-d"] == 9
    layer_two_only = candidates(annotations, _checklists(ids, layer=2), require_text_checks=True)
    assert layer_two_only.empty
    assert len(candidates(annotations, _checklists(ids, layer=2), require_text_checks=False)) == 7


def test_settings_split_at_the_group_median(annotations: pd.DataFrame) -> None:
    pool = candidates(annotations, _checklists(list(annotations["sample_id"])), True)
    bench = benchmark_table(pick_per_group(pool, n_per_group=10, seed=0))
    settings = dict(zip(bench["sample_id"], bench["setting"], strict=True))
    # All_Three term counts 2, 5, 6, 9: median 5.5
    assert settings["all-a"] == settings["all-b"] == "intrinsic_reasoning"
    assert settings["all-c"] == settings["all-d"] == "instruction_following"
    assert settings["el-a"] == "instruction_following"  # a group of one sits at its own median
    prompts = dict(zip(bench["sample_id"], bench["prompt"], strict=True))
    assert prompts["all-a"] == "abstract of all-a"
    assert prompts["all-d"] == "rcot of all-d"
    plan = json.loads(bench.set_index("sample_id").loc["all-b", "plan"])
    assert plan == {"labels": ["all-b-term0", "all-b-term1"], "edges": [["all-b-term0", "all-b-term1"]]}


def test_draw_is_capped_seeded_and_independent_of_row_order() -> None:
    rows = [_row(f"s{i:02d}", "Entity_Process", 4) for i in range(30)]
    ids = [r["sample_id"] for r in rows]
    forward = candidates(_annotations(rows), _checklists(ids), True)
    backward = candidates(_annotations(rows[::-1]), _checklists(ids), True)
    first = pick_per_group(forward, n_per_group=5, seed=3)
    assert len(first) == 5
    assert sorted(first["sample_id"]) == sorted(pick_per_group(backward, n_per_group=5, seed=3)["sample_id"])
    assert sorted(first["sample_id"]) != sorted(pick_per_group(forward, n_per_group=5, seed=4)["sample_id"])


def test_settings_with_ties_at_the_median_go_to_instruction_following() -> None:
    selected = pd.DataFrame(
        {
            "group": ["Entity_Law"] * 5 + ["Law_Process"] * 4,
            # Entity_Law: median 5, three samples tie on it; Law_Process: median 5.5, none on it.
            "term_count": [4, 5, 5, 5, 9, 4, 5, 6, 7],
        }
    )
    settings = list(assign_settings(selected))
    assert settings[:5] == ["intrinsic_reasoning"] + ["instruction_following"] * 4
    assert settings[5:] == ["intrinsic_reasoning"] * 2 + ["instruction_following"] * 2


def test_settings_split_at_the_median_of_each_group_after_the_filters() -> None:
    # All_Three term counts 2, 2, 2, 4, 4, 5, 6, 6, 6, 30: median 4.5 before the filters. Density (3 terms
    # or more) drops the 2s, the IQR filter the 30, leaving 4, 4, 5, 6, 6, 6: median 5.5, so the sample
    # with 5 terms is intrinsic reasoning. Entity_Law's 4, 4, 4 sit at their own group's median.
    counts = {"all": [2, 2, 2, 4, 4, 5, 6, 6, 6, 30], "el": [4, 4, 4]}
    rows = [_row(f"all-{i}", "All_Three", n) for i, n in enumerate(counts["all"])]
    rows += [_row(f"el-{i}", "Entity_Law", n) for i, n in enumerate(counts["el"])]
    annotations = _annotations(rows)
    pool = candidates(annotations, _checklists(list(annotations["sample_id"])), True)
    kept, _ = quality_control(pool, min_terms=3, iqr=True, min_samples=4, log=lambda note: None)
    bench = benchmark_table(pick_per_group(kept, n_per_group=20, seed=0)).set_index("sample_id")
    assert set(bench.index) == {f"all-{i}" for i in range(3, 9)} | {"el-0", "el-1", "el-2"}
    settings = bench["setting"]
    assert settings["all-5"] == "intrinsic_reasoning"
    assert settings["all-3"] == settings["all-4"] == "intrinsic_reasoning"
    assert set(settings[["all-6", "all-7", "all-8"]]) == {"instruction_following"}
    assert set(settings[["el-0", "el-1", "el-2"]]) == {"instruction_following"}


def test_train_candidates_exclude_the_benchmark_and_the_table_prompts_them(annotations: pd.DataFrame) -> None:
    candidates_ids = train_candidates(annotations, ["all-a", "el-a"])
    assert candidates_ids == ["all-b", "all-c", "all-d", "ent-a", "ep-a", "lp-a"]
    train = train_table(annotations, candidates_ids[1:], "data/03_primary/images/")
    assert list(train["sample_id"]) == candidates_ids[1:]
    row = train.set_index("sample_id").loc["ent-a"]
    assert row["prompt"] == "rcot of ent-a"
    assert row["image_path"] == "data/03_primary/images/ent-a.png"


def test_no_candidates_give_an_empty_benchmark_with_the_contract_columns(annotations: pd.DataFrame) -> None:
    pool = candidates(annotations.iloc[0:0], _checklists([]), require_text_checks=True)
    bench = benchmark_table(pick_per_group(pool, n_per_group=5, seed=0))
    assert bench.empty
    assert list(bench.columns) == ["sample_id", "group", "setting", "tracks", "term_count", "prompt", "plan"]
