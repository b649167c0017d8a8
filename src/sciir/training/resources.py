"""Memory and speed options of LoRA training: the optimiser, mixed precision, gradient checkpointing, torch's
CPU threads and the peak GPU memory a run reached."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from diffusers.models.modeling_utils import ModelMixin

# The package each optimiser needs beyond torch.
OPTIMIZER_PACKAGES = {"adamw": None, "adamw8bit": "bitsandbytes"}


def check_optimizer_available(name: str) -> None:
    """Refuse, before any model loads, an optimiser whose package is missing.

    Raises:
        ValueError: ``name`` is not a known optimiser.
        ImportError: the optimiser's package is not installed.
    """
    if name not in OPTIMIZER_PACKAGES:
        raise ValueError(f"optimizer {name!r} is unknown (expected one of {sorted(OPTIMIZER_PACKAGES)})")
    package = OPTIMIZER_PACKAGES[name]
    if package is not None and importlib.util.find_spec(package) is None:
        raise ImportError(
            f"optimizer {name!r} needs the {package} package, which is not installed "
            f"(`pip install {package}`; it runs on a CUDA GPU); use optimizer: adamw"
        )


def build_optimizer(
    name: str, parameters: list[torch.nn.Parameter], learning_rate: float
) -> torch.optim.Optimizer:
    """AdamW over ``parameters``, in full precision (``adamw``) or with 8-bit states (``adamw8bit``).

    Raises:
        ValueError: ``name`` is not a known optimiser.
        ImportError: the optimiser's package is not installed.
    """
    check_optimizer_available(name)
    if name == "adamw8bit":
        import bitsandbytes

        return bitsandbytes.optim.AdamW8bit(parameters, lr=learning_rate)
    import torch

    return torch.optim.AdamW(parameters, lr=learning_rate)


def autocast(mixed_precision: str, device: torch.device) -> AbstractContextManager:
    """The forward pass's precision: bfloat16 autocast for ``bf16`` (CPU or GPU), else unchanged.

    Raises:
        ValueError: ``mixed_precision`` is neither ``no`` nor ``bf16``.
    """
    import torch

    if mixed_precision == "no":
        return nullcontext()
    if mixed_precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    raise ValueError(f"mixed_precision {mixed_precision!r} is not supported (expected no or bf16)")


def enable_gradient_checkpointing(model: ModelMixin) -> None:
    """Recompute the model's block activations in the backward pass (diffusers' models).

    Raises:
        ValueError: the model does not support gradient checkpointing.
    """
    if not getattr(model, "_supports_gradient_checkpointing", False):
        raise ValueError(f"gradient_checkpointing: {type(model).__name__} does not support it")
    model.enable_gradient_checkpointing()


@contextmanager
def peak_gpu_memory(device: str) -> Iterator[dict[str, float]]:
    """Inside, a CUDA device's peak allocated memory is tracked; after, the dict holds
    ``peak_gpu_memory_gb`` (empty for any other device)."""
    measured: dict[str, float] = {}
    if not device.startswith("cuda"):
        yield measured
        return
    import torch

    torch.cuda.reset_peak_memory_stats(device)
    try:
        yield measured
    finally:
        measured["peak_gpu_memory_gb"] = torch.cuda.max_memory_allocated(device) / 2**30


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run with torch using ``count`` CPU threads, then restore the caller's setting."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)
