"""The judge against people: accuracy and Cohen's kappa per question kind, from the judge audit of the review app.

People audit a seeded sample of the judge's verdicts (``kedro review``'s judge audit, stratified by question kind
and verdict): each says the verdict shown is ``right`` or ``wrong``, or that they ``cant_tell``. A right
answer says the truth is the verdict shown, a wrong one its opposite, so the answers give, per audited
question, what people hold true: their majority (can't tell and ties give nothing). The judge of this run is
then compared with it on the questions it judged ``yes`` or ``no``: ``accuracy`` (its verdict is people's)
and ``cohen_kappa`` (scikit-learn's, beyond chance; NaN where one class alone is present), per question kind
(text, entity, relation, law, other) and over all, beside the raters' agreement (Krippendorff's alpha,
nominal, ``sciir.stats``). Since people's truth does not depend on the verdict they saw, a later run or another
judge is scored on the same audit.

The audit comes from the review store (the catalog's ``review_audit``) or from the audit CSV the app exports
(``evaluate.judge_audit``); both have the columns ``AUDIT_INPUT_COLUMNS``.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sciir.evaluation.judge_validation import ALL, KINDS, OTHER_KIND
from sciir.stats.agreement import krippendorff_alpha, reliability_matrix

logger = logging.getLogger(__name__)

AUDIT_INPUT_COLUMNS = (
    "model",
    "sample_id",
    "question_id",
    "question_kind",
    "judge_verdict",
    "rater_id",
    "answer",
)
AUDIT_KINDS = (*KINDS, OTHER_KIND)
JUDGE_AUDIT_COLUMNS = (
    "judge",
    "question_kind",
    "n_items",
    "n_answers",
    "n_raters",
    "n_cant_tell",
    "n_tied",
    "n_audited",
    "n_agree",
    "accuracy",
    "cohen_kappa",
    "raters_alpha",
)
KEY = ["model", "sample_id", "question_id"]
OPPOSITE = {"yes": "no", "no": "yes"}


def read_audit_file(path: str) -> pd.DataFrame:
    """An audit CSV (``kedro review --export FILE --queue audit``); ValueError naming a missing column."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"evaluate.judge_audit: {path} is not a file")
    table = pd.read_csv(file, dtype=str, keep_default_na=False)
    missing = sorted(set(AUDIT_INPUT_COLUMNS) - set(table.columns))
    if missing:
        raise ValueError(f"judge audit file {path}: missing column(s) {missing}")
    table.attrs["source"] = str(path)
    return table


def people_truth(audit: pd.DataFrame) -> pd.DataFrame:
    """Per audited question: its kind, what people hold true (``yes`` / ``no``, None when they cannot tell or
    tie), the answers, the can't-tell answers and whether the raters tied."""
    answers = audit.astype({column: str for column in AUDIT_INPUT_COLUMNS})
    told = answers["answer"].isin(["right", "wrong"])
    implied = np.where(
        answers["answer"] == "right", answers["judge_verdict"], answers["judge_verdict"].map(OPPOSITE)
    )
    answers = answers.assign(implied=pd.Series(implied, index=answers.index).where(told))
    rows = []
    for key, group in answers.groupby(KEY, sort=True):
        counts = group["implied"].value_counts()
        top = counts[counts == counts.max()].index.tolist() if len(counts) else []
        rows.append(
            dict(zip(KEY, key, strict=True))
            | {
                "question_kind": group["question_kind"].iloc[0],
                "truth": top[0] if len(top) == 1 else None,
                "n_answers": len(group),
                "n_cant_tell": int((group["answer"] == "cant_tell").sum()),
                "tied": len(top) > 1,
            }
        )
    table = pd.DataFrame(rows, columns=[*KEY, "question_kind", "truth", "n_answers", "n_cant_tell", "tied"])
    table["truth"] = table["truth"].astype(object).where(table["truth"].notna(), None)
    return table


def _alpha(answers: pd.DataFrame) -> float:
    """Krippendorff's alpha (nominal) of the raters' implied truths (NaN when undefined)."""
    told = answers[answers["answer"].isin(["right", "wrong"])]
    if told.empty:
        return math.nan
    implied = np.where(told["answer"] == "right", told["judge_verdict"], told["judge_verdict"].map(OPPOSITE))
    table = pd.DataFrame(
        {
            "image_id": told["model"] + "/" + told["sample_id"] + "/" + told["question_id"],
            "rater_id": told["rater_id"],
            "score": (pd.Series(implied, index=told.index) == "yes").astype(float),
        }
    )
    return krippendorff_alpha(reliability_matrix(table).to_numpy(), "nominal", warn=False).value


