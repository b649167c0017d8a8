"""Data-parallel LoRA training in processes a launcher starts: ``accelerate launch`` on GPUs (one process
per GPU, one or more machines), ``torchrun`` on CPUs.

The finetune stage (:mod:`sciir.training.finetune_run`) writes a job file (the training rows, the training
settings, the adapter folder, the validation prompts) into a work folder and starts the launcher with
``-m sciir.training.distributed <job>``. Every process loads the same images and pipeline and trains as one
of the :class:`sciir.training.data_parallel.DataParallel` processes; accelerate's ``PartialState`` sets up
the process group from the launcher's environment (gloo on CPUs, NCCL on GPUs) and gives each process its
device. The main process saves the checkpoints and the adapter, draws each checkpoint's validation images
into the work folder, and writes the steps' records there; the stage logs them to its MLflow run, so a run
of any number of processes is one MLflow run.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveInt

from sciir.training.config import LoraTrainConfig
from sciir.training.data_parallel import DataParallel
from sciir.training.loop import CheckpointCallback, StepRecord, finetune_lora_adapter
from sciir.training.resources import peak_gpu_memory
from sciir.training.training_images import load_training_images
from sciir.training.validation_images import ValidationSettings, write_validation_images

logger = logging.getLogger(__name__)

JOB_FILE = "job.json"
RESULT_FILE = "result.json"
VALIDATION_DIR = "validation"
OUTPUT_TAIL_CHARS = 6000


class LaunchParams(BaseModel):
    """``finetune.launch``: how many training processes, on how many machines (``accelerate launch``'s
    settings; one process in all trains in the node's own process)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    processes_per_machine: PositiveInt = 1
    num_machines: PositiveInt = 1
    machine_rank: NonNegativeInt = 0
    # Machine 0's address, which the others reach (127.0.0.1 on one machine).
    main_process_ip: str | None = None
    main_process_port: PositiveInt = 29500

    @property
    def total_processes(self) -> int:
        return self.processes_per_machine * self.num_machines


class TrainingJob(BaseModel):
    """What every training process is given."""

    model_config = ConfigDict(extra="forbid")

    model_path: str
    rows: list[dict[str, Any]]
    config: LoraTrainConfig
    adapter_path: str
    # The first of the train split's rows, drawn with each checkpoint's adapter (empty: none drawn).
    validation_rows: list[dict[str, Any]] = []


def launch_command(job_file: Path, launch: LaunchParams, device: str) -> list[str]:
    """The launcher command: ``accelerate launch`` on CUDA devices, ``torchrun`` on the CPU (accelerate's own
    launcher starts a single process there); both then run this module in each process."""
    address = launch.main_process_ip or "127.0.0.1"
    script = ["-m", "sciir.training.distributed", str(job_file)]
    if device.startswith("cuda"):
        return [
            sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
            "--num_processes", str(launch.total_processes),  # over all machines
            "--num_machines", str(launch.num_machines),
            "--machine_rank", str(launch.machine_rank),
            "--main_process_ip", address,
            "--main_process_port", str(launch.main_process_port),
            "--mixed_precision", "no",  # the recipe's own autocast (finetune.mixed_precision) applies
            "--dynamo_backend", "no",
            *script,
        ]  # fmt: skip
    return [
        sys.executable, "-m", "torch.distributed.run",
        "--nproc-per-node", str(launch.processes_per_machine),
        "--nnodes", str(launch.num_machines),
        "--node-rank", str(launch.machine_rank),
        "--master-addr", address,
        "--master-port", str(launch.main_process_port),
        *script,
    ]  # fmt: skip


def train_in_processes(
    job: TrainingJob, launch: LaunchParams, work_folder: Path
) -> tuple[list[StepRecord], dict[str, float]]:
    """Run ``job`` in ``launch.total_processes`` processes; the steps' records and the main process's
    peak GPU memory. Validation images of the checkpoints are left in ``work_folder/validation/step-<n>``.

    Raises:
        RuntimeError: a training process failed; the message holds the end of the launcher's output.
    """
    work_folder.mkdir(parents=True, exist_ok=True)
    job_file = work_folder / JOB_FILE
    job_file.write_text(job.model_dump_json(), encoding="utf-8")
    command = launch_command(job_file, launch, job.config.device)
    logger.info(
        "Finetune: training in %d processes on %d machine(s): %s",
        launch.total_processes,
        launch.num_machines,
        " ".join(command),
    )
    finished = subprocess.run(command, capture_output=True, text=True)
    if finished.returncode != 0:
        output = finished.stdout + finished.stderr
        raise RuntimeError(
            f"distributed LoRA training failed (exit status {finished.returncode}) in "
            f"{launch.total_processes} processes: {first_error(output)}\n{output[-OUTPUT_TAIL_CHARS:]}"
        )
    result = json.loads((work_folder / RESULT_FILE).read_text(encoding="utf-8"))
    return [StepRecord(**record) for record in result["records"]], result["memory"]


def first_error(output: str) -> str:
    """The first exception a training process raised, as the launcher printed it (``[rank<n>]: Error: ...``)."""
    found = re.search(r"^\[rank\d+\]: (\w+(?:Error|Exception)\b.*)$", output, re.MULTILINE)
    return found.group(1) if found else "no process named its error (the output follows)"


def _validation_callback(job: TrainingJob, folder: Path) -> CheckpointCallback | None:
    """What draws each checkpoint's validation images into ``folder/step-<step>`` (None without prompts)."""
    if not job.validation_rows:
        return None
    settings = ValidationSettings.of(job.config, pd.DataFrame(job.validation_rows))

    def draw(step: int, checkpoint: Path) -> None:
        target = folder / f"step-{step:06d}"
        target.mkdir(parents=True, exist_ok=True)
        write_validation_images(job.model_path, checkpoint, settings, target)

    return draw


def run_job(job_file: Path) -> None:
    """One training process's work (every process of the launch runs it)."""
    from accelerate import PartialState

    job = TrainingJob.model_validate_json(job_file.read_text(encoding="utf-8"))
    on_gpus = job.config.device.startswith("cuda")
    state = PartialState(cpu=not on_gpus)  # on the CPU accelerate joins the group only when told so
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if state.num_processes != launched:
        raise RuntimeError(f"accelerate sees {state.num_processes} processes where {launched} were launched")
    parallel = DataParallel(rank=state.process_index, world_size=state.num_processes)
    device = str(state.device) if on_gpus else job.config.device
    config = job.config.model_copy(update={"device": device})
    images, skipped = load_training_images(job.rows, config.training_sizes)
    if skipped:  # the node checked these rows: a file gone since is this run's failure
        raise FileNotFoundError(f"training images became unusable: {[s.reason for s in skipped]}")
    folder = job_file.parent
    on_checkpoint = _validation_callback(job, folder / VALIDATION_DIR) if parallel.is_main else None
    with peak_gpu_memory(device) as memory:
        records = finetune_lora_adapter(
            job.model_path, images, config, job.adapter_path, on_checkpoint, parallel
        )
    if state.is_local_main_process:  # every process holds the same records
        result = {"records": [asdict(record) for record in records], "memory": memory}
        (folder / RESULT_FILE).write_text(json.dumps(result), encoding="utf-8")
    state.wait_for_everyone()
    state.destroy_process_group()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    run_job(Path(sys.argv[1]))
