"""A Kedro dataset of an HTML report written as a folder: pages, the thumbnails and the plots they show.

A :class:`sciir.evaluation.report.ReportFolder` holds the pages (HTML text by path relative to the
folder, ``index.html`` the summary), the plots (PNG bytes, ``plots/``, written on every save: their
names say what they plot, not what they show) and the thumbnails, each with a function that makes its bytes. A
thumbnail's path names its content (``sciir.evaluation.thumbnails`` names it by the source image's
sha256 and size), so a thumbnail already in the folder is kept and its function never called: a rerun
makes only the thumbnails of new images.
Missing ones are made in threads (Pillow decodes, resizes and encodes without holding the GIL) and
written under a temporary name first, so a killed run never leaves a truncated file to be reused.

Files that an earlier save wrote below the folder's top level (``models/``, ``plots/``, ``thumbnails/``) and this
report no longer lists are removed: the folder holds exactly this report, so the MLflow artifact that
kedro-mlflow logs from it (``MlflowArtifactDataset`` logs a folder dataset's whole folder, whatever
it holds) is this report and no earlier one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath
from typing import Any

from kedro.io import AbstractDataset

from sciir.evaluation.plots import PLOTS
from sciir.evaluation.report import SUMMARY_PAGE, ReportFolder

logger = logging.getLogger(__name__)


def _inside(root: Path, relative: str) -> Path:
    """``root / relative``, refused when ``relative`` is absolute or climbs out of ``root``."""
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise ValueError(f"report file {relative!r} is not a path inside the report folder")
    return root.joinpath(*parts)


def _write_atomically(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` through a temporary file renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.part")
    partial.write_bytes(content)
    os.replace(partial, path)


class ReportFolderDataset(AbstractDataset[ReportFolder, ReportFolder]):
    """A report folder at ``path`` (local): saves a :class:`ReportFolder`, making only the thumbnails
    not there yet with ``workers`` threads (default: one per CPU); loads the pages, thumbnail and plot files."""

    def __init__(
        self, *, path: str, workers: int | None = None, metadata: dict[str, Any] | None = None
    ) -> None:
        # ``_path``: the attribute kedro-mlflow's MlflowArtifactDataset logs as a folder artifact.
        self._path = str(path)
        self._workers = workers or os.cpu_count() or 1
        self.metadata = metadata

    def load(self) -> ReportFolder:
        root = Path(self._path)
        files = sorted(path for path in root.rglob("*") if path.is_file() and not path.name.startswith("."))
        relative = {path.relative_to(root).as_posix(): path for path in files}
        pages = {name: path.read_text() for name, path in relative.items() if path.suffix == ".html"}
        plots = {name: path.read_bytes() for name, path in relative.items() if name.startswith(f"{PLOTS}/")}
        thumbnails = {
            name: path.read_bytes
            for name, path in relative.items()
            if path.suffix != ".html" and name not in plots
        }
        return ReportFolder(pages=pages, thumbnails=thumbnails, plots=plots)

    def save(self, data: ReportFolder) -> None:
        root = Path(self._path)
        for relative, text in data.pages.items():
            _write_atomically(_inside(root, relative), text.encode("utf-8"))
        for relative, png in data.plots.items():
            _write_atomically(_inside(root, relative), png)
        missing = {
            relative: make
            for relative, make in data.thumbnails.items()
            if not _inside(root, relative).exists()
        }
        made = self._make(root, missing)
        removed = self._remove_stale(root, set(data.pages) | set(data.thumbnails) | set(data.plots))
        logger.info(
            "report in %s: %d pages, %d plots, %d thumbnails (%d made, %d kept from before), "
            "%d stale files removed",
            root,
            len(data.pages),
            len(data.plots),
            len(data.thumbnails),
            made,
            len(data.thumbnails) - len(missing),
            removed,
        )

    def _make(self, root: Path, makers: Mapping[str, Callable[[], bytes]]) -> int:
        """Make and write the thumbnails of ``makers``; the number written. One that cannot be made is
        logged and left out (its page shows the image's alt text)."""

        def make_one(item: tuple[str, Callable[[], bytes]]) -> bool:
            relative, make = item
            try:
                content = make()
            except (OSError, ValueError) as error:
                logger.warning("report thumbnail %s not made: %s", relative, error)
                return False
            _write_atomically(_inside(root, relative), content)
            return True

        if not makers:
            return 0
        with ThreadPoolExecutor(min(self._workers, len(makers))) as pool:
            return sum(pool.map(make_one, makers.items()))

    @staticmethod
    def _remove_stale(root: Path, keep: set[str]) -> int:
        """Remove files in the subfolders this report writes to that it does not list; the number removed.
        The top level is left alone: its one page is overwritten, and nothing else there is the report's."""
        folders = {_inside(root, relative).parent for relative in keep} - {root}
        removed = 0
        for folder in folders:
            for path in folder.iterdir():
                if path.is_file() and path.relative_to(root).as_posix() not in keep:
                    path.unlink()
                    removed += 1
        return removed

    def _exists(self) -> bool:
        return (Path(self._path) / SUMMARY_PAGE).is_file()

    def _describe(self) -> dict[str, Any]:
        return {"path": self._path, "workers": self._workers}
