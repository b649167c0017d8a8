"""The release procedure of docs/release.md with a local DVC remote: the session's project clone reproduces
bench_select, tags the release and pushes it; a git clone of the tag pulls it, loads the same release with
``datasets.load_dataset`` and, with nothing else run there, finetunes a LoRA on its train split.

The project clone is the one the default run and the documented commands ran in (they run first, on the same
xdist worker), so `dvc repro bench_select` finds its stages reproduced; run alone, it reproduces them cold."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

# One xdist worker runs every module that shares the session's project clone (tests/e2e/conftest.py).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_project")]

BIN = Path(sys.executable).parent
TAG = "sciir-release-v1"
RELEASE = Path("data/05_model_input/release")
GIT = ["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"]


def _run(folder: Path, *command: str) -> str:
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env |= {"PYTHONPATH": str(folder / "src"), "COLUMNS": "240"}  # the checkout's own code; long log lines
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


@pytest.fixture(scope="module")
def clone_of_tag(published: Path, tmp_path_factory) -> Path:
    """A git clone of the release tag elsewhere, its release pulled (docs/release.md), nothing else run."""
    root = tmp_path_factory.mktemp("elsewhere")
    copy = root / "sciir-v1"
    _run(root, "git", "clone", "-q", "--branch", TAG, str(published), str(copy))
    assert not (copy / RELEASE).exists()  # data is not in git
    # The default remote is a folder of each checkout: point the clone at the publisher's.
    _run(copy, str(BIN / "dvc"), "remote", "modify", "--local", "local", "url", str(published / "dvcstore"))
    _run(copy, str(BIN / "dvc"), "pull", "bench_select")
    return copy


def test_a_clone_of_the_tag_pulls_and_loads_the_same_release(published, clone_of_tag, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    pulled, original = _load(clone_of_tag), _load(published)
    assert set(pulled) == set(original) == {"train", "benchmark"}
    for split in original:
        assert pulled[split]["sample_id"] == original[split]["sample_id"]
        assert pulled[split].num_rows > 0
    first = pulled["benchmark"][0]
    assert first["image"].size == (1024, 1024) and first["doi"]
    card = RELEASE / "README.md"
    assert (clone_of_tag / card).read_text() == (published / card).read_text()


def test_finetune_trains_on_the_pulled_release_with_nothing_else_run(clone_of_tag):
    # docs/release.md and docs/finetune.md: the release folder's train split, in the clone of the tag.
    assert not (clone_of_tag / "data" / "06_models" / "lora").exists()
    params = f"finetune.train_data.source=release,finetune.train_data.path={RELEASE}"
    said = _run(clone_of_tag, str(BIN / "kedro"), "run", "--pipelines", "finetune", "--params", params)
    summary = json.loads((clone_of_tag / "data" / "06_models" / "finetune_summary.json").read_text())
    shards = sorted((clone_of_tag / RELEASE / "data").glob("train-*.parquet"))
    train_ids = [i for shard in shards for i in pd.read_parquet(shard, columns=["sample_id"])["sample_id"]]
    limit = yaml.safe_load((clone_of_tag / "conf/base/parameters_finetune.yml").read_text())["finetune"][
        "max_train_samples"
    ]
    unpacked = sorted(path.stem for path in (clone_of_tag / "data/05_model_input/release_images").iterdir())
    # the first rows of the release's train split, as many as max_train_samples allows, were trained on
    assert sorted(train_ids[: limit or None]) == unpacked and summary["n_train"] == len(unpacked) > 0
    assert (clone_of_tag / "data" / "06_models" / "lora" / "pytorch_lora_weights.safetensors").is_file()
    assert "MLflow run 'finetune on release'" in " ".join(said.split())
