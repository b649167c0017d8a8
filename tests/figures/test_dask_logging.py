"""Curate's Dask cluster logs at the level the run's logging configuration (conf/logging.yml) gives Dask's logger,
and leaves the run's environment as it found it.

Dask sets its logger to INFO in each process that imports it, after Kedro has configured the run's logging, and
its own silencing reaches only handlers of its own, none under Kedro. Its nannies write the variables worker
processes start with (``OMP_NUM_THREADS=1`` ...) into the environment of the process that starts them. Each case
runs in a fresh interpreter, as a `kedro run` does: there Dask is imported for the first time, after the logging
configuration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, logging, logging.config, os, sys
    import yaml

    # At import, as Kedro's own does, so that the worker processes (which import this module as they start)
    # log through the same configuration before they import Dask.
    with open(os.environ["TEST_LOGGING_CONFIG"], encoding="utf-8") as stream:
        logging.config.dictConfig(yaml.safe_load(stream))

    if __name__ == "__main__":
        names = []

        class Keep(logging.Handler):
            def emit(self, record):
                if record.name.startswith("distributed") and record.levelno < logging.WARNING:
                    names.append(record.name)

        logging.getLogger().addHandler(Keep())
        from sciir.figures.params import CurateParams
        from sciir.figures.shard_cluster import dask_client

        with open(sys.argv[1], encoding="utf-8") as stream:
            settings = CurateParams.model_validate(json.load(stream))
        before = dict(os.environ)
        with dask_client(settings) as client:
            assert client.submit(sum, [1, 2]).result() == 3
        changed = {name for name in {*before, *os.environ} if before.get(name) != os.environ.get(name)}
        print("DASK_BELOW_WARNING=" + json.dumps(sorted(set(names))))
        print("ENVIRONMENT_CHANGED=" + json.dumps(sorted(changed)))
    """
)


def _printed(output: str, name: str) -> Any:
    line = next(line for line in output.splitlines() if line.startswith(f"{name}="))
    return json.loads(line.split("=", 1)[1])


def _run_cluster(tmp_path: Path, dask_level: str, params: dict[str, Any]) -> tuple[list[str], str]:
    """conf/logging.yml with Dask's logger at ``dask_level``, then a local cluster started and used once: the names
    of Dask's loggers that logged below WARNING in this process, and what the processes printed (with
    ``ENVIRONMENT_CHANGED=``, the variables whose values differ after the cluster from before it)."""
    config = yaml.safe_load((REPO / "conf" / "logging.yml").read_text(encoding="utf-8"))
    assert config["loggers"]["distributed"] == {"level": "WARNING"}, (
        "the shipped configuration keeps Dask quiet"
    )
    config["loggers"]["distributed"] = {"level": dask_level}
    (tmp_path / "logging.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (tmp_path / "params.json").write_text(json.dumps(params), encoding="utf-8")
    (tmp_path / "run.py").write_text(SCRIPT, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(tmp_path / "run.py"), str(tmp_path / "params.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
        env=os.environ | {"TEST_LOGGING_CONFIG": str(tmp_path / "logging.yml"), "COLUMNS": "240"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    return _printed(result.stdout, "DASK_BELOW_WARNING"), result.stdout + result.stderr


def _cluster_params(curate_params: Callable[..., dict[str, Any]], tmp_path: Path, *, processes: bool) -> dict:
    return curate_params(
        workers={"count": 1},
        shards={"folder": str(tmp_path / "shards")},
        cluster={"scheduler": None, "processes": processes},
    )


@pytest.mark.slow
def test_a_cluster_of_worker_processes_logs_nothing_below_the_configured_warning(
    tmp_path: Path, curate_params: Callable[..., dict[str, Any]]
) -> None:
    below, printed = _run_cluster(
        tmp_path, "WARNING", _cluster_params(curate_params, tmp_path, processes=True)
    )
    assert below == []  # the scheduler, in this process
    assert "Start worker at" not in printed  # the worker process, which imports Dask itself
    # The nanny set OMP_NUM_THREADS, MALLOC_TRIM_THRESHOLD_ ... and the level here to start the worker with them;
    # the run's later stages find the environment they would have found without a cluster.
    assert _printed(printed, "ENVIRONMENT_CHANGED") == []


@pytest.mark.slow
def test_a_user_who_asks_for_dasks_info_records_gets_them(
    tmp_path: Path, curate_params: Callable[..., dict[str, Any]]
) -> None:
    below, _ = _run_cluster(tmp_path, "INFO", _cluster_params(curate_params, tmp_path, processes=False))
    assert {"distributed.scheduler", "distributed.worker"} <= set(below)
