"""Evaluate on a benchmark file whose checklists people reviewed in the review app: questions edited, deleted and
added through the checklist pages, the review saved as a new versioned file (``kedro review --save-benchmark``),
then evaluate run by Kedro's runner on the project's catalog with ``evaluate.benchmark`` naming it: the judge
answers the reviewed questions, and the MLflow run records the new file's name and sha256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from sciir.review.app import create_app, prepare
from sciir.review.command import review_command
from sciir.review.settings import ChecklistsSettings, RatingsSettings, ReviewSettings
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.testing.review_raters import RaterClient, all_fields, read_page
from sciir.testing.stage_runs import evaluate_file, label_images

PAGE = "/checklists"
WRITTEN = {  # a checklist as written from a prompt, with a question the reviewer finds wrong
    "sample_id": "lever",
    "prompt": "Draw a lever with the label Effort.",
    "questions": [
        {"id": "q1", "text": 'Is "Effort" spelled exactly?', "expected_text": "Efort"},
        {"id": "q2", "text": "Is the lever drawn in 3D?", "category": "style"},
    ],
}


def _review_in_the_app(root: Path, benchmark: Path) -> ReviewSettings:
    """q1's expected text corrected, q2 deleted, q3 added, through the checklist page."""
    settings = ReviewSettings(
        ratings=RatingsSettings(benchmark=None), checklists=ChecklistsSettings(benchmark=str(benchmark))
    ).within(root)
    prepared = prepare(settings)
    rater = RaterClient(TestClient(create_app(prepared.store, settings), base_url="http://127.0.0.1:8765"))
    rater.sign_in("ann")
    page = rater.page(PAGE)
    fields = all_fields(page.html, f"{PAGE}/answer")
    fields |= {"q0_expected": "Effort", "q1_delete": "on", "q2_id": "q3", "q2_text": "Is a lever drawn?"}
    fields |= {"q2_category": "entity"}
    assert read_page(rater.post(f"{PAGE}/answer", fields)).status == 200
    prepared.store.close()
    return settings


@pytest.mark.slow
def test_evaluate_judges_the_reviewed_checklists_and_records_the_files_sha256(
    tmp_path: Path, mlflow_run
) -> None:
    benchmark = tmp_path / "prompts.jsonl"
    benchmark.write_text(json.dumps(WRITTEN) + "\n")
    settings = _review_in_the_app(tmp_path, benchmark)
    saved = CliRunner().invoke(review_command(lambda: settings), ["--save-benchmark"])
    assert saved.exit_code == 0, saved.output
    reviewed = tmp_path / "prompts-v1.jsonl"
    sha256 = hashlib.sha256(reviewed.read_bytes()).hexdigest()
    assert f"sha256 {sha256}" in saved.output

    images = label_images(tmp_path / "images", "lever", {"m1": "Effort", "m2": ""})
    results = evaluate_file(tmp_path, reviewed, images, CONFIG_LOADER_ARGS)

    tags = mlflow.get_run(mlflow_run.info.run_id).data.tags
    assert tags["sciir.benchmark.name"] == "prompts-v1" and tags["sciir.benchmark.sha256"] == sha256
    assert results == tmp_path / "data" / "08_reporting" / "benchmarks" / "prompts-v1" / "images"
    verdicts = pd.read_parquet(results / "verdicts.parquet")
    assert set(verdicts["question_id"]) == {"q1", "q3"}  # the deleted question is not asked, the added one is
    leaderboard = pd.read_csv(results / "leaderboard.csv").set_index("model")
    # q1 checks "Effort", as corrected: m1 writes it, m2 does not
    assert leaderboard.loc["m1", "text"] == 1.0 and leaderboard.loc["m2", "text"] == 0.0
    assert set(leaderboard["benchmark"]) == {"prompts-v1"}
