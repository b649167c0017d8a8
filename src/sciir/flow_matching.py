"""LoRA fine-tuning of a Qwen-Image pipeline with the rectified-flow (flow-matching) objective.

The objective follows diffusers' ``train_dreambooth_lora_sd3.py`` / ``train_dreambooth_lora_qwen_image.py``:
sigmas drawn from a density (logit-normal or uniform) over the scheduler's training sigmas, the noisy
input ``(1 - sigma) * latents + sigma * noise``, the velocity target ``noise - latents``, and a per-sample
weighting of the squared error. The transformer is frozen but for a peft LoRA; the VAE and the text encoder
run once, before training, so each step touches the transformer only. The adapter is saved with diffusers'
``save_lora_weights`` and its peft configuration (alpha included), so ``pipe.load_lora_weights(folder)``
reloads exactly the weights trained.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, PositiveFloat, PositiveInt

if TYPE_CHECKING:
    import torch
    from diffusers import QwenImagePipeline, QwenImageTransformer2DModel

# The attention projections of both streams (image and text) of every Qwen-Image block.
FLOW_LORA_TARGET_MODULES = ("to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj")
TimestepDensity = Literal["logit_normal", "uniform"]
LossWeighting = Literal["none", "sigma_sqrt", "cosmap"]


class FlowLoraConfig(BaseModel):
    """What one flow-matching LoRA run does."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: PositiveInt
    batch_size: PositiveInt
    learning_rate: PositiveFloat
    lora_rank: PositiveInt
    lora_alpha: PositiveFloat
    lora_target_modules: tuple[str, ...] = FLOW_LORA_TARGET_MODULES
    seed: int
    timestep_density: TimestepDensity = "logit_normal"
    logit_mean: float = 0.0
    logit_std: float = 1.0
    loss_weighting: LossWeighting = "none"
    # A fixed thread count keeps a seeded CPU run's float sums, and so its adapter, the same.
    cpu_threads: PositiveInt = 1


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


