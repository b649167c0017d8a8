"""The report folder dataset: pages written, thumbnails made once, stale files removed, an MLflow folder artifact."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import mlflow
import pytest
from kedro.io import DatasetError
from kedro_mlflow.io.artifacts import MlflowArtifactDataset

from sciir.catalog.report_dataset import ReportFolderDataset
from sciir.evaluation.report import ReportFolder

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
