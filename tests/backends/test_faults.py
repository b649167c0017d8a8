"""Faults planted in a plan: deterministic per sample, visible, and recorded exactly."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from sciir.backends.plan_faults import (
    DrawingPlan,
    FaultConfig,
    drop_nodes,
    misspell_labels,
    misspellings,
    plant_faults,
    reverse_edges,
)

PLAN = DrawingPlan(
    labels=("Sample", "Centrifuge", "Supernatant", "Pellet"),
    edges=(("Sample", "Centrifuge"), ("Centrifuge", "Supernatant"), ("Centrifuge", "Pellet")),
)
ALL_FAULTS = FaultConfig(misspell_labels=1, reverse_edges=1, drop_nodes=1, seed=0)


def test_misspellings_keep_the_word_recognisable_but_wrong() -> None:
    spellings = misspellings("Input image")
    assert spellings
    for spelling in spellings:
        assert spelling != "Input image"
        assert spelling.endswith(" image")  # the longest word is edited, the rest kept
        assert spelling.startswith("I") and spelling[len(spelling.split()[0]) - 1] == "t"
    assert "Ipnut image" in spellings and "Iput image" in spellings


def test_misspellings_skip_no_op_swaps_and_short_words() -> None:
    assert "Pellet" not in misspellings("Pellet")  # swapping the two l's would change nothing
    assert misspellings("pH") == []
    assert misspellings("A1 B2") == []


def test_drop_nodes_removes_the_node_and_its_edges_but_keeps_one_label() -> None:
    plan, faults = drop_nodes(PLAN, 1, random.Random(3))
    (dropped,) = [fault["label"] for fault in faults]
    assert faults == [{"kind": "drop_node", "label": dropped}]
    assert dropped not in plan.labels and len(plan.labels) == 3
    assert all(dropped not in edge for edge in plan.edges)
    assert len(plan.edges) == sum(dropped not in edge for edge in PLAN.edges)

    everything, faults = drop_nodes(PLAN, 10, random.Random(0))
    assert len(everything.labels) == 1 and len(faults) == 3 and everything.edges == ()


def test_reverse_edges_only_where_the_change_is_visible() -> None:
    plan = DrawingPlan(labels=("A", "B", "C"), edges=(("A", "A"), ("A", "B"), ("B", "A"), ("B", "C")))
    reversed_plan, faults = reverse_edges(plan, 5, random.Random(0))
    assert faults == [{"kind": "reverse_edge", "edge": ["B", "C"]}]
    assert reversed_plan.edges == (("A", "A"), ("A", "B"), ("B", "A"), ("C", "B"))


def test_misspell_renames_the_label_in_edges_and_never_merges_nodes() -> None:
    plan = DrawingPlan(labels=("Cat", "Ct", "Dog"), edges=(("Cat", "Dog"),))
    for seed in range(5):  # "Cat" could only become "Ct", another node, so "Dog" is the one
        misspelled, faults = misspell_labels(plan, 1, random.Random(seed))
        assert faults == [{"kind": "misspell", "label": "Dog", "drawn": "Dg"}]
        assert misspelled == DrawingPlan(labels=("Cat", "Ct", "Dg"), edges=(("Cat", "Dg"),))

    misspelled, faults = misspell_labels(PLAN, 2, random.Random(1))
    assert len(faults) == 2
    for fault in faults:
        assert fault["label"] not in misspelled.labels and fault["drawn"] in misspelled.labels
    drawn = {fault["label"]: fault["drawn"] for fault in faults}
    assert misspelled.edges == tuple((drawn.get(a, a), drawn.get(b, b)) for a, b in PLAN.edges)


def test_plant_faults_is_deterministic_per_sample_and_varies_across_samples() -> None:
    first = plant_faults(PLAN, ALL_FAULTS, "fig-1-p0")
    assert first == plant_faults(PLAN, ALL_FAULTS, "fig-1-p0")
    assert sorted(fault["kind"] for fault in first[1]) == ["drop_node", "misspell", "reverse_edge"]
    outcomes = {str(plant_faults(PLAN, ALL_FAULTS, f"fig-{i}-p0")) for i in range(8)}
    assert len(outcomes) > 1
    assert plant_faults(PLAN, ALL_FAULTS.model_copy(update={"seed": 1}), "fig-1-p0") != first


def test_plant_faults_without_faults_leaves_the_plan_alone() -> None:
    assert plant_faults(PLAN, FaultConfig(), "fig-1-p0") == (PLAN, [])


def test_fault_config_rejects_unknown_keys_and_negative_counts() -> None:
    with pytest.raises(ValidationError):
        FaultConfig.model_validate({"misspell": 1})
    with pytest.raises(ValidationError):
        FaultConfig(drop_nodes=-1)


def test_faults_keep_groups_in_step_with_the_labels() -> None:
    grouped = DrawingPlan(
        labels=("Cat", "Dog", "Owl"),
        edges=(("Cat", "Dog"),),
        groups=(("Stage 1", ("Cat",)), ("Stage 2", ("Dog", "Owl"))),
    )
    misspelled, faults = misspell_labels(grouped, 1, random.Random(0))
    drawn = {fault["label"]: fault["drawn"] for fault in faults}
    assert misspelled.groups == tuple(
        (title, tuple(drawn.get(m, m) for m in members)) for title, members in grouped.groups
    )
    dropped, _ = drop_nodes(DrawingPlan(grouped.labels, grouped.edges, grouped.groups), 1, random.Random(1))
    (gone,) = set(grouped.labels) - set(dropped.labels)
    kept = [member for _, members in dropped.groups for member in members]
    assert gone not in kept and sorted(kept) == sorted(dropped.labels)
    # a group left without members goes with its last member
    assert grouped.without({"Cat"}).groups == (("Stage 2", ("Dog", "Owl")),)
    reversed_plan, _ = reverse_edges(grouped, 1, random.Random(0))
    assert reversed_plan.groups == grouped.groups