def encode_flow_examples(
    pipe: QwenImagePipeline, pixels: np.ndarray, captions: Sequence[str]
) -> EncodedFlowExamples:
    """Latents of ``pixels`` ((n, 3, h, w) in [-1, 1]) as the pipeline's decoder expects them, and captions.

    The posterior's mode is used: a trained VAE's posterior is narrow, so little is lost, while a random
    one's is as wide as its prior, and sampling it would bury the images under noise.
    """
    import torch

    if len(pixels) != len(captions):
        raise ValueError(f"{len(pixels)} images but {len(captions)} captions")
    vae = pipe.vae
    with torch.no_grad():
        # The Qwen-Image VAE is a video VAE: an image is a one-frame clip.
        frames = torch.from_numpy(np.asarray(pixels, dtype=np.float32))[:, :, None]
        latents = vae.encode(frames.to(vae.dtype)).latent_dist.mode()[:, :, 0]
        shape = (1, vae.config.z_dim, 1, 1)
        mean = torch.tensor(vae.config.latents_mean).reshape(shape)
        std = torch.tensor(vae.config.latents_std).reshape(shape)
        embeds, mask = pipe.encode_prompt(list(captions), device=torch.device("cpu"))
    return EncodedFlowExamples(latents=(latents - mean) / std, caption_embeds=embeds, caption_mask=mask)


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
    prediction = transformer(
        hidden_states=pack_latents(noisy_latents(latents, noise, sigmas)),
        # The pipeline passes timestep / 1000, that is the sigma itself.
        timestep=sigmas,
        encoder_hidden_states=examples.caption_embeds[indices],
        encoder_hidden_states_mask=mask,
        img_shapes=[[(1, height // 2, width // 2)]] * batch,
        return_dict=False,
    )[0]
    target = pack_latents(velocity_target(latents, noise))
    return weighted_flow_loss(prediction, target, loss_weights(sigmas, weighting))


def flow_matching_loss(
    transformer: QwenImageTransformer2DModel,
    examples: EncodedFlowExamples,
    indices: torch.Tensor,
    training_sigmas: torch.Tensor,
    config: FlowLoraConfig,
    generator: torch.Generator,
) -> torch.Tensor:
    """The weighted flow-matching loss of one batch with fresh noise at sigmas drawn from the density."""
    import torch

    noise = torch.randn(examples.latents[indices].shape, generator=generator)
    points = sample_density(
        len(indices), config.timestep_density, config.logit_mean, config.logit_std, generator
    )
    sigmas = pick_training_sigmas(points, training_sigmas)
    return flow_matching_loss_at(transformer, examples, indices, noise, sigmas, config.loss_weighting)


def add_flow_lora(transformer: QwenImageTransformer2DModel, config: FlowLoraConfig) -> None:
    """Freeze the transformer and add a trainable LoRA on ``config.lora_target_modules``."""
    from peft import LoraConfig

    transformer.requires_grad_(False)
    lora = LoraConfig(
        r=config.lora_rank,
        lora_alpha=config.lora_alpha,
        init_lora_weights="gaussian",
        target_modules=list(config.lora_target_modules),
    )
    transformer.add_adapter(lora)


def flow_lora_layers(transformer: QwenImageTransformer2DModel) -> dict[str, torch.Tensor]:
    """The transformer's LoRA weights under peft's key names."""
    from peft.utils import get_peft_model_state_dict

    return get_peft_model_state_dict(transformer)


def save_flow_lora(transformer: QwenImageTransformer2DModel, folder: str | Path) -> Path:
    """Save the LoRA with its peft configuration, so ``load_lora_weights`` scales it by the trained alpha."""
    from diffusers import QwenImagePipeline

    folder = Path(folder)
    QwenImagePipeline.save_lora_weights(
        save_directory=folder,
        transformer_lora_layers=flow_lora_layers(transformer),
        transformer_lora_adapter_metadata=transformer.peft_config["default"].to_dict(),
        safe_serialization=True,
    )
    return folder


@dataclass(frozen=True)
class FlowLoraRun:
    """What a run produced: the loss of each step and the LoRA weights it saved (peft key names)."""

    losses: list[float]
    lora_layers: dict[str, torch.Tensor]


def _stream_seeds(seed: int) -> tuple[int, int, int]:
    """Independent seeds for the LoRA's initial weights, the batch order and the noise."""
    lora, order, noise = np.random.SeedSequence(seed % 2**32).generate_state(3)
    return int(lora), int(order), int(noise)


def train_flow_lora(
    model_path: str | Path,
    pixels: np.ndarray,
    captions: Sequence[str],
    config: FlowLoraConfig,
    adapter_path: str | Path,
) -> FlowLoraRun:
    """Train a LoRA for the Qwen-Image pipeline at ``model_path`` and save it to ``adapter_path``.

    ``pixels`` is (n, 3, h, w) float in [-1, 1], h and w multiples of twice the VAE's downsampling
    factor (the transformer's 2x2 patches), one caption per image. Each step trains on ``batch_size`` images
    drawn at random. Deterministic for a seed; the caller's random state is left untouched.

    Raises:
        ValueError: no images, or images and captions differ in number.
        FloatingPointError: the loss stopped being finite (the learning rate is too high).
    """
    import torch
    from diffusers import FlowMatchEulerDiscreteScheduler, QwenImagePipeline

    if len(pixels) == 0:
        raise ValueError("no training images: LoRA fine-tuning needs at least one (image, caption) pair")
    lora_seed, order_seed, noise_seed = _stream_seeds(config.seed)
    threads_before = torch.get_num_threads()
    torch.set_num_threads(config.cpu_threads)
    try:
        pipe = QwenImagePipeline.from_pretrained(model_path, local_files_only=True)
        # A fresh scheduler: its sigmas are the training ones, before any sampling reshapes them.
        scheduler = FlowMatchEulerDiscreteScheduler.from_config(pipe.scheduler.config)
        examples = encode_flow_examples(pipe, pixels, captions)
        transformer = pipe.transformer
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(lora_seed)  # the LoRA's gaussian initial weights
            add_flow_lora(transformer, config)
        trainable = [parameter for parameter in transformer.parameters() if parameter.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate)
        order_generator = torch.Generator().manual_seed(order_seed)
        noise_generator = torch.Generator().manual_seed(noise_seed)
        losses: list[float] = []
        transformer.train()
        for step in range(1, config.steps + 1):
            indices = torch.randperm(len(examples), generator=order_generator)[: config.batch_size]
            loss = flow_matching_loss(
                transformer, examples, indices, scheduler.sigmas, config, noise_generator
            )
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            value = float(loss.detach())
            if not math.isfinite(value):
                raise FloatingPointError(f"training loss is {value} at step {step}; lower learning_rate")
            losses.append(value)
        transformer.eval()
        save_flow_lora(transformer, adapter_path)
    finally:
        torch.set_num_threads(threads_before)
    layers = {name: tensor.detach().clone() for name, tensor in flow_lora_layers(transformer).items()}
    return FlowLoraRun(losses=losses, lora_layers=layers)
