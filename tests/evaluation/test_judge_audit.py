"""The judge against people: what people hold true from right / wrong / can't tell (majority, ties and can't
tell give nothing), the judge's accuracy and Cohen's kappa per question kind (scikit-learn's, computed here by
hand too), a later judge scored on the same audit, the metrics, the file, and the report's table beside the
planted-fault figures."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from sciir.evaluation.judge_audit import (
    audit_metrics,
    judge_audit_table,
    people_truth,
    read_audit_file,
    validation_beside_audit,
)


def _answers(rows: list[tuple[str, str, str, str, str]]) -> pd.DataFrame:
    """(question, kind, verdict shown, rater, answer) -> the audit table of model m, sample s."""
    return pd.DataFrame(
        [
            {"model": "m", "sample_id": "s", "question_id": q, "question_kind": kind, "judge_verdict": shown,
             "rater_id": rater, "answer": answer}
            for q, kind, shown, rater, answer in rows
        ]
    )  # fmt: skip


def _verdicts(pairs: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"model": "m", "sample_id": "s", "question_id": q, "verdict": v, "status": "judged"}
            for q, v in pairs.items()
        ]
    )


def test_people_hold_true_the_verdict_they_call_right_and_the_opposite_of_a_wrong_one() -> None:
    audit = _answers(
        [
            ("q1", "text", "yes", "ann", "right"),
            ("q2", "text", "yes", "ann", "wrong"),
            ("q3", "entity", "no", "ann", "wrong"),
            ("q4", "entity", "no", "ann", "right"),
            ("q4", "entity", "no", "bo", "wrong"),  # a tie: nothing
            ("q5", "law", "yes", "ann", "cant_tell"),
            ("q6", "relation", "no", "ann", "right"),
            ("q6", "relation", "no", "bo", "right"),
            ("q6", "relation", "no", "cy", "wrong"),  # majority: no
        ]
    )
    truth = people_truth(audit).set_index("question_id")
    assert truth["truth"].to_dict() == {
        "q1": "yes",
        "q2": "no",
        "q3": "yes",
        "q4": None,
        "q5": None,
        "q6": "no",
    }
    assert (
        truth.loc["q4", "tied"] and truth.loc["q5", "n_cant_tell"] == 1 and truth.loc["q6", "n_answers"] == 3
    )


def test_accuracy_and_kappa_per_kind_against_people() -> None:
    # people's truth for text: q1..q6 = yes, yes, yes, no, no, no; the judge says yes, yes, no, no, no, yes
    shown = {"q1": "yes", "q2": "yes", "q3": "no", "q4": "no", "q5": "no", "q6": "yes"}
    right = {"q1": True, "q2": True, "q3": False, "q4": True, "q5": True, "q6": False}
    rows = [(q, "text", shown[q], "ann", "right" if right[q] else "wrong") for q in shown]
    rows += [("e1", "entity", "yes", "ann", "right"), ("o1", "style", "no", "ann", "wrong")]
    audit = _answers(rows)
    verdicts = _verdicts(shown | {"e1": "yes", "o1": "no"})
    table = judge_audit_table(audit, verdicts, "offline").set_index("question_kind")
    truth = ["yes", "yes", "yes", "no", "no", "no"]
    judge = [shown[q] for q in shown]
    assert table.loc["text", "n_audited"] == 6 and table.loc["text", "accuracy"] == pytest.approx(4 / 6)
    # kappa by hand: observed 4/6, expected (3/6 * 3/6) + (3/6 * 3/6) = 1/2 -> (2/3 - 1/2) / (1 - 1/2) = 1/3
    assert table.loc["text", "cohen_kappa"] == pytest.approx(1 / 3)
    assert table.loc["text", "cohen_kappa"] == pytest.approx(cohen_kappa_score(truth, judge))
    assert table.loc["other", "n_audited"] == 1 and table.loc["other", "accuracy"] == 0.0  # style -> other
    assert math.isnan(table.loc["entity", "cohen_kappa"])  # one class only
    assert table.loc["all", "n_audited"] == 8 and table.loc["all", "accuracy"] == pytest.approx(5 / 8)
    assert table.loc["law", "n_audited"] == 0 and math.isnan(table.loc["law", "accuracy"])
    assert set(table["judge"]) == {"offline"}

    # a later judge, right where the first was wrong, on the same audit
    later = _verdicts({"q1": "yes", "q2": "yes", "q3": "yes", "q4": "no", "q5": "no", "q6": "no"})
    assert judge_audit_table(audit, later, "better").set_index("question_kind").loc["text", "accuracy"] == 1.0
    # a question this run did not judge is not counted
    unjudged = later.assign(status=["judged"] * 5 + ["abstained"])
    assert judge_audit_table(audit, unjudged, "x").set_index("question_kind").loc["text", "n_audited"] == 5


def test_the_raters_agreement_is_krippendorffs_alpha_of_what_they_hold_true() -> None:
    rows = [
        (q, "text", "yes", rater, "right" if q != "q3" else "wrong")
        for q in ("q1", "q2", "q3")
        for rater in ("ann", "bo")
    ]
    table = judge_audit_table(_answers(rows), _verdicts({"q1": "yes", "q2": "yes", "q3": "yes"}), "j")
    assert table.set_index("question_kind").loc["text", "raters_alpha"] == pytest.approx(1.0)
    assert table.set_index("question_kind").loc["text", "n_raters"] == 2


def test_metrics_only_for_kinds_people_audited() -> None:
    table = judge_audit_table(
        _answers([("q1", "text", "yes", "ann", "right")]), _verdicts({"q1": "yes"}), "j"
    )
    metrics = audit_metrics(table)
    assert metrics["judge_audit.text.accuracy"] == 1.0 and metrics["judge_audit.all.n_audited"] == 1.0
    assert not any(name.startswith("judge_audit.law") for name in metrics)
    assert audit_metrics(judge_audit_table(pd.DataFrame(), _verdicts({}), "j")) == {}


def test_an_audit_file_needs_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "audit.csv"
    path.write_text("model,sample_id,question_id,answer\nm,s,q1,right\n")
    with pytest.raises(
        ValueError, match=r"missing column\(s\) \['judge_verdict', 'question_kind', 'rater_id'\]"
    ):
        read_audit_file(str(path))
    with pytest.raises(ValueError, match="is not a file"):
        read_audit_file(str(tmp_path / "none.csv"))


def test_the_reports_table_puts_planted_faults_beside_people() -> None:
    validation = pd.DataFrame(
        [
            {"question_kind": "text", "polarity": "all", "n_questions": 40, "detection_rate": 0.9,
             "false_alarm_rate": 0.05, "cohen_kappa": 0.8},
            {"question_kind": "text", "polarity": "positive", "n_questions": 40, "detection_rate": 0.1,
             "false_alarm_rate": 0.5, "cohen_kappa": 0.1},
        ]
    )  # fmt: skip
    audit = judge_audit_table(
        _answers([("q1", "text", "yes", "ann", "right")]), _verdicts({"q1": "yes"}), "j"
    )
    table = validation_beside_audit(validation, audit).set_index("question kind")
    assert list(table.index) == ["text", "entity", "relation", "law", "other", "all"]
    assert table.loc["text", "detection rate"] == 0.9 and table.loc["text", "accuracy vs people"] == 1.0
    assert table.loc["law", "audited by people"] == 0 and pd.isna(table.loc["law", "detection rate"])
