"""The adapter as a registered model version, on a real MLflow store (SQLite, local artifacts)."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest

from sciir.runs.model_registry import DIGEST_TAG, RUN_TAG, file_sha256, register_adapter

ADAPTER = "pytorch_lora_weights.safetensors"


def _adapter(folder: Path, content: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ADAPTER).write_bytes(content)
    return folder


def _register_in_a_run(folder: Path, tags: dict[str, str] | None = None) -> tuple[str, str]:
    with mlflow.start_run() as run:
        mlflow.set_tags({"dvc.data_revision": "abc123", "git.commit": "def456", "other": "x"})
        mlflow.log_artifacts(str(folder), "finetune/adapter")
        version = register_adapter(
            "sciir-lora", "finetune/adapter", folder / ADAPTER, tags or {"family": "f"}
        )
    return run.info.run_id, version


@pytest.mark.slow
def test_a_version_points_at_the_logged_adapter_and_names_its_data(mlflow_store, tmp_path):
    folder = _adapter(tmp_path / "lora", b"adapter one")
    run_id, version = _register_in_a_run(folder)

    (found,) = mlflow_store.search_model_versions("name = 'sciir-lora'")
    assert (found.version, found.run_id) == (int(version), run_id)
    assert found.tags == {
        "family": "f",
        "dvc.data_revision": "abc123",
        "git.commit": "def456",
        DIGEST_TAG: file_sha256(folder / ADAPTER),
    }
    assert mlflow_store.get_run(run_id).data.tags[RUN_TAG] == f"sciir-lora/{version}"
    fetched = mlflow.artifacts.download_artifacts(
        f"models:/sciir-lora/{version}", dst_path=str(tmp_path / "dl")
    )
    assert (Path(fetched) / ADAPTER).read_bytes() == b"adapter one"


def test_the_same_bytes_are_the_same_version_and_new_bytes_a_new_one(mlflow_store, tmp_path):
    _, first = _register_in_a_run(_adapter(tmp_path / "a", b"adapter one"))
    rerun_id, again = _register_in_a_run(_adapter(tmp_path / "b", b"adapter one"))
    _, retrained = _register_in_a_run(_adapter(tmp_path / "c", b"adapter two"))

    assert again == first and retrained != first
    assert len(mlflow_store.search_model_versions("name = 'sciir-lora'")) == 2
    assert mlflow_store.get_run(rerun_id).data.tags[RUN_TAG] == f"sciir-lora/{first}"


def test_registering_needs_an_active_run(mlflow_store, tmp_path):
    folder = _adapter(tmp_path / "lora", b"adapter")
    with pytest.raises(RuntimeError, match="needs an active MLflow run"):
        register_adapter("sciir-lora", "finetune/adapter", folder / ADAPTER, {})
