"""The report folder dataset: pages and plots written, thumbnails made once, stale files removed, every image a
page shows a PNG file beside it that decodes, an MLflow folder artifact."""

from __future__ import annotations

import io
import logging
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from kedro.io import DatasetError
from kedro_mlflow.io.artifacts import MlflowArtifactDataset
from lxml import html
from PIL import Image

from sciir.catalog.report_dataset import ReportFolderDataset
from sciir.evaluation.report import ReportFolder, render_report, table_from_frame
from sciir.evaluation.report_and_plots import report_plots
from sciir.evaluation.report_views import image_views
from sciir.evaluation.scoring import leaderboard, score_samples, score_table
from sciir.stats.bootstrap import BootstrapConfig

PAGES = {"index.html": "<p>summary</p>", "models/a.html": '<img src="../thumbnails/x-256.png">'}


def counted(content: bytes, calls: list[str]) -> Callable[[], bytes]:
    """A thumbnail maker that records each call."""

    def make() -> bytes:
        calls.append(content.decode())
        return content

    return make


def test_save_then_load_gives_the_same_pages_and_thumbnails(tmp_path):
    dataset = ReportFolderDataset(path=str(tmp_path / "report"))
    dataset.save(ReportFolder(PAGES, {"thumbnails/x-256.png": lambda: b"x"}))
    loaded = dataset.load()
    assert dict(loaded.pages) == PAGES
    assert {path: make() for path, make in loaded.thumbnails.items()} == {"thumbnails/x-256.png": b"x"}
    assert dataset.exists()


def test_plots_are_written_on_every_save_and_loaded_as_bytes(tmp_path):
    dataset = ReportFolderDataset(path=str(tmp_path / "report"))
    dataset.save(ReportFolder(PAGES, {}, {"plots/bars.png": b"first", "plots/gone.png": b"old"}))
    dataset.save(ReportFolder(PAGES, {}, {"plots/bars.png": b"second"}))  # same name, new content
    assert sorted(path.name for path in (tmp_path / "report" / "plots").iterdir()) == ["bars.png"]
    loaded = dataset.load()
    assert dict(loaded.plots) == {"plots/bars.png": b"second"} and not loaded.thumbnails


def test_a_thumbnail_already_written_is_kept_not_made_again(tmp_path):
    dataset, calls = ReportFolderDataset(path=str(tmp_path / "report"), workers=2), []
    first = {f"thumbnails/{name}-256.png": counted(name.encode(), calls) for name in ("x", "y")}
    dataset.save(ReportFolder(PAGES, first))
    second = {f"thumbnails/{name}-256.png": counted(name.encode(), calls) for name in ("x", "y", "z")}
    dataset.save(ReportFolder(PAGES, second))
    assert sorted(calls) == ["x", "y", "z"]  # x and y made by the first save only
    assert (tmp_path / "report" / "thumbnails" / "z-256.png").read_bytes() == b"z"


def test_files_of_an_earlier_report_are_removed_and_the_top_level_left_alone(tmp_path):
    dataset = ReportFolderDataset(path=str(tmp_path / "report"))
    dataset.save(ReportFolder(PAGES | {"models/gone.html": "old"}, {"thumbnails/old-256.png": lambda: b"o"}))
    (tmp_path / "report" / "thumbnails" / ".new-256.png.part").write_bytes(b"half")  # a killed run's leftover
    (tmp_path / "report" / "notes.txt").write_text("mine")
    dataset.save(ReportFolder(PAGES, {"thumbnails/x-256.png": lambda: b"x"}))
    files = sorted(
        path.relative_to(tmp_path / "report").as_posix() for path in (tmp_path / "report").rglob("*")
    )
    assert files == [
        "index.html",
        "models",
        "models/a.html",
        "notes.txt",
        "thumbnails",
        "thumbnails/x-256.png",
    ]


def test_a_thumbnail_that_cannot_be_made_is_logged_and_left_out(tmp_path, caplog):
    def broken() -> bytes:
        raise OSError("image file is truncated")

    dataset = ReportFolderDataset(path=str(tmp_path / "report"))
    with caplog.at_level(logging.WARNING, logger="sciir.catalog.report_dataset"):
        dataset.save(
            ReportFolder(PAGES, {"thumbnails/bad-256.png": broken, "thumbnails/x-256.png": lambda: b"x"})
        )
    assert "thumbnails/bad-256.png not made: image file is truncated" in caplog.text
    assert sorted(path.name for path in (tmp_path / "report" / "thumbnails").iterdir()) == ["x-256.png"]


