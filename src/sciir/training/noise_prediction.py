"""The noise-prediction family of the LoRA recipe: a Stable-Diffusion-style pipeline's UNet.

After diffusers' ``examples/text_to_image/train_text_to_image_lora.py``: frozen VAE and CLIP text
encoder, a LoRA on the UNet, noise added at random DDPM timesteps, MSE between the UNet's prediction and
its target (the noise, or the velocity for a v-prediction scheduler). The base folder must have the
Stable Diffusion layout (tokenizer, text_encoder, vae, unet, scheduler subfolders). An SDXL pipeline
(``train_text_to_image_lora_sdxl.py``) adds a second, projecting text encoder (tokenizer_2,
text_encoder_2): the caption's states are both encoders' penultimate hidden states side by side, and
the UNet is also given the pooled caption and the size ids (original size, crop corner, target size; an
image is trained at its own training size, uncropped, as the pipeline generates by default). The shared
loop lives in :mod:`sciir.training.loop`, the checkpoints in :mod:`sciir.training.checkpoints` and the cache
in :mod:`sciir.training.encoding_cache`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sciir.training.config import LoraTrainConfig
from sciir.training.families import pipeline_class
from sciir.training.lora_adapter import lora_config, peft_lora_layers, save_diffusers_lora
from sciir.training.recipe import LoraRecipe
from sciir.training.training_images import TrainingImage

if TYPE_CHECKING:
    import torch

    # From their modules: `from diffusers import ...` gives a type checker diffusers' dummy objects.
    from diffusers.models.autoencoders.autoencoder_kl import AutoencoderKL
    from diffusers.models.unets.unet_2d_condition import UNet2DConditionModel
    from diffusers.schedulers.scheduling_ddpm import DDPMScheduler
    from transformers import CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

LORA_TARGET_MODULES = ("to_k", "to_q", "to_v", "to_out.0")
SDXL_PIPELINE = "StableDiffusionXLPipeline"


@dataclass
class DiffusionParts:
    """The parts of a Stable-Diffusion-style pipeline that training touches."""

    tokenizer: CLIPTokenizer
    text_encoder: CLIPTextModel
    vae: AutoencoderKL
    unet: UNet2DConditionModel
    noise_scheduler: DDPMScheduler
    # The diffusers pipeline class whose layout the folder has (and whose LoRA format the adapter takes).
    pipeline_class: str = "StableDiffusionPipeline"
    # SDXL's second text encoder, whose pooled output conditions the UNet; None for SD 1.x and 2.x.
    tokenizer_2: CLIPTokenizer | None = None
    text_encoder_2: CLIPTextModelWithProjection | None = None

    @property
    def text_encoders(self) -> tuple[CLIPTextModel | CLIPTextModelWithProjection, ...]:
        return (
            (self.text_encoder,) if self.text_encoder_2 is None else (self.text_encoder, self.text_encoder_2)
        )


def load_diffusion_parts(model_path: str | Path) -> DiffusionParts:
    """Load the parts from a local diffusers folder, on the CPU, with every base weight frozen.

    Raises:
        FileNotFoundError: ``model_path`` is not a folder.
    """
    if not Path(model_path).is_dir():
        raise FileNotFoundError(f"base diffusers pipeline folder {model_path} does not exist")
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

    name = pipeline_class(model_path)
    second = {}
    if name == SDXL_PIPELINE:
        second = {
            "tokenizer_2": CLIPTokenizer.from_pretrained(
                model_path, subfolder="tokenizer_2", local_files_only=True
            ),
            "text_encoder_2": CLIPTextModelWithProjection.from_pretrained(
                model_path, subfolder="text_encoder_2", local_files_only=True
            ),
        }
    parts = DiffusionParts(
        tokenizer=CLIPTokenizer.from_pretrained(model_path, subfolder="tokenizer", local_files_only=True),
        text_encoder=CLIPTextModel.from_pretrained(
            model_path, subfolder="text_encoder", local_files_only=True
        ),
        vae=AutoencoderKL.from_pretrained(model_path, subfolder="vae", local_files_only=True),
        unet=UNet2DConditionModel.from_pretrained(model_path, subfolder="unet", local_files_only=True),
        # Training adds noise with DDPM's formula whatever sampler the pipeline ships with.
        noise_scheduler=DDPMScheduler.from_pretrained(
            model_path, subfolder="scheduler", local_files_only=True
        ),
        pipeline_class=name,
        **second,
    )
    for model in (*parts.text_encoders, parts.vae, parts.unet):
        model.requires_grad_(False)
    return parts


def add_lora_adapter(
    unet: UNet2DConditionModel,
    rank: int,
    target_modules: Iterable[str] = LORA_TARGET_MODULES,
    alpha: float | None = None,
) -> list[torch.nn.Parameter]:
    """Add a LoRA of ``rank`` (scaled by ``alpha / rank``; alpha defaults to the rank) on the UNet's
    ``target_modules``; returns its trainable parameters."""
    unet.add_adapter(lora_config(rank, alpha, target_modules))
    return [parameter for parameter in unet.parameters() if parameter.requires_grad]


@dataclass
class EncodedExamples:
    """What the frozen encoders make of the training set, computed once for all steps. SDXL's UNet also
    takes the pooled caption and the six size ids of each example (None for SD 1.x and 2.x)."""

    latent_mean: torch.Tensor
    latent_std: torch.Tensor
    caption_states: torch.Tensor
    pooled_captions: torch.Tensor | None = None
    size_ids: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.latent_mean.shape[0])


def _clip_outputs(
    tokenizer: CLIPTokenizer,
    encoder: CLIPTextModel | CLIPTextModelWithProjection,
    captions: list[str],
    device: Any,
) -> Any:
    """The text encoder's outputs (hidden states included) for captions padded and cut to its length."""
    token_ids = tokenizer(
        captions,
        padding="max_length",
        max_length=tokenizer.model_max_length,
        truncation=True,
        return_tensors="pt",
    ).input_ids.to(device)
    return encoder(token_ids, output_hidden_states=True)


