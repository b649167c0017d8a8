"""Manual review, stage 2 of SciIR's dual-stage filtering (appendix B.3; stage 1 is the vision-language screen,
the ``screen`` task, ``sciir.tasks.screen``): what the screen is unsure of goes to a review queue, never to
KEEP, and stage 2 samples 10% of the KEEPs, seeded, into the same queue as a spot check; the false-positive
rate over the reviewed spot-check rows is flagged above 5% (the paper refines its prompt then).

People decide in the review app's panel-review queue (``kedro review``), whose decisions the catalog reads
from its store (``review_decisions``) for the next run; or they edit the queue's file: fill ``decision`` (KEEP
or REJECT, optional ``note``) and give the file back (``curate.review.decisions``), which then wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

REVIEW_COLUMNS = [
    "sample_id", "queue", "image", "doi", "figure_id", "caption",
    "model_decision", "model_confidence", "model_reason", "decision", "note",
]  # fmt: skip
LOW_CONFIDENCE, SPOT_CHECK = "low_confidence", "spot_check"


class ReviewParams(BaseModel):
    """Stage 2 and the queue: the spot-check share and seed, the flag threshold, the reviewed file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spot_check_share: float = Field(default=0.10, ge=0, le=1)
    seed: int = 0
    max_false_positive_rate: float = Field(default=0.05, ge=0, le=1)
    # A reviewed copy of the review queue (decision column filled) applied on this run; null: none.
    decisions: str | None = None


def spot_check_sample(sample_ids: list[str], share: float, seed: int) -> set[str]:
    """A seeded ``share`` of the KEEPs (rounded up), the same for the same ids and seed in any order."""
    if not sample_ids or share == 0:
        return set()
    ordered = sorted(sample_ids)
    count = min(len(ordered), math.ceil(share * len(ordered)))
    chosen = np.random.default_rng(seed).choice(len(ordered), size=count, replace=False)
    return {ordered[index] for index in chosen}


def read_decisions(path: str) -> dict[str, tuple[str, str]]:
    """sample_id -> (KEEP or REJECT, note) from a reviewed queue; rows left blank are skipped.

    Raises ValueError naming the file and the row for a missing column or a decision that is not
    KEEP or REJECT.
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"curate.review.decisions: {path} is not a file")
    table = pd.read_csv(file, dtype=str, keep_default_na=False)
    missing = {"sample_id", "decision"} - set(table.columns)
    if missing:
        raise ValueError(f"reviewed queue {path}: missing column(s) {sorted(missing)}")
    decisions: dict[str, tuple[str, str]] = {}
    for line, row in enumerate(table.to_dict("records"), start=2):
        decision = row["decision"].strip().upper()
        if not decision:
            continue
        if decision not in ("KEEP", "REJECT"):
            raise ValueError(
                f"reviewed queue {path}, line {line} ({row['sample_id']}): decision {row['decision']!r} "
                "is not KEEP or REJECT"
            )
        decisions[row["sample_id"]] = (decision, row.get("note", "").strip())
    return decisions


def table_decisions(table: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """sample_id -> (KEEP or REJECT, note) from the review app's decisions (columns sample_id, decision, note);
    a panel without a decision (its raters tied) is left out. ValueError for any other decision."""
    decisions: dict[str, tuple[str, str]] = {}
    for row in table.to_dict("records"):
        decision = str(row["decision"] or "").strip().upper()
        if not decision:
            continue
        if decision not in ("KEEP", "REJECT"):
            raise ValueError(
                f"review decisions, panel {row['sample_id']}: {decision!r} is not KEEP or REJECT"
            )
        decisions[str(row["sample_id"])] = (decision, str(row.get("note") or "").strip())
    return decisions


@dataclass(frozen=True)
class SpotCheckRate:
    """The spot check's reviewed rows, the false positives among them, and whether the rate is flagged."""

    sampled: int
    reviewed: int
    false_positives: int
    max_rate: float

    @property
    def rate(self) -> float | None:
        return self.false_positives / self.reviewed if self.reviewed else None

    @property
    def flagged(self) -> bool:
        return self.rate is not None and self.rate > self.max_rate

    def metrics(self) -> dict[str, float]:
        metrics = {
            "spot_check_sampled": float(self.sampled),
            "spot_check_reviewed": float(self.reviewed),
            "spot_check_flagged": float(self.flagged),
        }
        if self.rate is not None:
            metrics["spot_check_false_positive_rate"] = self.rate
        return metrics
