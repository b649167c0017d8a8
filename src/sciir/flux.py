"""Flux pipelines in the flow-matching family: a LoRA on ``FluxTransformer2DModel``.

After diffusers' ``examples/dreambooth/train_dreambooth_lora_flux.py``: the VAE's latents shifted and
scaled as the pipeline's decoder undoes, packed into 2x2 patches with their position ids; the caption as
the T5 encoder's states (``FLUX_TEXT_TOKENS`` tokens, the pipeline's default length) and CLIP's pooled
output; the transformer given the sigma as its timestep and, for guidance-distilled models (FLUX.1-dev),
the guidance the pipeline generates with by default. The objective, the sigma density and the weighting
are the family's (:mod:`sciir.flow_matching`). Captions are tokenised here rather than by the pipeline's
``encode_prompt``, which warns about every truncated caption.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sciir.flow_matching import add_flow_lora, flow_matching_draws, loss_with_draws, packed_flow_loss
from sciir.training import LoraRecipe, LoraTrainConfig, LossWeighting, TrainingImage, save_diffusers_lora

if TYPE_CHECKING:
    import torch
    from diffusers import FluxPipeline, FluxTransformer2DModel

# T5 tokens of a caption: FluxPipeline's default max_sequence_length, so training sees prompts as generation does.
FLUX_TEXT_TOKENS = 512
# FluxPipeline's default guidance_scale, given to guidance-distilled transformers during training.
FLUX_GUIDANCE = 3.5


@dataclass
class EncodedFluxExamples:
    """Shifted and scaled latents (batch, channels, h, w), T5 caption states and CLIP pooled captions."""

    latents: torch.Tensor
    caption_embeds: torch.Tensor
    pooled_captions: torch.Tensor

    def __len__(self) -> int:
        return int(self.latents.shape[0])


def _token_ids(tokenizer: Any, captions: list[str], length: int, device: Any) -> torch.Tensor:
    return tokenizer(
        captions, padding="max_length", max_length=length, truncation=True, return_tensors="pt"
    ).input_ids.to(device)


def encode_flux_captions(pipe: FluxPipeline, captions: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The T5 states and CLIP pooled outputs of captions, as ``FluxPipeline.encode_prompt`` makes them."""
    device = pipe.vae.device
    clip_ids = _token_ids(pipe.tokenizer, captions, pipe.tokenizer.model_max_length, device)
    t5_ids = _token_ids(pipe.tokenizer_2, captions, FLUX_TEXT_TOKENS, device)
    pooled = pipe.text_encoder(clip_ids, output_hidden_states=False).pooler_output
    return pipe.text_encoder_2(t5_ids, output_hidden_states=False)[0], pooled


def encode_flux_examples(
    pipe: FluxPipeline, images: list[TrainingImage], chunk_size: int
) -> EncodedFluxExamples:
    """Latents (the posterior's mode, shifted and scaled) and captions of images of one size, ``chunk_size``
    at a time."""
    import torch

    vae = pipe.vae
    latents, states, pooled = [], [], []
    with torch.no_grad():
        for start in range(0, len(images), chunk_size):
            chunk = images[start : start + chunk_size]
            pixels = torch.from_numpy(np.stack([image.pixels for image in chunk])).to(vae.device, vae.dtype)
            mode = vae.encode(pixels).latent_dist.mode()
            latents.append((mode - vae.config.shift_factor) * vae.config.scaling_factor)
            chunk_states, chunk_pooled = encode_flux_captions(pipe, [image.caption for image in chunk])
            states.append(chunk_states)
            pooled.append(chunk_pooled)
    return EncodedFluxExamples(torch.cat(latents), torch.cat(states), torch.cat(pooled))


def flux_loss_at(
    transformer: FluxTransformer2DModel,
    examples: EncodedFluxExamples,
    indices: torch.Tensor,
    noise: torch.Tensor,
    sigmas: torch.Tensor,
    weighting: LossWeighting,
) -> torch.Tensor:
    """The weighted flow-matching loss of the examples at ``indices`` for the given noise and sigmas."""
    import torch
    from diffusers import FluxPipeline

    latents = examples.latents[indices]
    batch, _, height, width = latents.shape
    states = examples.caption_embeds[indices]
    guidance = None
    if transformer.config.guidance_embeds:
        guidance = torch.full((batch,), FLUX_GUIDANCE, device=latents.device)
    image_ids = FluxPipeline._prepare_latent_image_ids(
        batch, height // 2, width // 2, latents.device, latents.dtype
    )

    def predict(tokens: torch.Tensor) -> torch.Tensor:
        return transformer(
            hidden_states=tokens,
            timestep=sigmas,  # the pipeline passes timestep / 1000, that is the sigma itself
            guidance=guidance,
            pooled_projections=examples.pooled_captions[indices],
            encoder_hidden_states=states,
            txt_ids=torch.zeros(states.shape[1], 3, device=latents.device, dtype=latents.dtype),
            img_ids=image_ids,
            return_dict=False,
        )[0]

    return packed_flow_loss(predict, latents, noise, sigmas, weighting)


def load_recipe(model_path: str | Path, config: LoraTrainConfig) -> LoraRecipe:
    """The flow-matching recipe for the Flux pipeline at ``model_path``, its transformer carrying a fresh
    LoRA (initial weights from torch's global generator). Image sides must be multiples of twice the VAE's
    downsampling factor (16 for FLUX.1's VAE), for the 2x2 patches."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline

    pipe = FluxPipeline.from_pretrained(model_path, local_files_only=True)
    encoders = (pipe.vae, pipe.text_encoder, pipe.text_encoder_2)
    for model in encoders:
        model.requires_grad_(False)
    training_sigmas = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config).sigmas
    add_flow_lora(pipe.transformer, config)

    def loss(
        examples: EncodedFluxExamples, indices: torch.Tensor, draws: tuple[torch.Tensor, ...]
    ) -> torch.Tensor:
        return loss_with_draws(
            lambda noise, sigmas: flux_loss_at(
                pipe.transformer, examples, indices, noise, sigmas, config.loss_weighting
            ),
            examples.latents,
            training_sigmas,
            draws,
        )

    return LoraRecipe(
        denoiser=pipe.transformer,
        encoders=encoders,
        encode=lambda images, chunk_size: encode_flux_examples(pipe, images, chunk_size),
        encoded_type=EncodedFluxExamples,
        draw=lambda examples, indices, generator: flow_matching_draws(examples, indices, config, generator),
        loss=loss,
        save_adapter=lambda folder: save_diffusers_lora(
            FluxPipeline, "transformer", pipe.transformer, folder
        ),
    )
