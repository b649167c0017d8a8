"""The project copy the end-to-end tests share: a fresh clone of the working tree, prepared once per session.

It holds every file git tracks or would track (tracked and untracked, not ignored; uncommitted edits
included, so the tests check the code as it is now), committed to its own git repository, and a
``.venv`` standing in for the one ``make run`` would install: a real virtual environment whose
site-packages reach this environment's packages, with this clone's ``src`` first on ``sys.path`` and
console scripts (kedro, dvc, mlflow, ...) of its own. Its ``.installed`` stamp is newer than
pyproject.toml, so ``make run`` skips the pip install (no network, minutes saved) and does the rest.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The README's first command: set up, then the default run (all eight pipelines on the embedded sample).
DEFAULT_RUN = "make run"


def copy_working_tree(root: Path) -> None:
    """Every tracked or untracked-but-not-ignored file of the repository, as it is on disk."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)


def commit_snapshot(root: Path) -> None:
    git = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "snapshot"]):
        subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)


def provision_venv(root: Path) -> Path:
    """``root/.venv``: this environment's packages, the clone's ``src`` first, its own console scripts."""
    venv = root / ".venv"
    subprocess.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    purelib.mkdir(parents=True, exist_ok=True)
    (purelib / "00_sciir_clone.pth").write_text(f"{root / 'src'}\n")
    shared = sysconfig.get_paths()["purelib"]
    (purelib / "zz_shared_packages.pth").write_text(f"import site; site.addsitedir({shared!r})\n")
    ours = f"#!{sys.executable}"
    for script in Path(sys.executable).parent.iterdir():
        target = venv / "bin" / script.name
        if target.exists() or not script.is_file():
            continue
        try:
            text = script.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if text.startswith(ours + "\n"):
            target.write_text(f"#!{venv / 'bin' / 'python'}\n" + text[len(ours) + 1 :], encoding="utf-8")
            target.chmod(0o755)
    (venv / ".installed").touch()
    return venv


@pytest.fixture(scope="session")
def project(tmp_path_factory) -> Path:
    """The shared clone (see the module docstring)."""
    root = tmp_path_factory.mktemp("sciir")
    copy_working_tree(root)
    (root / "conf" / "local").mkdir(parents=True, exist_ok=True)
    commit_snapshot(root)
    provision_venv(root)
    return root


def newcomer_env() -> dict[str, str]:
    """This environment without what a newcomer's shell lacks: no venv on PATH, no PYTHONPATH, no MLflow override.

    Telemetry stays off (``KEDRO_DISABLE_TELEMETRY``, as ``make`` and dvc.yaml set it): nothing may be sent.
    """
    venv_bins = {str(Path(sys.executable).parent), str(REPO / ".venv" / "bin")}
    path = [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry not in venv_bins]
    dropped = (
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHOME",
        "SCIIR_MLFLOW_TRACKING_URI",
        "SCIIR_MLFLOW_ARTIFACT_URI",
    )
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    return env | {"PATH": os.pathsep.join(path), "KEDRO_DISABLE_TELEMETRY": "1"}


@pytest.fixture(scope="session")
def default_run(project: Path) -> subprocess.CompletedProcess:
    """The README's first command (``DEFAULT_RUN``) in the shared clone, in a newcomer's shell, once per session:
    tests/e2e/test_default_run.py checks what it made, and the documented commands (README.md first) go on from
    it instead of running it a second time. The result is returned whatever the exit status."""
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", DEFAULT_RUN],
        cwd=project, env=newcomer_env(), capture_output=True, text=True, timeout=1800,
    )  # fmt: skip


@pytest.fixture(scope="session")
def make_clone(tmp_path_factory):
    """Another fresh clone with its .venv, for tests that need one no other test has run anything in."""

    def make(name: str, *, commit: bool = False) -> Path:
        root = tmp_path_factory.mktemp(name)
        copy_working_tree(root)
        if commit:
            commit_snapshot(root)
        provision_venv(root)
        return root

    return make


def kedro_command(
    root: Path, *args: str, env_vars: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``kedro ARGS`` with the clone's own kedro, as a newcomer runs it (no SCIIR_* overrides but
    ``env_vars``, as a user sets them on the command line); the result is returned whatever the exit
    status, for the test to judge."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SCIIR_")}
    # A wide console: Rich wraps a log message beside the name of the module that logs it, so at its default
    # 80 columns where a message breaks depends on that name; the tests read the messages, not the layout.
    env |= {"KEDRO_DISABLE_TELEMETRY": "1", "COLUMNS": "240", **(env_vars or {})}
    return subprocess.run(
        [str(root / ".venv" / "bin" / "kedro"), *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def kedro_run(root: Path, *args: str, env_vars: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``kedro run ARGS`` (:func:`kedro_command`)."""
    return kedro_command(root, "run", *args, env_vars=env_vars)


@pytest.fixture(scope="session")
def kedro():
    """:func:`kedro_run`, for tests in fresh clones."""
    return kedro_run


@pytest.fixture(scope="session")
def kedro_cli():
    """:func:`kedro_command` (any kedro command: ``kedro_cli(root, "review", "--save-benchmark")``)."""
    return kedro_command


def pipeline_run_names(root: Path) -> list[str]:
    """The names of the MLflow runs the ``kedro run`` commands in ``root`` opened (not their nested per-model
    runs), oldest first, read from the clone's own store."""
    query = (
        "SELECT name FROM runs WHERE run_uuid NOT IN "
        "(SELECT run_uuid FROM tags WHERE key = 'mlflow.parentRunId') ORDER BY start_time"
    )
    with sqlite3.connect(root / "mlruns" / "mlflow.db") as store:
        return [name for (name,) in store.execute(query)]


@pytest.fixture(scope="session")
def run_names():
    """:func:`pipeline_run_names`, for tests in fresh clones."""
    return pipeline_run_names
