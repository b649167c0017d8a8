"""Data-parallel finetuning: the node starts two training processes with torchrun on the CPU (gloo), as it
starts `accelerate launch` on GPUs, and the run is one MLflow run."""

from __future__ import annotations

import socket
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import torch
from kedro.runner import SequentialRunner
from PIL import Image, ImageDraw
from safetensors.torch import load_file

from sciir.pipelines.finetune import create_pipeline
from sciir.pipelines.finetune.nodes import finetune_lora, prepare_base_model
from sciir.training.distributed import LaunchParams, launch_command
from sciir.training.finetune_params import FinetuneParams
from sciir.training.finetune_run import finetune_on_train_split

ADAPTER = "pytorch_lora_weights.safetensors"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def params(tmp_path, finetune_defaults):
    return finetune_defaults | {
        "tiny_model_path": str(tmp_path / "tiny_base"),
        "encoding_cache": str(tmp_path / "cache"),
        "resolution": 32,
        "steps": 4,
        "learning_rate": 1.0e-2,
    }


@pytest.fixture
def train_split(tmp_path):
    rows = []
    for index in range(4):
        path = tmp_path / "images" / f"s{index}.png"
        path.parent.mkdir(exist_ok=True)
        image = Image.new("RGB", (256, 256), "white")
        ImageDraw.Draw(image).rectangle(
            (20 + 40 * index, 60, 100 + 40 * index, 180), outline="black", width=8
        )
        image.save(path)
        rows.append({"sample_id": f"s{index}", "prompt": f"a box at {index}", "image_path": str(path)})
    return pd.DataFrame(rows)


def _two_processes() -> dict:
    return {"processes_per_machine": 2, "main_process_port": _free_port()}


def _adapter(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(folder / ADAPTER)


@pytest.mark.slow
def test_two_processes_take_the_steps_one_process_takes_on_their_whole_batch(params, train_split, tmp_path):
    base = prepare_base_model(params)
    parallel = params | {"batch_size": 1, "adapter_path": str(tmp_path / "two"), "launch": _two_processes()}
    one = params | {"batch_size": 2, "adapter_path": str(tmp_path / "one")}
    alone = params | {"batch_size": 1, "adapter_path": str(tmp_path / "alone")}

    summaries = {name: finetune_lora(train_split, base, run)[0] for name, run in
                 (("two", parallel), ("one", one), ("alone", alone))}  # fmt: skip

    two, whole, half = (_adapter(tmp_path / name) for name in ("two", "one", "alone"))
    assert two.keys() == whole.keys() == half.keys() and len(two) > 0
    # Two processes of one example each step as one process of two: the same weights, up to the order of
    # float sums (measured: 1.8e-5 at most, the weights reaching about 1) ...
    assert _largest_difference(two, whole) < 1e-4
    assert summaries["two"]["final_loss"] == pytest.approx(summaries["one"]["final_loss"], rel=1e-5)
    # ... and not as one process of one example: the second process's examples count (measured: 0.08).
    assert _largest_difference(two, half) > 1e-2


def _largest_difference(first: dict[str, torch.Tensor], second: dict[str, torch.Tensor]) -> float:
    return max(float((first[key] - second[key]).abs().max()) for key in first)


@pytest.mark.slow
def test_two_process_training_is_one_mlflow_run(
    params, train_split, tmp_path, mlflow_store, finetune_catalog
):
    params = params | {
        "family": "flow_matching",
        "batch_size": 1,
        "checkpoint_every": 2,
        "adapter_path": str(tmp_path / "lora"),
        "launch": _two_processes(),
    }
    catalog = finetune_catalog(train_split, params)
    with mlflow.start_run() as run:
        SequentialRunner().run(create_pipeline(), catalog)

    (only,) = mlflow_store.search_runs([run.info.experiment_id])
    assert only.info.run_id == run.info.run_id
    for name in ("train_loss", "learning_rate", "samples_per_second"):
        points = mlflow_store.get_metric_history(only.info.run_id, f"finetune.{name}")
        assert sorted(point.step for point in points) == [1, 2, 3, 4], name
    listed = {entry.path for entry in mlflow_store.list_artifacts(only.info.run_id, "finetune/validation")}
    assert listed == {f"finetune/validation/{name}" for name in ("final", "step-000002", "step-000004")}
    assert len(mlflow_store.list_artifacts(only.info.run_id, "finetune/validation/step-000002")) == 2
    (version,) = mlflow_store.search_model_versions("name = 'sciir-lora'")
    assert version.run_id == only.info.run_id and version.tags["family"] == "flow_matching"
    # The main process alone saved the checkpoints and the adapter.
    assert sorted(path.name for path in (tmp_path / "lora" / "checkpoints").iterdir()) == [
        "checkpoint-2",
        "checkpoint-4",
    ]
    assert catalog["finetune_summary"].load()["n_train"] == 4


@pytest.mark.slow
def test_the_main_process_saves_the_adapters_scored_after_training_and_the_best_is_kept(
    params, train_split, tmp_path
):
    base = prepare_base_model(params)
    lora = tmp_path / "lora"
    run = params | {"batch_size": 1, "eval_every": 2, "adapter_path": str(lora), "launch": _two_processes()}
    seen: list[tuple[int, str]] = []

    def scorer(step: int, folder: Path) -> float:
        seen.append((step, folder.name))
        return {2: 0.5, 4: 0.25}[step]

    summary, _, _ = finetune_on_train_split(train_split, base, FinetuneParams.model_validate(run), scorer)
    assert seen == [(2, "step-000002"), (4, "step-000004")]
    assert summary["adapter_step"] == 2 and summary["steps"] == 4
    assert (lora / ADAPTER).read_bytes() == (lora / "scored" / "step-000002" / ADAPTER).read_bytes()
    assert (lora / ADAPTER).read_bytes() != (lora / "scored" / "step-000004" / ADAPTER).read_bytes()


@pytest.mark.slow
def test_a_failed_process_fails_the_node_with_its_output(params, train_split, tmp_path):
    base = prepare_base_model(params)
    broken = params | {
        "adapter_path": str(tmp_path / "lora"),
        "launch": _two_processes(),
        "lr_warmup_steps": 0,
    }
    # A learning rate this high makes the loss infinite in every process, which stops training.
    broken["learning_rate"] = 1.0e30
    with pytest.raises(
        RuntimeError,
        match=r"failed \(exit status 1\) in 2 processes: FloatingPointError: training loss is nan",
    ):
        finetune_lora(train_split, base, broken)


def test_gpus_are_launched_by_accelerate_and_cpus_by_torchrun(tmp_path):
    launch = LaunchParams(processes_per_machine=4, num_machines=2, machine_rank=1, main_process_ip="10.0.0.5")
    gpu = launch_command(tmp_path / "job.json", launch, "cuda")
    assert gpu[1:4] == ["-m", "accelerate.commands.launch", "--multi_gpu"]
    assert gpu[gpu.index("--num_processes") + 1] == "8"  # accelerate counts the processes of all machines
    assert (
        gpu[gpu.index("--machine_rank") + 1] == "1" and gpu[gpu.index("--main_process_ip") + 1] == "10.0.0.5"
    )
    cpu = launch_command(tmp_path / "job.json", launch, "cpu")
    assert cpu[1:3] == ["-m", "torch.distributed.run"]
    assert cpu[cpu.index("--nproc-per-node") + 1] == "4" and cpu[cpu.index("--nnodes") + 1] == "2"
    assert gpu[-3:] == cpu[-3:] == ["-m", "sciir.training.distributed", str(tmp_path / "job.json")]