def encode_clip_captions(
    parts: DiffusionParts, captions: list[str]
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The caption states the UNet attends to and, for SDXL, the pooled caption.

    SD 1.x and 2.x: the text encoder's last hidden state. SDXL: both encoders' penultimate hidden states
    side by side and the second encoder's projected pooled output, as ``StableDiffusionXLPipeline`` encodes
    a prompt.
    """
    import torch

    device = parts.unet.device
    if parts.text_encoder_2 is None:
        return _clip_outputs(parts.tokenizer, parts.text_encoder, captions, device).last_hidden_state, None
    first = _clip_outputs(parts.tokenizer, parts.text_encoder, captions, device)
    tokenizer_2 = cast("CLIPTokenizer", parts.tokenizer_2)  # SDXL's parts hold both its tokenizers
    second = _clip_outputs(tokenizer_2, parts.text_encoder_2, captions, device)
    states = torch.cat([first.hidden_states[-2], second.hidden_states[-2]], dim=-1)
    return states, second.text_embeds


def size_ids(count: int, height: int, width: int) -> torch.Tensor:
    """SDXL's size conditioning of ``count`` images trained at height x width, uncropped: (original
    height, width, crop top, left, target height, width), as the pipeline passes when generating."""
    import torch

    return torch.tensor([[height, width, 0, 0, height, width]], dtype=torch.float32).repeat(count, 1)


def encode_examples(parts: DiffusionParts, images: list[TrainingImage], chunk_size: int) -> EncodedExamples:
    """Latent distributions of the images (of one size) and the captions' conditioning, ``chunk_size``
    at a time."""
    import torch

    device = parts.unet.device
    means, stds, states, pooled = [], [], [], []
    for start in range(0, len(images), chunk_size):
        chunk = images[start : start + chunk_size]
        pixels = torch.from_numpy(np.stack([image.pixels for image in chunk])).to(device)
        with torch.no_grad():
            distribution = parts.vae.encode(pixels).latent_dist
            means.append(distribution.mean)
            stds.append(distribution.std)
            chunk_states, chunk_pooled = encode_clip_captions(parts, [image.caption for image in chunk])
            states.append(chunk_states)
            pooled.append(chunk_pooled)
    if parts.text_encoder_2 is None:
        return EncodedExamples(torch.cat(means), torch.cat(stds), torch.cat(states))
    _, height, width = images[0].pixels.shape
    return EncodedExamples(
        torch.cat(means),
        torch.cat(stds),
        torch.cat(states),
        pooled_captions=torch.cat(cast("list[torch.Tensor]", pooled)),  # SDXL: every chunk's pooled caption
        size_ids=size_ids(len(images), height, width).to(device),
    )


def diffusion_draws(
    parts: DiffusionParts, encoded: EncodedExamples, indices: torch.Tensor, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """A batch's random draws, one row per example: the latent sample's standard normal, the noise and
    the timestep. Drawn on the CPU, so a seed gives the same run on any device."""
    import torch

    shape = encoded.latent_mean[indices].shape
    n_timesteps = parts.noise_scheduler.config["num_train_timesteps"]
    return (
        torch.randn(shape, generator=generator),
        torch.randn(shape, generator=generator),
        torch.randint(0, n_timesteps, (len(indices),), generator=generator),
    )


def diffusion_loss(
    parts: DiffusionParts, encoded: EncodedExamples, indices: torch.Tensor, draws: tuple[torch.Tensor, ...]
) -> torch.Tensor:
    """MSE between the UNet's prediction and its target for the examples at ``indices``, noised with their
    draws (:func:`diffusion_draws`) at their timesteps."""
    import torch.nn.functional as functional

    device = encoded.latent_mean.device
    standard, noise, timesteps = (draw.to(device) for draw in draws)
    sampled = encoded.latent_mean[indices] + encoded.latent_std[indices] * standard
    latents = sampled * parts.vae.config["scaling_factor"]
    # diffusers annotates the timesteps torch.IntTensor; they are int64 (torch.randint), as it takes them.
    noisy_latents = parts.noise_scheduler.add_noise(latents, noise, timesteps)  # type: ignore[arg-type]
    prediction_type = parts.noise_scheduler.config["prediction_type"]
    if prediction_type == "epsilon":
        target = noise
    elif prediction_type == "v_prediction":
        target = parts.noise_scheduler.get_velocity(latents, noise, timesteps)  # type: ignore[arg-type]
    else:
        raise ValueError(
            f"unsupported prediction type {prediction_type!r} (expected epsilon or v_prediction)"
        )
    conditions = None
    if encoded.pooled_captions is not None:  # SDXL
        size_ids = cast("torch.Tensor", encoded.size_ids)  # made with the pooled captions
        conditions = {"text_embeds": encoded.pooled_captions[indices], "time_ids": size_ids[indices]}
    prediction = parts.unet(
        noisy_latents,
        timesteps,
        encoded.caption_states[indices],
        added_cond_kwargs=conditions,
        return_dict=False,
    )[0]
    return functional.mse_loss(prediction.float(), target.float())


def lora_layers(unet: UNet2DConditionModel) -> dict[str, torch.Tensor]:
    """The UNet's LoRA weights under peft's key names (``<module>.lora_A.weight``, ``lora_B``).

    Not converted with ``convert_state_dict_to_diffusers``: it renames only the attention projections,
    and ``load_lora_weights`` reading such a mixed file (attention keys renamed, convolution keys not)
    silently drops the renamed ones. Peft's names are what it reads for every module.
    """
    return peft_lora_layers(unet)


def save_lora_adapter(
    unet: UNet2DConditionModel, folder: str | Path, pipeline: str = "StableDiffusionPipeline"
) -> Path:
    """Save the UNet's LoRA so ``<pipeline>.load_lora_weights(folder)`` reloads it."""
    import diffusers

    return save_diffusers_lora(getattr(diffusers, pipeline), "unet", unet, folder)


def load_recipe(model_path: str | Path, config: LoraTrainConfig) -> LoraRecipe:
    """The noise-prediction recipe for the Stable-Diffusion-style (or SDXL) pipeline at ``model_path``, its
    UNet carrying a fresh LoRA (initial weights from torch's global generator)."""
    parts = load_diffusion_parts(model_path)
    add_lora_adapter(
        parts.unet, config.lora_rank, config.lora_target_modules or LORA_TARGET_MODULES, config.lora_alpha
    )
    return LoraRecipe(
        denoiser=parts.unet,
        encoders=(*parts.text_encoders, parts.vae),
        encode=lambda images, chunk_size: encode_examples(parts, images, chunk_size),
        encoded_type=EncodedExamples,
        draw=lambda encoded, indices, generator: diffusion_draws(parts, encoded, indices, generator),
        loss=lambda encoded, indices, draws: diffusion_loss(parts, encoded, indices, draws),
        save_adapter=lambda folder: save_lora_adapter(parts.unet, folder, parts.pipeline_class),
    )
