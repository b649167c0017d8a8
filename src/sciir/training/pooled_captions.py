"""The recipe shared by the flow-matching pipelines whose transformer takes text states and a pooled
caption (Flux, Stable Diffusion 3): the VAE's latents shifted and scaled as the pipeline's decoder undoes,
captions tokenised here rather than by the pipeline's ``encode_prompt`` (which warns about every truncated
caption), the family's draws and sigmas; each pipeline's module says how it encodes captions and calls
its transformer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from sciir.training.config import LoraTrainConfig
from sciir.training.flow_matching import add_flow_lora, flow_matching_draws, loss_with_draws
from sciir.training.lora_adapter import save_diffusers_lora
from sciir.training.recipe import LoraRecipe
from sciir.training.training_images import TrainingImage

if TYPE_CHECKING:
    import torch

# Captions -> (text states, pooled captions), as the pipeline's encode_prompt makes them.
CaptionEncoder = Callable[[list[str]], "tuple[torch.Tensor, torch.Tensor]"]
# (examples, indices, noise, sigmas) -> the batch's weighted flow-matching loss.
LossAt = Callable[["EncodedPooledExamples", "torch.Tensor", "torch.Tensor", "torch.Tensor"], "torch.Tensor"]


@dataclass
class EncodedPooledExamples:
    """Shifted and scaled latents (batch, channels, h, w), caption states and pooled captions."""

    latents: torch.Tensor
    caption_embeds: torch.Tensor
    pooled_captions: torch.Tensor

    def __len__(self) -> int:
        return int(self.latents.shape[0])


def token_ids(tokenizer: Any, captions: list[str], length: int, device: Any) -> torch.Tensor:
    """Token ids of captions padded and cut to ``length``."""
    return tokenizer(
        captions, padding="max_length", max_length=length, truncation=True, return_tensors="pt"
    ).input_ids.to(device)


def encode_pooled_examples(
    vae: Any, images: list[TrainingImage], chunk_size: int, encode_captions: CaptionEncoder
) -> EncodedPooledExamples:
    """Latents (the posterior's mode, shifted and scaled) and captions of images of one size, ``chunk_size``
    at a time."""
    import torch

    latents, states, pooled = [], [], []
    with torch.no_grad():
        for start in range(0, len(images), chunk_size):
            chunk = images[start : start + chunk_size]
            pixels = torch.from_numpy(np.stack([image.pixels for image in chunk])).to(vae.device, vae.dtype)
            mode = vae.encode(pixels).latent_dist.mode()
            latents.append((mode - vae.config.shift_factor) * vae.config.scaling_factor)
            chunk_states, chunk_pooled = encode_captions([image.caption for image in chunk])
            states.append(chunk_states)
            pooled.append(chunk_pooled)
    return EncodedPooledExamples(torch.cat(latents), torch.cat(states), torch.cat(pooled))


def pooled_caption_recipe(
    pipe: Any,
    encoders: tuple[Any, ...],
    config: LoraTrainConfig,
    encode_captions: CaptionEncoder,
    loss_at: LossAt,
) -> LoraRecipe:
    """The recipe of ``pipe``: its ``encoders`` frozen, a fresh LoRA on its transformer (initial weights
    from torch's global generator), each batch's draws and ``loss_at`` at its scheduler's training sigmas,
    the adapter saved in the pipeline class's LoRA format."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    for model in encoders:
        model.requires_grad_(False)
    # A fresh scheduler: its sigmas are the training ones, before any sampling reshapes them.
    training_sigmas = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config).sigmas
    add_flow_lora(pipe.transformer, config)

    def loss(
        examples: EncodedPooledExamples, indices: torch.Tensor, draws: tuple[torch.Tensor, ...]
    ) -> torch.Tensor:
        return loss_with_draws(
            lambda noise, sigmas: loss_at(examples, indices, noise, sigmas),
            examples.latents,
            training_sigmas,
            draws,
        )

    return LoraRecipe(
        denoiser=pipe.transformer,
        encoders=encoders,
        encode=lambda images, chunk_size: encode_pooled_examples(
            pipe.vae, images, chunk_size, encode_captions
        ),
        encoded_type=EncodedPooledExamples,
        draw=lambda examples, indices, generator: flow_matching_draws(examples, indices, config, generator),
        loss=loss,
        save_adapter=lambda folder: save_diffusers_lora(type(pipe), "transformer", pipe.transformer, folder),
    )
