"""What an AIBench *reference* draws: the paper's logic graph (``aibench_graphs``) as a plan.

A reference renderer (``plan_reference``, role ``reference``) draws the answer key so the examination's
solver is calibrated on images of known content: components as labelled boxes, data flows as arrows,
and phases, when the method text names some, as groups titled "Stage 1", "Stage 2" ... in order (the
graph keeps a phase's members, not its name). Contestants never get this: they draw from the method text.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

STAGE_TITLE = "Stage {number}"


class NoGraphPlan(ValueError):
    """A paper of the AIBench set has no usable logic graph to draw; the message names it and why."""


def _json_list(sample_id: str, column: str, value: object) -> list[Any]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError as error:
        raise NoGraphPlan(f"aibench_graphs {column} of sample {sample_id} is not JSON ({error})") from None
    if not isinstance(parsed, list):
        raise NoGraphPlan(f"aibench_graphs {column} of sample {sample_id} is not a JSON list: {value!r}")
    return parsed


def graph_plan(row: pd.Series) -> dict[str, Any]:
    """The plan of one ``aibench_graphs`` row: ``{"labels", "edges", "groups"}`` for ``plan_reference``.

    Raises:
        NoGraphPlan: the row's graph is not ``ok`` (with annotate's reason) or a column is not a JSON list.
    """
    sample_id = str(row["sample_id"])
    if row["status"] != "ok":
        raise NoGraphPlan(f"AIBench sample {sample_id} has no logic graph ({row['status']}: {row['reason']})")
    phases = _json_list(sample_id, "phases", row["phases"])
    return {
        "labels": _json_list(sample_id, "nodes", row["nodes"]),
        "edges": _json_list(sample_id, "edges", row["edges"]),
        "groups": [
            [STAGE_TITLE.format(number=index + 1), list(members)] for index, members in enumerate(phases)
        ],
    }


def graph_plans(
    aibench_graphs: pd.DataFrame, sample_ids: list[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The plan of each of ``sample_ids``, and why each paper without one has none."""
    rows = {str(row["sample_id"]): row for _, row in aibench_graphs.iterrows()}
    plans: dict[str, dict[str, Any]] = {}
    reasons: dict[str, str] = {}
    for sample_id in sample_ids:
        if sample_id not in rows:
            reasons[sample_id] = f"aibench_graphs has no row for AIBench sample {sample_id}"
            continue
        try:
            plans[sample_id] = graph_plan(rows[sample_id])
        except NoGraphPlan as error:
            reasons[sample_id] = str(error)
    return plans, reasons
