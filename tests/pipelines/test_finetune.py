"""The ``finetune`` pipeline in memory: train split with bad rows in, adapter, summary, metrics and artifacts out."""

from __future__ import annotations

import hashlib

import mlflow
import pandas as pd
import pytest
from kedro.runner import SequentialRunner
from PIL import Image, ImageDraw
from pydantic import ValidationError

from sciir.pipelines.finetune import create_pipeline
from sciir.pipelines.finetune.nodes import finetune_lora, prepare_base_model
from sciir.training.tiny_qwen_image import MARKER_FILE as FLOW_MARKER_FILE
from sciir.training.tiny_stable_diffusion import MARKER_FILE


@pytest.fixture
def params(tmp_path, finetune_defaults):
    return finetune_defaults | {
        "tiny_model_path": str(tmp_path / "tiny_base"),
        "encoding_cache": str(tmp_path / "cache"),
        "adapter_path": str(tmp_path / "lora"),
        "resolution": 32,
        "steps": 4,
    }


@pytest.fixture
def train_split(tmp_path):
    rows = []
    for index in range(3):
        path = tmp_path / "images" / f"s{index}.png"
        path.parent.mkdir(exist_ok=True)
        image = Image.new("RGB", (1024, 1024), "white")
        ImageDraw.Draw(image).rectangle(
            (100 + 200 * index, 300, 500 + 200 * index, 700), outline="black", width=20
        )
        image.save(path)
        rows.append(
            {"sample_id": f"s{index}", "prompt": f"a box at position {index}", "image_path": str(path)}
        )
    corrupt = tmp_path / "images" / "corrupt.png"
    corrupt.write_bytes(b"\x89PNG broken")
    rows.append({"sample_id": "corrupt", "prompt": "a box", "image_path": str(corrupt)})
    rows.append({"sample_id": "missing", "prompt": "a box", "image_path": str(tmp_path / "gone.png")})
    return pd.DataFrame(rows)


def _artifact_names(client, run_id: str, path: str) -> list[str]:
    return sorted(entry.path.rsplit("/", 1)[-1] for entry in client.list_artifacts(run_id, path))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("family", "marker"), [("noise_prediction", MARKER_FILE), ("flow_matching", FLOW_MARKER_FILE)]
)
def test_pipeline_trains_an_adapter_and_logs_it(
    family, marker, params, train_split, tmp_path, mlflow_store, finetune_catalog
):
    params = params | {"family": family, "checkpoint_every": 2}
    catalog = finetune_catalog(train_split, params)
    stale = tmp_path / "lora" / "scored" / "step-000099"  # an earlier run's scored adapter
    stale.mkdir(parents=True)
    (stale / "pytorch_lora_weights.safetensors").write_bytes(b"earlier")
    with mlflow.start_run() as run:
        SequentialRunner().run(create_pipeline(), catalog)
    summary, history, metrics = (
        catalog[name].load() for name in ("finetune_summary", "finetune_metric_history", "finetune_metrics")
    )

    assert summary["base_model_path"] == params["tiny_model_path"] and summary["family"] == family
    assert (tmp_path / "tiny_base" / marker).is_file()
    assert (tmp_path / "lora" / "pytorch_lora_weights.safetensors").is_file()
    assert not (tmp_path / "lora" / "scored").exists()  # nothing scored here, nothing of the earlier run left
    assert summary["adapter_step"] == 4
    assert summary["steps"] == 4 and summary["resolution"] == 32 and summary["lora_rank"] == 4
    assert summary["n_train"] == 3 and summary["n_skipped"] == 2
    assert {s["sample_id"] for s in summary["skipped"]} == {"corrupt", "missing"}
    assert all(s["image_path"] in s["reason"] for s in summary["skipped"])

    # What DVC tracks holds no wall-clock measure: the same data and settings give the same files.
    assert history.keys() == {"train_loss", "learning_rate"}
    assert [point["step"] for point in history["train_loss"]] == [1, 2, 3, 4]
    assert [point["value"] for point in history["learning_rate"]] == [params["learning_rate"]] * 4
    assert metrics == {
        "final_loss": history["train_loss"][-1]["value"],
        "steps": 4.0,
        "n_train": 3.0,
        "n_skipped": 2.0,
    }

    run_id = run.info.run_id
    for name in ("train_loss", "learning_rate", "samples_per_second"):
        points = mlflow_store.get_metric_history(run_id, f"finetune.{name}")
        assert sorted(point.step for point in points) == [1, 2, 3, 4], name
    assert all(p.value > 0 for p in mlflow_store.get_metric_history(run_id, "finetune.samples_per_second"))
    assert mlflow_store.get_run(run_id).data.metrics["finetune.train_seconds"] > 0
    assert "pytorch_lora_weights.safetensors" in _artifact_names(mlflow_store, run_id, "finetune/adapter")
    # Validation images of fixed prompts at every checkpoint (steps 2 and 4) and of the final adapter.
    assert _artifact_names(mlflow_store, run_id, "finetune/validation") == [
        "final",
        "step-000002",
        "step-000004",
    ]
    for drawn in ("final", "step-000002", "step-000004"):
        assert _artifact_names(mlflow_store, run_id, f"finetune/validation/{drawn}") == ["s0.png", "s1.png"]
    (version,) = mlflow_store.search_model_versions("name = 'sciir-lora'")
    assert version.run_id == run_id and version.tags["family"] == family
    assert (
        version.tags["adapter_sha256"]
        == hashlib.sha256((tmp_path / "lora" / "pytorch_lora_weights.safetensors").read_bytes()).hexdigest()
    )
    assert version.source.endswith("finetune/adapter")


def test_no_usable_image_is_a_clear_error(params, train_split, tmp_path):
    unusable = train_split[train_split["sample_id"].isin(["corrupt", "missing"])]
    base = prepare_base_model(params)
    with pytest.raises(ValueError, match="no usable training image among 2 .*corrupt.png"):
        finetune_lora(unusable, base, params)
    with pytest.raises(ValueError, match="lacks column"):
        finetune_lora(train_split.drop(columns=["prompt"]), base, params)


def test_base_model_must_be_tiny_or_a_folder(params, tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        prepare_base_model(params | {"base_model": str(tmp_path / "nowhere")})
    with pytest.raises(ValidationError, match="learning_rte"):
        prepare_base_model(params | {"learning_rte": 0.1})
