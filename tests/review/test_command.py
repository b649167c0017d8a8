"""The command: options over the settings, a rater's token printed, the ratings exported as human_corr's
ratings file, and ``kedro review`` registered as a project command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from sciir.figures.review import read_decisions
from sciir.review.command import overridden, review_command
from sciir.review.settings import ReviewSettings
from sciir.testing.review_raters import RaterClient
from sciir.user_files.rating_files import read_ratings_file

REPO = Path(__file__).resolve().parents[2]


def test_options_override_the_settings(settings: ReviewSettings) -> None:
    changed = overridden(settings, host="0.0.0.0", port=9000, store=None, images="/elsewhere", benchmark=None)
    assert (changed.host, changed.port, changed.store) == ("0.0.0.0", 9000, settings.store)
    assert changed.ratings.images == "/elsewhere" and changed.ratings.benchmark == settings.ratings.benchmark


def test_add_rater_prints_a_token_that_signs_in(settings: ReviewSettings, app_client) -> None:
    result = CliRunner().invoke(review_command(lambda: settings), ["--add-rater", "ann"])
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]  # the last line (a logging set-up may show more)
    browser = RaterClient(app_client(require_tokens=True))
    assert browser.sign_in(token=token).status_code == 200
    assert 'signed in as <strong id="rater-name">ann</strong>' in browser.client.get("/").text


def test_export_writes_the_ratings_file_human_corr_reads(
    settings: ReviewSettings, rater, tmp_path: Path
) -> None:
    ann, bo = rater("ann"), rater("bo")
    for score in (4, 2):
        ann.answer(score)
        bo.answer(score + 1)
    ann.undo()
    path = tmp_path / "out" / "ratings.csv"
    result = CliRunner().invoke(review_command(lambda: settings), ["--export", str(path)])
    assert result.exit_code == 0 and "3 ratings written" in result.output, result.output
    assert path.read_text().splitlines()[0] == "image_id,rater_id,score"
    table = read_ratings_file(path)
    assert sorted(table["rater_id"]) == ["ann", "bo", "bo"] and sorted(table["score"]) == [3.0, 4.0, 5.0]
    assert all(image.startswith("secretmodel") and image.count("/") == 1 for image in table["image_id"])


def test_export_panels_writes_the_reviewed_queue_curate_takes(
    panel_settings: ReviewSettings, app_client, tmp_path: Path
) -> None:
    ann = RaterClient(app_client(with_settings=panel_settings))
    ann.sign_in("ann")
    ann.send("/panels", {"decision": "REJECT", "note": "not a figure"})
    path = tmp_path / "reviewed" / "review_queue.reviewed.csv"
    command = review_command(lambda: panel_settings)
    result = CliRunner().invoke(command, ["--export", str(path), "--queue", "panels"])
    assert result.exit_code == 0 and "3 panels written" in result.output, result.output
    assert list(read_decisions(str(path)).values()) == [("REJECT", "not a figure")]
    refused = CliRunner().invoke(command, ["--export", str(path), "--queue", "nothing"])
    assert refused.exit_code == 2 and "'nothing' is not one of" in refused.output


@pytest.mark.slow
def test_kedro_review_is_a_project_command(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'review.sqlite'}"
    env = os.environ | {"KEDRO_DISABLE_TELEMETRY": "1"}
    kedro = Path(sys.executable).with_name("kedro")
    run = subprocess.run(
        [str(kedro), "review", "--store", store, "--add-rater", "ann"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    token = run.stdout.strip().splitlines()[-1]
    assert len(token) >= 32 and " " not in token
    assert (tmp_path / "review.sqlite").is_file()
