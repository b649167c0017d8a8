"""The flow-matching family of the LoRA recipe: Qwen-Image's transformer, rectified-flow objective.

The objective follows diffusers' ``train_dreambooth_lora_sd3.py`` / ``train_dreambooth_lora_qwen_image.py``:
sigmas drawn from a density (logit-normal or uniform) over the scheduler's training sigmas, the noisy
input ``(1 - sigma) * latents + sigma * noise``, the velocity target ``noise - latents``, and a per-sample
weighting of the squared error. The transformer is frozen but for a peft LoRA; the VAE and the text encoder
run once, before training (their output cached by :mod:`sciir.training.encoding_cache`), so each step touches the
transformer only. The adapter is saved with diffusers' ``save_lora_weights`` and its peft configuration
(alpha included), so ``pipe.load_lora_weights(folder)`` reloads exactly the weights trained. The shared
loop lives in :mod:`sciir.training.loop`, the options in :mod:`sciir.training.config`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sciir.training.config import LoraTrainConfig, LossWeighting, TimestepDensity
from sciir.training.lora_adapter import lora_config, peft_lora_layers, save_diffusers_lora
from sciir.training.recipe import LoraRecipe
from sciir.training.training_images import TrainingImage

if TYPE_CHECKING:
    import torch

    # From their modules: `from diffusers import ...` gives a type checker diffusers' dummy objects.
    from diffusers.models.transformers.transformer_qwenimage import QwenImageTransformer2DModel
    from diffusers.pipelines.qwenimage.pipeline_qwenimage import QwenImagePipeline

# The attention projections of both streams (image and text) of every Qwen-Image block.
FLOW_LORA_TARGET_MODULES = ("to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj")


def sample_density(
    batch_size: int, density: TimestepDensity, logit_mean: float, logit_std: float, generator: torch.Generator
) -> torch.Tensor:
    """Points in [0, 1), one per sample; the logit-normal favours middle sigmas, where learning is hardest."""
    import torch

    if density == "logit_normal":
        return torch.sigmoid(logit_mean + logit_std * torch.randn(batch_size, generator=generator))
    if density == "uniform":
        return torch.rand(batch_size, generator=generator)
    raise ValueError(f"unknown timestep density {density!r} (expected logit_normal or uniform)")


def pick_training_sigmas(points: torch.Tensor, training_sigmas: torch.Tensor) -> torch.Tensor:
    """The scheduler's training sigmas (descending, 1 first) at the positions ``points`` in [0, 1)."""
    count = len(training_sigmas)
    indices = (points * count).long().clamp(0, count - 1)
    return training_sigmas[indices]


