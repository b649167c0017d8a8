"""Judge validation on ground truth: how often the judge catches planted faults and how often it
raises false alarms on what was drawn correctly.

The programmatic generators record what they actually drew (generation manifest ``meta``:
``drawn_labels``, ``drawn_edges``, ``planted_faults``); the correct baseline draws the benchmark plan
as is, the faulty one after misspelling, reversing and dropping. So for every checklist question about
one of those images it is known whether the question's claim holds:

- text (layer 1): the expected text is a plan label; violated when that exact spelling was not drawn
  (it was misspelled or its node dropped);
- entity: the quoted term is a plan label; violated when its node was dropped (a misspelled node is
  still drawn, under another spelling);
- process: both quoted labels are plan labels; "an arrow from A to B" is violated when that edge was not
  drawn (reversed, or an endpoint dropped), "no arrow from A to B" when that edge was drawn;
- law: nothing draws or plants a law, so a law question holds on an image without planted faults and
  is unknown on a faulty one.

Questions about anything else have no known truth and are counted as such, never guessed. Only images
of generators whose manifest records ``drawn_labels`` take part. Per judge and question type:
detection rate (judged "no" / judged questions whose claim is violated), false-alarm rate (judged "no" /
judged questions whose claim holds) and abstention rate (unjudged / questions with known truth).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sciir.scoring import CATEGORIES, question_category

ALL_TYPES = "all"
VALIDATION_COLUMNS = (
    "judge",
    "question_type",
    "n_questions",
    "n_faulty",
    "n_faulty_judged",
    "n_detected",
    "detection_rate",
    "n_correct",
    "n_correct_judged",
    "n_false_alarms",
    "false_alarm_rate",
    "n_unjudged",
    "abstention_rate",
    "n_without_truth",
)
_QUOTED = re.compile(r'"([^"]+)"')
# The checklist's negative process checks ("Is there no arrow from B to A?") claim an absent edge.
_NEGATED_EDGE = re.compile(r"\bno\s+(?:arrow|edge|connection|link)s?\b", re.IGNORECASE)


@dataclass(frozen=True)
class ImageTruth:
    """What one programmatic image shows, in the plan's names (a misspelled node under its plan name)."""

    plan_labels: frozenset[str]
    drawn_texts: frozenset[str]  # exact spellings on the canvas
    drawn_entities: frozenset[str]
    drawn_edges: frozenset[tuple[str, str]]
    faulty: bool


def image_truth(plan: Mapping[str, Any], meta: Mapping[str, Any]) -> ImageTruth | None:
    """The truth of one image from its benchmark plan and manifest meta; None without ``drawn_labels``."""
    if "drawn_labels" not in meta:
        return None
    faults = meta.get("planted_faults") or []
    plan_name = {fault["drawn"]: fault["label"] for fault in faults if fault.get("kind") == "misspell"}
    drawn = [str(label) for label in meta["drawn_labels"]]
    return ImageTruth(
        plan_labels=frozenset(str(label) for label in plan.get("labels", [])),
        drawn_texts=frozenset(drawn),
        drawn_entities=frozenset(plan_name.get(label, label) for label in drawn),
        drawn_edges=frozenset(
            (plan_name.get(src, src), plan_name.get(dst, dst)) for src, dst in meta.get("drawn_edges", [])
        ),
        faulty=bool(faults),
    )


def _process_violated(question: str, truth: ImageTruth) -> bool | None:
    """Whether a process question's edge claim is violated; None unless it names two plan labels."""
    names = _QUOTED.findall(question)
    if len(names) != 2 or not truth.plan_labels.issuperset(names):
        return None
    drawn = (names[0], names[1]) in truth.drawn_edges
    return drawn if _NEGATED_EDGE.search(question) else not drawn


