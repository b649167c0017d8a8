"""Panel review's answers as the table curate reads: one decision per panel, apart from the queue itself, so
that the catalog's dataset (``sciir.catalog.review_decisions_dataset``) reads the store without the queue's
readers of curate's files.

Each answer is a rater's KEEP or REJECT of a panel with a note (``Answer.detail``, JSON) and a score (1 KEEP,
0 REJECT) for the agreement between raters. A panel's decision is its raters' majority; a tie decides nothing
(the panel waits for another rater) and says so in its note.
"""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy.orm import Session

from sciir.review.queue_store import live_answers

NAME = "panels"
DECISIONS = ("KEEP", "REJECT")
SCORES = {"KEEP": 1, "REJECT": 0}
ANSWER_COLUMNS = ("sample_id", "rater_id", "decision", "note", "answered_at")
DECISION_COLUMNS = ("sample_id", "decision", "note", "n_raters", "n_keep", "n_reject")


def answer_detail(decision: str, note: str) -> str:
    """What an answer stores: the decision and the note, as JSON."""
    return json.dumps({"decision": decision, "note": note}, ensure_ascii=False)


def panel_answers(session: Session, queue_name: str = NAME) -> pd.DataFrame:
    """Every live answer: sample_id (the item's key), rater_id (the rater's name), decision, note, answered_at."""
    live = live_answers(session, queue_name)
    details = [json.loads(detail or "{}") for detail in live["detail"]]
    return pd.DataFrame(
        {
            "sample_id": live["key"].astype(str),
            "rater_id": live["rater"].astype(str),
            "decision": [str(detail.get("decision", "")) for detail in details],
            "note": [str(detail.get("note", "")) for detail in details],
            "answered_at": live["answered_at"],
        },
        columns=list(ANSWER_COLUMNS),
    )


def _decided(rows: pd.DataFrame) -> dict[str, object]:
    keep = int((rows["decision"] == "KEEP").sum())
    reject = int((rows["decision"] == "REJECT").sum())
    decision = "KEEP" if keep > reject else "REJECT" if reject > keep else ""
    if decision and len(rows) == 1:
        note = str(rows["note"].iloc[0])
    elif decision:
        agreeing = rows[rows["decision"] == decision]
        note = "; ".join(
            f"{r}: {n}" for r, n in zip(agreeing["rater_id"], agreeing["note"], strict=True) if n
        )
    else:
        note = f"raters disagree ({keep} KEEP, {reject} REJECT): waiting for another rater"
    return {
        "sample_id": rows["sample_id"].iloc[0],
        "decision": decision,
        "note": note,
        "n_raters": len(rows),
        "n_keep": keep,
        "n_reject": reject,
    }


def panel_decisions(answers: pd.DataFrame) -> pd.DataFrame:
    """One row per answered panel: the raters' majority decision ('' on a tie), the note (the one rater's,
    or each agreeing rater's named), and the counts; sorted by sample id."""
    rows = [_decided(group) for _, group in answers.groupby("sample_id", sort=True)]
    table = pd.DataFrame(rows, columns=list(DECISION_COLUMNS))
    return table.astype({"sample_id": str, "decision": str, "note": str})


def decisions_table(session: Session, queue_name: str = NAME) -> pd.DataFrame:
    """The decisions curate applies, from the store's live answers of the panel-review queue."""
    return panel_decisions(panel_answers(session, queue_name))
