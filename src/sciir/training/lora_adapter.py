"""The LoRA adapter: its peft configuration, and its weights saved with diffusers' writer as a safetensors
file whose bytes are the same on every run, which ``pipe.load_lora_weights(folder)`` reloads."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sciir.backends.diffusers_gen import ADAPTER_FILE

if TYPE_CHECKING:
    import torch
    from peft import LoraConfig


def lora_config(rank: int, alpha: float | None, target_modules: Iterable[str]) -> LoraConfig:
    """A peft LoRA configuration with gaussian initial weights (drawn from torch's global generator)."""
    from peft import LoraConfig

    return LoraConfig(
        r=rank,
        # peft types lora_alpha int; a float works alike (its scale is lora_alpha / r)
        lora_alpha=rank if alpha is None else alpha,  # type: ignore[arg-type]
        init_lora_weights="gaussian",
        target_modules=list(target_modules),
    )


def peft_lora_layers(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's LoRA weights under peft's key names (``<module>.lora_A.weight``, ``lora_B``)."""
    from peft.utils import get_peft_model_state_dict

    return get_peft_model_state_dict(model)


def save_diffusers_lora(
    pipeline_class: type[Any], component: str, model: torch.nn.Module, folder: str | Path
) -> Path:
    """Save the LoRA of the pipeline's ``component`` (``unet``, ``transformer``) with diffusers' writer
    for ``pipeline_class``, with its peft configuration (so a reload gets its alpha), as safetensors with
    a canonical header; ``pipe.load_lora_weights(folder)`` reloads it."""
    folder = Path(folder)
    pipeline_class.save_lora_weights(
        save_directory=folder,
        safe_serialization=True,
        **{
            f"{component}_lora_layers": peft_lora_layers(model),
            f"{component}_lora_adapter_metadata": lora_adapter_metadata(model),
        },
    )
    canonical_safetensors_header(folder / ADAPTER_FILE)
    return folder


def canonical_safetensors_header(path: Path) -> None:
    """Rewrite a safetensors file's header with its metadata entries in sorted order.

    safetensors writes the metadata map in hash order, which changes from one process to the next, so the
    same adapter would get different bytes (and DVC would see a change) on every run. The tensors and
    their offsets are untouched.
    """
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to a multiple of 8 bytes
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + size :])


def lora_adapter_metadata(model: torch.nn.Module) -> dict[str, Any]:
    """The LoRA's peft configuration for the adapter file (so a reload gets its alpha), sets as sorted
    lists: a set's order changes between processes, and the file's bytes would change with it."""
    # peft_config: set on the model by peft (add_adapter); torch types an unknown attribute Tensor | Module
    config = model.peft_config["default"].to_dict()  # type: ignore[index,union-attr]
    return {key: sorted(value) if isinstance(value, set) else value for key, value in config.items()}
