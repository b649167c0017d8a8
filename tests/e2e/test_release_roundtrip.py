"""The release procedure of docs/release.md with a local DVC remote: the session's project clone reproduces
bench_select, tags the release and pushes it; a git clone of the tag pulls it and loads the same release with
``datasets.load_dataset``.

The project clone is the one the default run and the documented commands ran in (they run first, on the same
xdist worker), so `dvc repro bench_select` finds its stages reproduced; run alone, it reproduces them cold."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# One xdist worker runs every module that shares the session's project clone (tests/e2e/conftest.py).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_project")]

BIN = Path(sys.executable).parent
TAG = "sciir-release-v1"
RELEASE = Path("data/05_model_input/release")
GIT = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]


def _run(folder: Path, *command: str) -> str:
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("SCIIR_MLFLOW_TRACKING_URI", None)
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    return result.stdout


def _load(folder: Path):
    import datasets

    return datasets.load_dataset(str(folder / RELEASE), cache_dir=str(folder.parent / f"hf_{folder.name}"))


@pytest.fixture(scope="module")
def published(project: Path) -> Path:
    """The project clone, with the release reproduced, committed, tagged and pushed to its ./dvcstore."""
    origin = project
    _run(origin, str(BIN / "dvc"), "repro", "bench_select")
    _run(origin, *GIT, "add", "-A")
    # Empty when the committed dvc.lock already names these outputs (a reproduction gives the same bytes).
    _run(origin, *GIT, "commit", "--allow-empty", "-qm", "SciIR release v1")
    _run(origin, *GIT, "tag", "-a", TAG, "-m", "SciIR release v1")
    _run(origin, str(BIN / "dvc"), "push")
    return origin


def test_a_clone_of_the_tag_pulls_and_loads_the_same_release(published, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    copy = tmp_path / "sciir-v1"
    _run(tmp_path, "git", "clone", "-q", "--branch", TAG, str(published), str(copy))
    assert not (copy / RELEASE).exists()  # data is not in git
    # The default remote is a folder of each checkout: point the clone at the publisher's.
    _run(copy, str(BIN / "dvc"), "remote", "modify", "--local", "local", "url", str(published / "dvcstore"))
    _run(copy, str(BIN / "dvc"), "pull", "bench_select")

    pulled, original = _load(copy), _load(published)
    assert set(pulled) == set(original) == {"train", "benchmark"}
    for split in original:
        assert pulled[split]["sample_id"] == original[split]["sample_id"]
        assert pulled[split].num_rows > 0
    first = pulled["benchmark"][0]
    assert first["image"].size == (1024, 1024) and first["doi"]
    assert (copy / RELEASE / "README.md").read_text() == (published / RELEASE / "README.md").read_text()