def claim_violated(question_type: str, question: str, expected_text: Any, truth: ImageTruth) -> bool | None:
    """True when the question's claim is false in the image, False when it holds, None when unknown."""
    if question_type == "text":
        if not isinstance(expected_text, str) or expected_text not in truth.plan_labels:
            return None
        return expected_text not in truth.drawn_texts
    if question_type == "entity":
        names = _QUOTED.findall(question)
        if not names or names[0] not in truth.plan_labels:
            return None
        return names[0] not in truth.drawn_entities
    if question_type == "process":
        return _process_violated(question, truth)
    if question_type == "law":
        return None if truth.faulty else False
    return None


def _image_truths(benchmark: pd.DataFrame, manifest: pd.DataFrame) -> dict[tuple[str, str], ImageTruth]:
    """Truth per (model, sample) for the manifest's successful images that record what they drew."""
    plans = {str(row.sample_id): json.loads(row.plan) for row in benchmark.itertuples(index=False)}
    truths: dict[tuple[str, str], ImageTruth] = {}
    for row in manifest[manifest["status"] == "ok"].itertuples(index=False):
        truth = image_truth(plans.get(str(row.sample_id), {}), json.loads(row.meta or "{}"))
        if truth is not None:
            truths[(str(row.model), str(row.sample_id))] = truth
    return truths


def question_truth(
    verdicts: pd.DataFrame, checklists: pd.DataFrame, benchmark: pd.DataFrame, manifest: pd.DataFrame
) -> pd.DataFrame:
    """The verdicts of images with known truth, with ``question_type`` and ``violated`` (True / False / None)."""
    truths = _image_truths(benchmark, manifest)
    keys = list(zip(verdicts["model"].astype(str), verdicts["sample_id"].astype(str), strict=True))
    rows = verdicts[[key in truths for key in keys]]
    rows = rows.merge(
        checklists[["sample_id", "question_id", "question", "expected_text"]],
        on=["sample_id", "question_id"],
        how="left",
    )
    rows = rows.assign(question_type=question_category(rows))
    rows["violated"] = [
        claim_violated(
            row.question_type, str(row.question), row.expected_text, truths[(row.model, row.sample_id)]
        )
        for row in rows.itertuples(index=False)
    ]
    return rows


def _rate(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else float("nan")


def _validation_row(judge: str, question_type: str, rows: pd.DataFrame) -> dict[str, Any]:
    """Counts and rates of one judge on one question type."""
    known = rows[rows["violated"].notna()]
    judged = known["status"] == "judged"
    said_no = judged & (known["verdict"] == "no")
    faulty = known["violated"].astype(bool)
    counts = {
        "n_questions": len(known),
        "n_faulty": int(faulty.sum()),
        "n_faulty_judged": int((faulty & judged).sum()),
        "n_detected": int((faulty & said_no).sum()),
        "n_correct": int((~faulty).sum()),
        "n_correct_judged": int((~faulty & judged).sum()),
        "n_false_alarms": int((~faulty & said_no).sum()),
        "n_unjudged": int((~judged).sum()),
        "n_without_truth": len(rows) - len(known),
    }
    return (
        {"judge": judge, "question_type": question_type}
        | counts
        | {
            "detection_rate": _rate(counts["n_detected"], counts["n_faulty_judged"]),
            "false_alarm_rate": _rate(counts["n_false_alarms"], counts["n_correct_judged"]),
            "abstention_rate": _rate(counts["n_unjudged"], counts["n_questions"]),
        }
    )


def validation_table(truth: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One row per question type (text, entity, process, law, and ``all``) for ``judge``."""
    rows = [
        _validation_row(judge, question_type, truth[truth["question_type"] == question_type])
        for question_type in CATEGORIES
    ]
    rows.append(_validation_row(judge, ALL_TYPES, truth[truth["question_type"].isin(CATEGORIES)]))
    return pd.DataFrame(rows, columns=list(VALIDATION_COLUMNS))


def validation_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``judge_validation.<type>.<rate>`` and the counts behind them, as metrics."""
    metrics: dict[str, float] = {}
    for row in table.to_dict("records"):
        prefix = f"judge_validation.{row['question_type']}"
        metrics |= {
            f"{prefix}.{name}": float(row[name])
            for name in ("detection_rate", "false_alarm_rate", "abstention_rate", "n_faulty", "n_correct")
        }
    return metrics
