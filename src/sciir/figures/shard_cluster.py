"""Running curate's shards on Dask distributed, with progress a person can follow.

:func:`curate_in_shards` curates figures in shards (``sciir.figures.shards``): each shard's images and
rows are written to the shard folder as it finishes, and a rerun after a crash computes only the shards
not finished. It connects to the scheduler at ``cluster.scheduler`` or starts a local cluster of
``workers.count`` workers, processes or (``cluster.processes: false``) threads of the node's process, one
thread each: a worker curates one figure at a time, in its own child process. Only a window of shards
is submitted at a time, so the node's memory does not grow with the number of figures; each finished
shard is recorded in the manifest at once.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pandas as pd

from sciir.figures.curated_rows import stored_curated
from sciir.figures.params import CurateParams
from sciir.figures.shard_store import ShardStore, ShardSummary
from sciir.figures.shards import Shard, close_figure_pools, curate_shard, plan_shards
from sciir.images.payload import ImageFile
from sciir.runs.progress import Progress

logger = logging.getLogger(__name__)

SHARDS_IN_FLIGHT_PER_THREAD = 2  # enough to keep a worker busy while the node records the last one
LOG_EVERY_S = 30.0
DASK_LOG_LEVEL_VARIABLE = "DASK_DISTRIBUTED__LOGGING__DISTRIBUTED"  # Dask's `distributed.logging.distributed`
SPAWN_ENVIRONMENT = "distributed.nanny.pre-spawn-environ"  # what a worker process starts with
_NANNY_VARIABLES = ("PYTHONHASHSEED", "__DASK_PARENT_PID")  # what a nanny sets besides its spawn environment


def _configured_dask_log_level() -> int | None:
    """The level the run's logging configuration (conf/logging.yml) gives Dask's logger, ``distributed``, if any.

    Dask sets that logger to INFO in each process that imports it, after Kedro has configured the run's
    logging, and silences only handlers of its own (none under Kedro, whose handler is the root's): its
    scheduler and workers would log every start, connection and stop into the run's log (about 60 records
    in the default run)."""
    level = logging.getLogger("distributed").level
    return level if level != logging.NOTSET else None


@contextmanager
def dask_client(settings: CurateParams) -> Iterator[Any]:
    """A client of the configured scheduler, or of a local cluster closed on exit."""
    log_level = _configured_dask_log_level()  # before the import below resets it
    import dask
    from dask.distributed import Client, LocalCluster

    if log_level is not None:
        logging.getLogger("distributed").setLevel(log_level)
    if settings.cluster.scheduler:
        with Client(settings.cluster.scheduler) as client:
            yield client
        return
    workers = settings.workers.count or os.cpu_count() or 1
    spawn_env: dict[str, Any] = dask.config.get(SPAWN_ENVIRONMENT)
    if log_level is not None:
        # Worker processes (processes: true) import Dask anew: they read its level from their environment.
        spawn_env = spawn_env | {DASK_LOG_LEVEL_VARIABLE: str(log_level)}
    # Workers start child processes (the per-figure limits), which a daemonic process may not.
    config = {"distributed.worker.daemon": False, SPAWN_ENVIRONMENT: spawn_env}
    with _nanny_variables_restored(spawn_env):
        with dask.config.set(config):
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=settings.cluster.processes,
                dashboard_address=None,
            )
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
            close_figure_pools()  # worker threads' figure workers live in this process


@contextmanager
def _nanny_variables_restored(spawn_environment: dict[str, Any]) -> Iterator[None]:
    """The variables Dask's nannies set before starting a worker process, back to this process's values on exit
    (unset where they were unset), whether the cluster started or not.

    A nanny writes them into the environment of the process that starts the workers (``os.environ.update``,
    dask/distributed#6749), this one: the run's later stages would inherit ``OMP_NUM_THREADS=1`` and the rest.
    It also sets ``PYTHONHASHSEED`` where unset or 0, and ``__DASK_PARENT_PID`` (its workers' process titles)."""
    before = {name: os.environ.get(name) for name in [*spawn_environment, *_NANNY_VARIABLES]}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class ShardProgress:
    """Shards and figures done out of the total: a bar on a terminal, else a log line every 30 s."""

    def __init__(self, shards: Sequence[Shard], reused: dict[str, ShardSummary]) -> None:
        self.total_shards = len(shards)
        self.done_shards = 0
        self._progress = Progress("curate", sum(len(shard.figures) for shard in shards), unit="figure")
        self._last_log = time.monotonic()
        for summary in reused.values():
            self.add(summary, reused=True)

    def add(self, summary: ShardSummary, reused: bool = False) -> None:
        self.done_shards += 1
        self._progress.advance(summary.figures, cached=summary.figures if reused else 0)
        if time.monotonic() - self._last_log >= LOG_EVERY_S:
            self._last_log = time.monotonic()
            logger.info(self.line())

    def line(self) -> str:
        figures = self._progress.figures()
        computed = figures.done - figures.cache_hits
        rate = computed / figures.seconds if figures.seconds > 0 else 0.0
        left = f", about {(figures.total - figures.done) / rate:.0f} s left" if rate > 0 else ""
        return (
            f"curate: {self.done_shards}/{self.total_shards} shards, {figures.done}/{figures.total} figures "
            f"({figures.cache_hits} from an earlier run), {rate:.1f} figures/s{left}"
        )

    def close(self) -> None:
        self._progress.close()


def run_shards(
    client: Any,
    shards: Sequence[Shard],
    settings: CurateParams,
    run_id: str,
    store: ShardStore,
    on_done: Callable[[ShardSummary], None],
) -> None:
    """Curate ``shards`` on the cluster; each one is recorded in ``store`` as soon as it is written."""
    from dask.distributed import as_completed

    if not shards:
        return
    window = SHARDS_IN_FLIGHT_PER_THREAD * max(1, sum(client.nthreads().values()))
    waiting = iter(shards)

    def submit_next(finished: Any) -> None:
        shard = next(waiting, None)
        if shard is not None:
            # pure=False: a shard the cluster computed once is computed again when asked again (a rerun).
            finished.add(client.submit(curate_shard, shard, settings, run_id, pure=False))

    finished = as_completed()
    for _ in range(window):
        submit_next(finished)
    for future in finished:
        summary = future.result()  # a shard whose task failed stops the run; finished shards stay
        store.record(summary)
        on_done(summary)
        future.release()
        submit_next(finished)


def _local_folder_absolute(settings: CurateParams) -> CurateParams:
    """The settings with a local shard folder made absolute, so workers find it whatever their directory."""
    folder = settings.shards.folder
    if "://" in folder:
        return settings
    shards = settings.shards.model_copy(update={"folder": os.path.abspath(folder)})
    return settings.model_copy(update={"shards": shards})


def curate_in_shards(
    figures: Sequence[dict[str, Any]], methods: Sequence[str | None], settings: CurateParams
) -> tuple[pd.DataFrame, dict[str, ImageFile]]:
    """Curate ``figures`` (rows of ``figures``, with their articles' methods text) in shards on Dask,
    reusing the shards an earlier run finished; the curated table and lazy handles on the written images
    of the kept panels (no image bytes)."""
    settings = _local_folder_absolute(settings)
    shards = plan_shards(figures, methods, settings)
    store = ShardStore(settings.shards.folder)
    reused = store.begin(shard.key for shard in shards)
    to_run = [shard for shard in shards if shard.key not in reused]
    progress = ShardProgress(shards, reused)
    try:
        if to_run:
            with dask_client(settings) as client:
                run_shards(client, to_run, settings, uuid.uuid4().hex, store, progress.add)
    finally:
        progress.close()
    store.complete()
    return stored_curated(store, [shard.key for shard in shards])
