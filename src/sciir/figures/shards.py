"""Curate's figures in shards: the plan (which figures, under which key) and the work on one shard.

:func:`curate_shard` runs in a Dask worker. It curates the shard's figures one at a time in a child
process of that worker (``sciir.figures.isolated``: each figure under ``workers.timeout_s`` and
``workers.memory_mb``, a crash or hang costs that figure only) and writes the shard's images and rows
to the shard folder as soon as they are made, so PNG bytes never travel back to the node.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import stat
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sciir.figures.curated_rows import figure_rows
from sciir.figures.figure_work import FigureOutcome, FigureTask, curate_figure_file
from sciir.figures.isolated import Failed, IsolatedPool, WorkerLimits
from sciir.figures.params import CurateParams
from sciir.figures.shard_store import ShardStore, ShardSummary

# CurateParams sections read only by the filtering node (``sciir.pipelines.curate.screen_nodes``).
FILTERING_ONLY = frozenset({"screen", "review", "near_duplicates"})


@dataclass(frozen=True)
class Shard:
    """Figures curated as one task: ``figures`` (rows of ``figures``) with their articles' methods text."""

    index: int
    key: str
    figures: tuple[dict[str, Any], ...]
    methods: tuple[str | None, ...]


def _file_digest(path: str) -> str | None:
    """The sha256 of a file's bytes (None when it cannot be read): a changed file gives its shard a new key.

    The content, not the modification time: `dvc repro` and `dvc checkout` write outputs anew with the same
    bytes (ingest's embedded sample, pulled figures), and those keep their shards. Reading every figure
    file costs about a second per GB, against seconds per figure to curate it again. Only a regular file
    is read here (a FIFO would block the node): anything else is curated, under the per-figure limits, in
    a worker's child process, which says what it is.
    """
    digest = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "not a regular file"
        with open(path, "rb") as file:
            while block := file.read(1 << 20):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _settings_fingerprint(settings: CurateParams) -> dict[str, Any]:
    """The settings that change what a figure yields (not where or on how many workers it runs, nor the
    screen, review and near-duplicate settings, which only the later filtering node reads)."""
    dumped = settings.model_dump(mode="json", exclude=set(FILTERING_ONLY) | {"shards", "cluster"})
    dumped["workers"].pop("count", None)
    weights = settings.detector.yolo_weights
    # A detector retrained into the same file is another detector: its shards are not resumed.
    dumped["detector"]["yolo_weights_file"] = _file_digest(weights) if weights else None
    return dumped


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A digest of the project's Python source: a shard computed by other code is not reused.

    All of ``sciir``, not only curate's modules, so no helper a figure's work imports is missed; a change
    anywhere recomputes curate once. System programs (Tesseract, OpenCV's data) are not part of it.
    """
    package = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for source in sorted(package.rglob("*.py")):
        digest.update(f"{source.relative_to(package).as_posix()}\0".encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def shard_key(
    figures: Sequence[dict[str, Any]], methods: Sequence[str | None], settings: CurateParams
) -> str:
    content = {
        "code": code_fingerprint(),
        "settings": _settings_fingerprint(settings),
        "figures": [
            {**figure, "methods_text": text, "image_file": _file_digest(str(figure["image_path"]))}
            for figure, text in zip(figures, methods, strict=True)
        ],
    }
    encoded = json.dumps(content, sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(encoded).hexdigest()[:24]


def plan_shards(
    figures: Sequence[dict[str, Any]], methods: Sequence[str | None], settings: CurateParams
) -> list[Shard]:
    """The figures, in order, in shards of ``shards.figures``."""
    size = settings.shards.figures
    shards = []
    for index, start in enumerate(range(0, len(figures), size)):
        chunk, texts = tuple(figures[start : start + size]), tuple(methods[start : start + size])
        shards.append(Shard(index, shard_key(chunk, texts, settings), chunk, texts))
    return shards


# One pool of figure workers per Dask worker thread, kept for the next shard (a spawn costs ~0.6 s).
_POOLS: dict[tuple[int, WorkerLimits], IsolatedPool[FigureTask, FigureOutcome]] = {}


def _figure_pool(settings: CurateParams) -> IsolatedPool[FigureTask, FigureOutcome]:
    if multiprocessing.current_process().daemon:
        raise RuntimeError(
            "curate's figures are curated in child processes of the Dask worker, which a daemonic worker "
            "cannot start: start the workers with distributed.worker.daemon set to False "
            "(DASK_DISTRIBUTED__WORKER__DAEMON=False)"
        )
    limits = WorkerLimits(1, settings.workers.timeout_s, settings.workers.memory_mb)
    key = (threading.get_ident(), limits)
    if key not in _POOLS:
        _POOLS[key] = IsolatedPool(curate_figure_file, limits)
    return _POOLS[key]


def close_figure_pools() -> None:
    """Stop this process's figure workers (those of a local cluster's worker threads, once the run ends;
    a worker process's go with it)."""
    while _POOLS:
        _POOLS.popitem()[1].close()


def _outcomes(shard: Shard, settings: CurateParams) -> list[FigureOutcome | Failed]:
    tasks = [FigureTask(str(figure["image_path"]), settings) for figure in shard.figures]
    outcomes: list[FigureOutcome | Failed] = [Failed("not curated")] * len(tasks)
    for index, outcome in _figure_pool(settings).run(tasks):
        outcomes[index] = outcome
    return outcomes


def curate_shard(shard: Shard, settings: CurateParams, run_id: str) -> ShardSummary:
    """Curate a shard's figures and write its images, then its rows, to the shard folder."""
    import pandas as pd

    store = ShardStore(settings.shards.folder)
    store.start_shard(shard.key)
    rows: list[dict[str, Any]] = []
    images = 0
    for figure, text, outcome in zip(shard.figures, shard.methods, _outcomes(shard, settings), strict=True):
        one_figure_rows, figure_images = figure_rows(figure, text, outcome)
        rows.extend(one_figure_rows)
        for sample_id, image in figure_images.items():
            store.write_image(shard.key, sample_id, image.read())
            images += 1
    store.write_rows(shard.key, pd.DataFrame(rows))
    summary = ShardSummary(shard.key, run_id, len(shard.figures), len(rows), images)
    store.write_record(summary)
    return summary