def _row(
    judge: str, kind: str, answers: pd.DataFrame, truth: pd.DataFrame, verdicts: pd.DataFrame
) -> dict[str, Any]:
    from sklearn.metrics import cohen_kappa_score

    matched = truth[truth["truth"].notna()].merge(verdicts, on=KEY, how="inner")
    agree = matched["verdict"] == matched["truth"]
    both = matched["truth"].nunique() > 1 or matched["verdict"].nunique() > 1
    kappa = (
        float(cohen_kappa_score(matched["truth"], matched["verdict"])) if len(matched) and both else math.nan
    )
    return {
        "judge": judge,
        "question_kind": kind,
        "n_items": len(truth),
        "n_answers": len(answers),
        "n_raters": answers["rater_id"].nunique(),
        "n_cant_tell": int(truth["n_cant_tell"].sum()),
        "n_tied": int(truth["tied"].sum()),
        "n_audited": len(matched),
        "n_agree": int(agree.sum()),
        "accuracy": float(agree.mean()) if len(matched) else math.nan,
        "cohen_kappa": kappa,
        "raters_alpha": _alpha(answers),
    }


def judge_audit_table(audit: pd.DataFrame, verdicts: pd.DataFrame, judge: str) -> pd.DataFrame:
    """One row per question kind and one over all (``all``) for ``judge``: the audited questions this run's
    judge answered yes or no, its accuracy and Cohen's kappa against people, the raters' alpha; empty when
    nobody audited."""
    if audit.empty:
        return pd.DataFrame(columns=list(JUDGE_AUDIT_COLUMNS))
    audit = audit.astype({column: str for column in AUDIT_INPUT_COLUMNS})
    audit = audit.assign(
        question_kind=audit["question_kind"].where(audit["question_kind"].isin(KINDS), OTHER_KIND)
    )
    judged = verdicts[(verdicts["status"] == "judged") & verdicts["verdict"].isin(["yes", "no"])]
    judged = judged.astype({"model": str, "sample_id": str, "question_id": str})[[*KEY, "verdict"]]
    truth = people_truth(audit)
    rows = [
        _row(
            judge, kind, audit[audit["question_kind"] == kind], truth[truth["question_kind"] == kind], judged
        )
        for kind in AUDIT_KINDS
    ]
    rows.append(_row(judge, ALL, audit, truth, judged))
    table = pd.DataFrame(rows, columns=list(JUDGE_AUDIT_COLUMNS))
    logger.info(
        "judge audit: %d verdicts audited by %d people (%s):\n%s",
        len(truth),
        audit["rater_id"].nunique(),
        audit.attrs.get("source", "the review store"),
        table.to_string(index=False),
    )
    return table


def audit_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``judge_audit.<kind>.accuracy``, ``.cohen_kappa``, ``.n_audited`` and ``.raters_alpha`` per kind with
    audited questions, as metrics (none without an audit)."""
    metrics: dict[str, float] = {}
    for row in table.to_dict("records"):
        if row["n_audited"]:
            prefix = f"judge_audit.{row['question_kind']}"
            metrics |= {
                f"{prefix}.{name}": float(row[name])
                for name in ("accuracy", "cohen_kappa", "n_audited", "raters_alpha")
            }
    return metrics


def validation_beside_audit(validation: pd.DataFrame, audit: pd.DataFrame) -> pd.DataFrame:
    """The report's table: per question kind, the judge on planted faults (questions with known truth, its
    detection and false-alarm rates and kappa against the truth) beside the judge against people (questions
    audited, accuracy, kappa, the raters' alpha)."""
    planted = {row["question_kind"]: row for row in validation.to_dict("records") if row["polarity"] == ALL}
    people = {row["question_kind"]: row for row in audit.to_dict("records")}
    rows = []
    for kind in (*AUDIT_KINDS, ALL):
        truth, audited = planted.get(kind, {}), people.get(kind, {})
        rows.append(
            {
                "question kind": kind,
                "with known truth": truth.get("n_questions"),
                "detection rate": truth.get("detection_rate"),
                "false-alarm rate": truth.get("false_alarm_rate"),
                "kappa vs truth": truth.get("cohen_kappa"),
                "audited by people": audited.get("n_audited", 0),
                "accuracy vs people": audited.get("accuracy"),
                "kappa vs people": audited.get("cohen_kappa"),
                "raters' alpha": audited.get("raters_alpha"),
            }
        )
    return pd.DataFrame(rows)
