"""Evaluate's judge validation against people: evaluate run by Kedro's runner on the project's catalog (a
benchmark file, a folder of images, the offline judge), the review app's judge audit filled from that run's
verdicts and answered through its pages, then evaluate again: it reads the audit from the store (the catalog's
``review_audit``) with no export step and reports the judge's accuracy and Cohen's kappa against people per
question kind in judge_audit.csv, the MLflow run's metrics and the report, beside the planted-fault figures;
the exported audit CSV named by ``evaluate.judge_audit`` gives the same."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score
from sqlalchemy import select
from starlette.testclient import TestClient

from sciir.evaluation.judge_audit import JUDGE_AUDIT_COLUMNS
from sciir.review.app import create_app, prepare
from sciir.review.command import review_command
from sciir.review.models import Item
from sciir.review.settings import AuditSettings, RatingsSettings, ReviewSettings
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.testing.review_raters import RaterClient
from sciir.testing.stage_runs import evaluate_file, label_benchmark, label_images

PAGE = "/audit"
SAMPLES = {"lever": "Effort", "circuit": "Resistor"}
# What people say of each audited verdict: m1 writes both labels (the judge's "yes" is right), m2 neither (its
# "no" is right), except that people see a resistor in m2's circuit.
PEOPLE = {"m1/lever/q1": "right", "m1/circuit/q1": "right", "m2/lever/q1": "right", "m2/circuit/q1": "wrong"}


def _audit_in_the_app(root: Path, results: Path, benchmark: Path, images: Path) -> ReviewSettings:
    audit = AuditSettings(
        verdicts=str(results / "verdicts.parquet"), checklists=str(benchmark), images=str(images)
    )
    settings = ReviewSettings(ratings=RatingsSettings(benchmark=None), audit=audit).within(root)
    prepared = prepare(settings)
    with prepared.store.reading() as session:
        keys = dict(session.execute(select(Item.public_id, Item.key)).tuples().all())
    assert sorted(keys.values()) == sorted(PEOPLE)  # one per stratum and more: every judged text verdict
    rater = RaterClient(TestClient(create_app(prepared.store, settings), base_url="http://127.0.0.1:8765"))
    rater.sign_in("ann")
    while (page := rater.page(PAGE)).item_of(PAGE) is not None:
        assert rater.send(PAGE, {"answer": PEOPLE[keys[page.item_of(PAGE) or ""]]}, page).status == 200
    prepared.store.close()
    return settings


@pytest.mark.slow
def test_evaluate_reports_the_judge_against_people_from_the_review_store(tmp_path: Path, mlflow_run) -> None:
    benchmark = label_benchmark(tmp_path / "labels.jsonl", SAMPLES)
    images = tmp_path / "images"
    for sample, label in SAMPLES.items():
        label_images(images, sample, {"m1": label, "m2": ""})
    results = evaluate_file(tmp_path, benchmark, images, CONFIG_LOADER_ARGS)
    verdicts = pd.read_parquet(results / "verdicts.parquet")
    judged = {
        f"{m}/{s}/{q}": v for m, s, q, v in verdicts[["model", "sample_id", "question_id", "verdict"]].values
    }
    assert {key: judged[key] for key in PEOPLE} == {
        "m1/lever/q1": "yes", "m1/circuit/q1": "yes", "m2/lever/q1": "no", "m2/circuit/q1": "no"
    }  # fmt: skip
    nobody = pd.read_csv(results / "judge_audit.csv")  # nobody audited yet: the header alone, no store made
    assert nobody.empty and tuple(nobody.columns) == JUDGE_AUDIT_COLUMNS
    assert not (tmp_path / "data" / "review").exists()

    settings = _audit_in_the_app(tmp_path, results, benchmark, images)
    with mlflow.start_run(nested=True) as second:
        evaluate_file(tmp_path, benchmark, images, CONFIG_LOADER_ARGS)
    audit = pd.read_csv(results / "judge_audit.csv").set_index("question_kind")
    truth, judge = ["yes", "yes", "no", "yes"], ["yes", "yes", "no", "no"]
    assert audit.loc["text", "n_audited"] == 4 and audit.loc["text", "accuracy"] == pytest.approx(0.75)
    assert audit.loc["text", "cohen_kappa"] == pytest.approx(cohen_kappa_score(truth, judge))
    assert audit.loc["all", "n_audited"] == 4 and audit.loc["entity", "n_audited"] == 0
    metrics = mlflow.get_run(second.info.run_id).data.metrics
    assert metrics["evaluate.judge_audit.text.accuracy"] == pytest.approx(0.75)
    assert metrics["evaluate.judge_audit.text.cohen_kappa"] == pytest.approx(cohen_kappa_score(truth, judge))
    report = (results / "report" / "index.html").read_text()
    assert "Judge validation: on planted faults" in report and "accuracy vs people" in report
    assert "<td>0.750</td>" in report

    exported = tmp_path / "audit.csv"
    result = CliRunner().invoke(
        review_command(lambda: settings), ["--export", str(exported), "--queue", "audit"]
    )
    assert result.exit_code == 0, result.output
    (tmp_path / "data" / "review" / "review.sqlite").unlink()  # the file alone, no store
    evaluate_file(tmp_path, benchmark, images, CONFIG_LOADER_ARGS, {"judge_audit": str(exported)})
    from_file = pd.read_csv(results / "judge_audit.csv").set_index("question_kind")
    assert from_file.loc["text", ["n_audited", "accuracy"]].tolist() == [4, 0.75]
