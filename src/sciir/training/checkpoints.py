"""Training checkpoints of the LoRA recipe: saved every N steps, the newest few kept, resumed exactly.

A checkpoint is a ``checkpoint-<step>`` folder (diffusers' example convention) holding what a resumed
run needs to take the same steps an uninterrupted run takes: the trainable LoRA tensors, the optimizer
and learning-rate scheduler states, the random states (torch's global and the training generator,
numpy's, Python's) and the progress so far (step, per-step records, the settings that shape the run).
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch

CHECKPOINT_PREFIX = "checkpoint-"
LATEST = "latest"
LORA_TENSORS_FILE = "lora_parameters.safetensors"
RANDOM_TENSORS_FILE = "random_states.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
SCHEDULER_FILE = "scheduler.pt"
PROGRESS_FILE = "progress.json"


def checkpoint_folder(root: Path, step: int) -> Path:
    return root / f"{CHECKPOINT_PREFIX}{step}"


def checkpoint_step(folder: Path) -> int | None:
    """The step of a ``checkpoint-<step>`` folder; None for any other name."""
    suffix = folder.name.removeprefix(CHECKPOINT_PREFIX)
    return int(suffix) if folder.name.startswith(CHECKPOINT_PREFIX) and suffix.isdigit() else None


def list_checkpoints(root: Path) -> list[Path]:
    """The complete checkpoints under ``root``, oldest step first (a folder whose save was cut short,
    without its progress file, is not one)."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if checkpoint_step(p) is not None and (p / PROGRESS_FILE).is_file()]
    return sorted(found, key=lambda p: checkpoint_step(p) or 0)


def prune_checkpoints(root: Path, keep: int) -> list[Path]:
    """Remove the oldest checkpoints so that at most ``keep`` remain; returns the removed folders."""
    existing = list_checkpoints(root)
    removed = existing[: max(len(existing) - keep, 0)]
    for folder in removed:
        shutil.rmtree(folder)
    return removed


def find_checkpoint(root: Path, resume_from: str | None) -> Path | None:
    """The checkpoint to resume from: None for a fresh run, the newest under ``root`` for ``latest``
    (None when there is none yet), else the folder named.

    Raises:
        FileNotFoundError: a named folder is not a complete checkpoint.
    """
    if resume_from is None:
        return None
    if resume_from == LATEST:
        existing = list_checkpoints(root)
        return existing[-1] if existing else None
    folder = Path(resume_from)
    if not (folder / PROGRESS_FILE).is_file():
        raise FileNotFoundError(f"resume_from_checkpoint {resume_from!r} is not a checkpoint folder")
    return folder


def _numpy_state_to_json(state: tuple) -> list:
    name, keys, position, has_gauss, cached = state
    return [name, keys.tolist(), position, has_gauss, cached]


def _numpy_state_from_json(state: list) -> tuple:
    name, keys, position, has_gauss, cached = state
    return name, np.asarray(keys, dtype=np.uint32), position, has_gauss, cached


def _python_state_to_json(state: tuple) -> list:
    version, internal, gauss = state
    return [version, list(internal), gauss]


def _python_state_from_json(state: list) -> tuple:
    version, internal, gauss = state
    return version, tuple(internal), gauss


def save_checkpoint(
    folder: Path,
    trainable: Mapping[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    generator: torch.Generator,
    progress: Mapping[str, Any],
) -> Path:
    """Write a checkpoint into ``folder``; the progress file goes last, so a cut-short save is ignored."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(
        {name: tensor.detach().cpu().contiguous() for name, tensor in trainable.items()},
        folder / LORA_TENSORS_FILE,
    )
    torch.save(optimizer.state_dict(), folder / OPTIMIZER_FILE)
    torch.save(scheduler.state_dict(), folder / SCHEDULER_FILE)
    save_file(
        {"torch": torch.get_rng_state(), "generator": generator.get_state()}, folder / RANDOM_TENSORS_FILE
    )
    states = {
        # get_state() is the legacy tuple (legacy=True by default); numpy's first overload says a dict
        "numpy": _numpy_state_to_json(np.random.get_state()),  # type: ignore[arg-type]
        "python": _python_state_to_json(random.getstate()),
    }
    (folder / PROGRESS_FILE).write_text(json.dumps(dict(progress) | {"random_states": states}) + "\n")
    return folder


def load_checkpoint(
    folder: Path,
    trainable: Mapping[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    generator: torch.Generator,
) -> dict[str, Any]:
    """Restore a checkpoint's tensors and states in place; returns its progress (without random states).

    Raises:
        ValueError: the checkpoint's LoRA tensors do not match the model's (another rank or targets).
    """
    import torch
    from safetensors.torch import load_file

    saved = load_file(folder / LORA_TENSORS_FILE)
    if saved.keys() != trainable.keys() or any(saved[k].shape != trainable[k].shape for k in saved):
        raise ValueError(f"checkpoint {folder} holds LoRA tensors of another shape than this run's adapter")
    with torch.no_grad():
        for name, tensor in trainable.items():
            tensor.copy_(saved[name])
    optimizer.load_state_dict(torch.load(folder / OPTIMIZER_FILE, weights_only=True))
    scheduler.load_state_dict(torch.load(folder / SCHEDULER_FILE, weights_only=True))
    random_tensors = load_file(folder / RANDOM_TENSORS_FILE)
    torch.set_rng_state(random_tensors["torch"])
    generator.set_state(random_tensors["generator"])
    progress = json.loads((folder / PROGRESS_FILE).read_text())
    states = progress.pop("random_states")
    np.random.set_state(_numpy_state_from_json(states["numpy"]))
    random.setstate(_python_state_from_json(states["python"]))
    return progress