def _per_sample(sigmas: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Sigmas of shape (batch,) broadcastable against a batch shaped like ``like``."""
    return sigmas.reshape(-1, *([1] * (like.ndim - 1))).to(like.dtype)


def noisy_latents(latents: torch.Tensor, noise: torch.Tensor, sigmas: torch.Tensor) -> torch.Tensor:
    """The point at ``sigma`` on the straight path from the data (sigma 0) to the noise (sigma 1)."""
    sigma = _per_sample(sigmas, latents)
    return (1.0 - sigma) * latents + sigma * noise


def velocity_target(latents: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """The path's velocity d(noisy)/d(sigma), which the transformer learns to predict."""
    return noise - latents


def loss_weights(sigmas: torch.Tensor, weighting: LossWeighting) -> torch.Tensor:
    """Per-sample weights of the squared error (SD3's schemes)."""
    import torch

    if weighting == "none":
        return torch.ones_like(sigmas)
    if weighting == "sigma_sqrt":
        return sigmas.pow(-2.0)
    if weighting == "cosmap":
        return 2.0 / (math.pi * (1.0 - 2.0 * sigmas + 2.0 * sigmas.pow(2)))
    raise ValueError(f"unknown loss weighting {weighting!r} (expected none, sigma_sqrt or cosmap)")


def weighted_flow_loss(prediction: torch.Tensor, target: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Mean over samples of each sample's weighted mean squared error."""
    squared = (prediction.float() - target.float()).pow(2)
    per_sample = (_per_sample(weights, squared) * squared).reshape(len(squared), -1).mean(dim=1)
    return per_sample.mean()


def pack_latents(latents: torch.Tensor) -> torch.Tensor:
    """(batch, channels, height, width) latents as the transformer's tokens: 2x2 patches, row by row.

    The layout QwenImagePipeline uses, so what the LoRA learns is what the pipeline's sampler feeds it.
    """
    batch, channels, height, width = latents.shape
    patches = latents.reshape(batch, channels, height // 2, 2, width // 2, 2).permute(0, 2, 4, 1, 3, 5)
    return patches.reshape(batch, (height // 2) * (width // 2), channels * 4)


@dataclass
class EncodedFlowExamples:
    """Normalised latents (batch, channels, h, w) and caption embeddings, computed once for all steps."""

    latents: torch.Tensor
    caption_embeds: torch.Tensor
    # None when no caption is padded (the transformer then attends to every text token).
    caption_mask: torch.Tensor | None

    def __len__(self) -> int:
        return int(self.latents.shape[0])


def _padded(tensors: list[torch.Tensor], length: int) -> torch.Tensor:
    """Tensors of shape (n, tokens, ...) zero-padded along the tokens to ``length``, concatenated."""
    import torch
    import torch.nn.functional as functional

    # pad() lists (before, after) pairs from the last axis back; the tokens are axis 1.
    return torch.cat([functional.pad(t, [0, 0] * (t.ndim - 2) + [0, length - t.shape[1]]) for t in tensors])


def encode_qwen_image_captions(
    pipe: QwenImagePipeline, captions: Sequence[str], chunk_size: int
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Caption embeddings ``chunk_size`` at a time, zero-padded to the longest with a mask, as the pipeline
    pads a batch; the mask is None when no caption is padded (the transformer then attends to every token)."""
    import torch

    device = pipe.vae.device
    embeds, masks = [], []
    for start in range(0, len(captions), chunk_size):
        chunk_embeds, chunk_mask = pipe.encode_prompt(
            list(captions[start : start + chunk_size]), device=device
        )
        if chunk_mask is None:
            chunk_mask = torch.ones(chunk_embeds.shape[:2], dtype=torch.long, device=device)
        embeds.append(chunk_embeds)
        masks.append(chunk_mask)
    length = max(embed.shape[1] for embed in embeds)
    mask = _padded(masks, length)
    return _padded(embeds, length), None if bool(mask.all()) else mask


def encode_flow_examples(
    pipe: QwenImagePipeline, pixels: np.ndarray, captions: Sequence[str], chunk_size: int = 8
) -> EncodedFlowExamples:
    """Latents of ``pixels`` ((n, 3, h, w) in [-1, 1]) as the pipeline's decoder expects them, and captions,
    ``chunk_size`` at a time on the VAE's device.

    The posterior's mode is used: a trained VAE's posterior is narrow, so little is lost, while a random
    one's is as wide as its prior, and sampling it would bury the images under noise.

    Raises:
        ValueError: images and captions differ in number.
    """
    import torch

    if len(pixels) != len(captions):
        raise ValueError(f"{len(pixels)} images but {len(captions)} captions")
    vae = pipe.vae
    shape = (1, vae.config.z_dim, 1, 1)
    mean = torch.tensor(vae.config.latents_mean, device=vae.device).reshape(shape)
    std = torch.tensor(vae.config.latents_std, device=vae.device).reshape(shape)
    latents = []
    with torch.no_grad():
        for start in range(0, len(pixels), chunk_size):
            # The Qwen-Image VAE is a video VAE: an image is a one-frame clip.
            chunk = np.asarray(pixels[start : start + chunk_size], dtype=np.float32)
            frames = torch.from_numpy(chunk)[:, :, None].to(vae.device, vae.dtype)
            latents.append((vae.encode(frames).latent_dist.mode()[:, :, 0] - mean) / std)
        embeds, mask = encode_qwen_image_captions(pipe, captions, chunk_size)
    return EncodedFlowExamples(latents=torch.cat(latents), caption_embeds=embeds, caption_mask=mask)


def flow_loss(
    predict: Callable[[torch.Tensor], torch.Tensor],
    latents: torch.Tensor,
    noise: torch.Tensor,
    sigmas: torch.Tensor,
    weighting: LossWeighting,
    layout: Callable[[torch.Tensor], torch.Tensor] = pack_latents,
) -> torch.Tensor:
    """The weighted flow-matching loss of a transformer: ``predict(inputs)`` is its velocity prediction for
    the noisy latents in its input ``layout`` (2x2-packed tokens by default, as Qwen-Image and Flux take)."""
    prediction = predict(layout(noisy_latents(latents, noise, sigmas)))
    target = layout(velocity_target(latents, noise))
    return weighted_flow_loss(prediction, target, loss_weights(sigmas, weighting))


def flow_matching_loss_at(
    transformer: QwenImageTransformer2DModel,
    examples: EncodedFlowExamples,
    indices: torch.Tensor,
    noise: torch.Tensor,
    sigmas: torch.Tensor,
    weighting: LossWeighting,
) -> torch.Tensor:
    """The weighted flow-matching loss of the examples at ``indices`` for the given noise and sigmas."""
    latents = examples.latents[indices]
    batch, _, height, width = latents.shape
    mask = None if examples.caption_mask is None else examples.caption_mask[indices]

    def predict(tokens: torch.Tensor) -> torch.Tensor:
        return transformer(
            hidden_states=tokens,
            # The pipeline passes timestep / 1000, that is the sigma itself.
            timestep=sigmas,
            encoder_hidden_states=examples.caption_embeds[indices],
            encoder_hidden_states_mask=mask,
            img_shapes=[[(1, height // 2, width // 2)]] * batch,
            return_dict=False,
        )[0]

    return flow_loss(predict, latents, noise, sigmas, weighting)


def flow_matching_draws(
    examples: EncodedFlowExamples, indices: torch.Tensor, config: LoraTrainConfig, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """A batch's random draws, one row per example: the noise and the point of the sigma density. Drawn on
    the CPU, so a seed gives the same run on any device."""
    import torch

    noise = torch.randn(examples.latents[indices].shape, generator=generator)
    points = sample_density(
        len(indices), config.timestep_density, config.logit_mean, config.logit_std, generator
    )
    return noise, points


def loss_with_draws(
    loss_at: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    latents: torch.Tensor,
    training_sigmas: torch.Tensor,
    draws: tuple[torch.Tensor, ...],
) -> torch.Tensor:
    """``loss_at(noise, sigmas)`` of a batch with its draws (:func:`flow_matching_draws`): its noise, at the
    training sigmas nearest its density points, both on the device of ``latents``."""
    noise, points = draws
    sigmas = pick_training_sigmas(points, training_sigmas).to(latents.device)
    return loss_at(noise.to(latents.device), sigmas)


def flow_matching_loss(
    transformer: QwenImageTransformer2DModel,
    examples: EncodedFlowExamples,
    indices: torch.Tensor,
    training_sigmas: torch.Tensor,
    config: LoraTrainConfig,
    draws: tuple[torch.Tensor, ...],
) -> torch.Tensor:
    """The weighted flow-matching loss of the examples at ``indices`` with their draws."""
    return loss_with_draws(
        lambda noise, sigmas: flow_matching_loss_at(
            transformer, examples, indices, noise, sigmas, config.loss_weighting
        ),
        examples.latents,
        training_sigmas,
        draws,
    )


def add_flow_lora(transformer: QwenImageTransformer2DModel, config: LoraTrainConfig) -> None:
    """Freeze the transformer and add a trainable LoRA on ``config.lora_target_modules`` (by default the
    attention projections of both streams)."""
    transformer.requires_grad_(False)
    targets = config.lora_target_modules or FLOW_LORA_TARGET_MODULES
    transformer.add_adapter(lora_config(config.lora_rank, config.lora_alpha, targets))


def flow_lora_layers(transformer: QwenImageTransformer2DModel) -> dict[str, torch.Tensor]:
    """The transformer's LoRA weights under peft's key names."""
    return peft_lora_layers(transformer)


def save_flow_lora(transformer: QwenImageTransformer2DModel, folder: str | Path) -> Path:
    """Save the LoRA so ``QwenImagePipeline.load_lora_weights(folder)`` reloads it, scaled by the trained
    alpha."""
    from diffusers import QwenImagePipeline

    return save_diffusers_lora(QwenImagePipeline, "transformer", transformer, folder)


def load_recipe(model_path: str | Path, config: LoraTrainConfig) -> LoraRecipe:
    """The flow-matching recipe for the Qwen-Image pipeline at ``model_path``, its transformer carrying a
    fresh LoRA (initial weights from torch's global generator).

    Images must have sides that are multiples of twice the VAE's downsampling factor (the transformer's
    2x2 patches).
    """
    from diffusers import FlowMatchEulerDiscreteScheduler, QwenImagePipeline

    pipe = QwenImagePipeline.from_pretrained(model_path, local_files_only=True)
    for model in (pipe.vae, pipe.text_encoder):
        model.requires_grad_(False)
    # A fresh scheduler: its sigmas are the training ones, before any sampling reshapes them.
    training_sigmas = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config).sigmas
    add_flow_lora(pipe.transformer, config)

    def encode(images: list[TrainingImage], chunk_size: int) -> EncodedFlowExamples:
        pixels = np.stack([image.pixels for image in images])
        return encode_flow_examples(pipe, pixels, [image.caption for image in images], chunk_size)

    def loss(
        examples: EncodedFlowExamples, indices: torch.Tensor, draws: tuple[torch.Tensor, ...]
    ) -> torch.Tensor:
        return flow_matching_loss(pipe.transformer, examples, indices, training_sigmas, config, draws)

    return LoraRecipe(
        denoiser=pipe.transformer,
        encoders=(pipe.vae, pipe.text_encoder),
        encode=encode,
        encoded_type=EncodedFlowExamples,
        draw=lambda examples, indices, generator: flow_matching_draws(examples, indices, config, generator),
        loss=loss,
        save_adapter=lambda folder: save_flow_lora(pipe.transformer, folder),
    )