@pytest.mark.parametrize("path", ["../outside.html", "/tmp/outside.html", ""])
def test_a_path_outside_the_folder_is_refused(tmp_path, path):
    with pytest.raises(DatasetError, match="not a path inside the report folder"):
        ReportFolderDataset(path=str(tmp_path / "report")).save(ReportFolder({path: "x"}, {}))


@pytest.mark.slow
def test_logged_to_mlflow_as_one_folder_artifact(tmp_path, mlflow_store):
    dataset = MlflowArtifactDataset(
        dataset={"type": "sciir.catalog.report_dataset.ReportFolderDataset", "path": str(tmp_path / "report")}
    )
    with mlflow.start_run() as run:
        dataset.save(ReportFolder(PAGES, {"thumbnails/x-256.png": lambda: b"x"}))

    def listed(path: str | None = None) -> set[str]:
        items = mlflow_store.list_artifacts(run.info.run_id, path)
        return {item.path for item in items if not item.is_dir} | {
            name for item in items if item.is_dir for name in listed(item.path)
        }

    assert listed() == {"report/index.html", "report/models/a.html", "report/thumbnails/x-256.png"}
    page = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="report/index.html")
    assert Path(page).read_text() == PAGES["index.html"]


def _evaluation_report() -> ReportFolder:
    """The report of one model's one image, a checklist of two questions (one passed, one failed), with the
    evaluate run's two plots."""
    benchmark = pd.DataFrame({"sample_id": ["s1"], "group": ["g"], "setting": ["plain"], "prompt": ["Draw"]})
    checklists = pd.DataFrame(
        {
            "sample_id": ["s1"] * 2,
            "question_id": ["q1", "q2"],
            "question": ["A?", "B?"],
            "expected_text": [None] * 2,
        }
    )
    verdicts = pd.DataFrame(
        {
            "model": ["m", "m"], "sample_id": ["s1", "s1"], "question_id": ["q1", "q2"], "layer": [2, 2],
            "track": ["entity", "process"], "verdict": ["yes", "no"], "status": ["judged"] * 2,
            "evidence": [None] * 2, "reasoning": [None] * 2, "reason": [None] * 2,
        }
    )  # fmt: skip
    scores = score_samples(verdicts, benchmark, "exclude")
    table = score_table(scores, BootstrapConfig(n_boot=20))
    board = leaderboard(table)
    images = {"m/s1": lambda: Image.new("RGB", (300, 200), "navy")}
    views = image_views(verdicts, checklists, scores, benchmark, images, {}, thumbnail_px=100)
    track_bars, group_heatmap = report_plots(board, table, "sciir_veto")
    tables = [
        replace(table_from_frame("board", board[["model", "final"]]), plot=track_bars),
        replace(table_from_frame("groups", board[["model", "coverage"]]), plot=group_heatmap),
    ]
    return render_report(tables, views, {"judge": "scripted"})


def _images_on_disk(root: Path) -> dict[str, list[Path]]:
    """Per page of the folder at ``root``, the files its ``<img>`` sources point to."""
    return {
        page.relative_to(root).as_posix(): [
            (page.parent / src).resolve() for src in html.fromstring(page.read_text()).xpath("//img/@src")
        ]
        for page in sorted(root.rglob("*.html"))
    }


def test_every_image_a_saved_page_shows_is_a_png_file_in_the_folder_that_decodes(tmp_path):
    root = tmp_path / "report"
    ReportFolderDataset(path=str(root)).save(_evaluation_report())
    shown = _images_on_disk(root)
    assert [len(files) for files in shown.values()] == [2, 1]  # index.html: 2 plots; models/m.html: 1 image
    for page, files in shown.items():
        for file in files:
            assert file.is_file() and file.is_relative_to(root.resolve()), f"{page}: {file} missing"
            picture = Image.open(io.BytesIO(file.read_bytes()))
            picture.load()  # every pixel decoded: a truncated file fails here
            assert picture.format == "PNG" and min(picture.size) > 0, f"{page}: {file}"


def test_the_saved_folder_moved_elsewhere_still_finds_every_image(tmp_path):
    ReportFolderDataset(path=str(tmp_path / "report")).save(_evaluation_report())
    moved = tmp_path / "elsewhere" / "copy"
    shutil.move(tmp_path / "report", moved)  # relative links: the folder works wherever it is
    assert all(file.is_file() for files in _images_on_disk(moved).values() for file in files)
