"""LoRA fine-tuning of a Stable-Diffusion-style diffusers pipeline, as small steps.

The recipe follows diffusers' ``examples/text_to_image/train_text_to_image_lora.py``: frozen VAE
and text encoder, a LoRA on the UNet's attention projections, noise added at random timesteps,
MSE between the UNet's prediction and its target, AdamW. The adapter is saved in diffusers' LoRA
format (safetensors), so ``pipe.load_lora_weights(folder)`` reloads it. The base folder must have
the Stable Diffusion layout (tokenizer, text_encoder, vae, unet, scheduler subfolders).
"""

from __future__ import annotations

import logging
import math
import shutil
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from PIL import Image, ImageOps
from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveFloat, PositiveInt

if TYPE_CHECKING:
    import torch
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, CLIPTokenizer

logger = logging.getLogger(__name__)

LORA_TARGET_MODULES = ("to_k", "to_q", "to_v", "to_out.0")
CHECKPOINT_DIR = "checkpoints"


class LoraTrainConfig(BaseModel):
    """What one training run does. Read from parameters and never changed during the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    resolution: PositiveInt
    steps: PositiveInt
    batch_size: PositiveInt
    learning_rate: PositiveFloat
    lora_rank: PositiveInt
    seed: int
    checkpoint_every: NonNegativeInt = 0
    device: str = "cpu"
    # Float sums on the CPU depend on the number of threads, and other libraries (Dask starts its
    # workers with OMP_NUM_THREADS=1) change torch's default: a fixed count makes a seeded run give the
    # same adapter bytes whatever ran before it in the process.
    cpu_threads: PositiveInt = 1


@dataclass(frozen=True)
class TrainingImage:
    """One (image, caption) pair; ``pixels`` is (3, resolution, resolution) float32 in [-1, 1]."""

    sample_id: str
    caption: str
    pixels: np.ndarray


@dataclass(frozen=True)
class SkippedImage:
    """A training row whose image could not be used, with the reason."""

    sample_id: str
    image_path: str
    reason: str


def load_pixels(path: str | Path, resolution: int) -> np.ndarray:
    """An image as a (3, r, r) float32 array in [-1, 1], centre-cropped to a square then resized.

    Raises:
        OSError: the file is missing, not an image, or truncated.
    """
    with Image.open(path) as image:
        image.load()  # decode now, so a truncated file fails here and not later
        square = ImageOps.fit(image.convert("RGB"), (resolution, resolution), Image.Resampling.LANCZOS)
    return (np.asarray(square, dtype=np.float32) / 127.5 - 1.0).transpose(2, 0, 1)


def load_training_images(
    rows: Iterable[Mapping[str, Any]], resolution: int
) -> tuple[list[TrainingImage], list[SkippedImage]]:
    """The usable (image, caption) pairs of rows with sample_id, prompt and image_path.

    A missing or unreadable image is skipped with a logged warning naming the file; it is
    returned among the skipped rows, never dropped silently.
    """
    images: list[TrainingImage] = []
    skipped: list[SkippedImage] = []
    for row in rows:
        sample, path = str(row["sample_id"]), row["image_path"]
        try:
            if not isinstance(path, str) or not path:
                raise ValueError("the row has no image_path")
            pixels = load_pixels(path, resolution)
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            reason = (
                f"training image {path!r} of sample {sample} is unusable: {type(error).__name__}: {error}"
            )
            logger.warning("Skipped a training image: %s", reason)
            skipped.append(SkippedImage(sample_id=sample, image_path=str(path), reason=reason))
            continue
        images.append(TrainingImage(sample_id=sample, caption=str(row["prompt"]), pixels=pixels))
    return images, skipped


@dataclass
class DiffusionParts:
    """The parts of a Stable-Diffusion-style pipeline that training touches."""

    tokenizer: CLIPTokenizer
    text_encoder: CLIPTextModel
    vae: AutoencoderKL
    unet: UNet2DConditionModel
    noise_scheduler: DDPMScheduler


def load_diffusion_parts(model_path: str | Path) -> DiffusionParts:
    """Load the parts from a local diffusers folder, on the CPU, with every base weight frozen.

    Raises:
        FileNotFoundError: ``model_path`` is not a folder.
    """
    if not Path(model_path).is_dir():
        raise FileNotFoundError(f"base diffusers pipeline folder {model_path} does not exist")
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextModel, CLIPTokenizer

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
    )
    for model in (parts.text_encoder, parts.vae, parts.unet):
        model.requires_grad_(False)
    return parts


def add_lora_adapter(unet: UNet2DConditionModel, rank: int) -> list[torch.nn.Parameter]:
    """Add a LoRA of ``rank`` on the UNet's attention projections; returns its trainable parameters."""
    from peft import LoraConfig

    config = LoraConfig(
        r=rank, lora_alpha=rank, init_lora_weights="gaussian", target_modules=list(LORA_TARGET_MODULES)
    )
    unet.add_adapter(config)
    return [parameter for parameter in unet.parameters() if parameter.requires_grad]


@dataclass
class EncodedExamples:
    """What the frozen encoders make of the training set, computed once for all steps."""

    latent_mean: torch.Tensor
    latent_std: torch.Tensor
    caption_states: torch.Tensor

    def __len__(self) -> int:
        return int(self.latent_mean.shape[0])


def encode_examples(parts: DiffusionParts, images: list[TrainingImage], chunk_size: int) -> EncodedExamples:
    """Latent distributions of the images and hidden states of the captions, ``chunk_size`` at a time."""
    import torch

    device = parts.unet.device
    means, stds, states = [], [], []
    for start in range(0, len(images), chunk_size):
        chunk = images[start : start + chunk_size]
        pixels = torch.from_numpy(np.stack([image.pixels for image in chunk])).to(device)
        token_ids = parts.tokenizer(
            [image.caption for image in chunk],
            padding="max_length",
            max_length=parts.tokenizer.model_max_length,
            truncation=True,
            return_tensors="pt",
        ).input_ids.to(device)
        with torch.no_grad():
            distribution = parts.vae.encode(pixels).latent_dist
            means.append(distribution.mean)
            stds.append(distribution.std)
            states.append(parts.text_encoder(token_ids, return_dict=False)[0])
    return EncodedExamples(torch.cat(means), torch.cat(stds), torch.cat(states))


def batch_indices(
    n_examples: int, batch_size: int, steps: int, generator: torch.Generator
) -> Iterator[torch.Tensor]:
    """Indices of the examples in each of ``steps`` batches: a fresh shuffle for every pass over the data."""
    import torch

    produced = 0
    while produced < steps:
        order = torch.randperm(n_examples, generator=generator)
        for batch in order.split(batch_size):
            if produced == steps:
                return
            produced += 1
            yield batch


def diffusion_loss(
    parts: DiffusionParts, encoded: EncodedExamples, indices: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """MSE between the UNet's prediction and its target for one batch noised at random timesteps."""
    import torch
    import torch.nn.functional as functional

    device = encoded.latent_mean.device
    mean, std = encoded.latent_mean[indices], encoded.latent_std[indices]
    # Random numbers are drawn on the CPU so a seed gives the same run on any device.
    sampled = mean + std * torch.randn(mean.shape, generator=generator).to(device)
    latents = sampled * parts.vae.config.scaling_factor
    noise = torch.randn(latents.shape, generator=generator).to(device)
    n_timesteps = parts.noise_scheduler.config.num_train_timesteps
    timesteps = torch.randint(0, n_timesteps, (len(indices),), generator=generator).to(device)
    noisy_latents = parts.noise_scheduler.add_noise(latents, noise, timesteps)
    prediction_type = parts.noise_scheduler.config.prediction_type
    if prediction_type == "epsilon":
        target = noise
    elif prediction_type == "v_prediction":
        target = parts.noise_scheduler.get_velocity(latents, noise, timesteps)
    else:
        raise ValueError(
            f"unsupported prediction type {prediction_type!r} (expected epsilon or v_prediction)"
        )
    prediction = parts.unet(noisy_latents, timesteps, encoded.caption_states[indices], return_dict=False)[0]
    return functional.mse_loss(prediction.float(), target.float())


def lora_layers(unet: UNet2DConditionModel) -> dict[str, torch.Tensor]:
    """The UNet's LoRA weights under diffusers' key names."""
    from diffusers.utils import convert_state_dict_to_diffusers
    from peft.utils import get_peft_model_state_dict

    return convert_state_dict_to_diffusers(get_peft_model_state_dict(unet))


def save_lora_adapter(unet: UNet2DConditionModel, folder: str | Path) -> Path:
    """Save the UNet's LoRA as safetensors in diffusers' format; ``load_lora_weights(folder)`` reloads it."""
    from diffusers import StableDiffusionPipeline

    folder = Path(folder)
    StableDiffusionPipeline.save_lora_weights(
        save_directory=folder, unet_lora_layers=lora_layers(unet), safe_serialization=True
    )
    return folder


def train_lora(
    parts: DiffusionParts, encoded: EncodedExamples, config: LoraTrainConfig, checkpoint_dir: Path | None
) -> list[float]:
    """Optimise the UNet's LoRA (added by :func:`add_lora_adapter`) for ``config.steps`` steps.

    Returns the loss of each step. Every ``config.checkpoint_every`` steps (when positive) the adapter so far is saved under
    ``checkpoint_dir/step-<n>``.

    Raises:
        FloatingPointError: the loss stopped being finite (the learning rate is too high).
    """
    import torch

    trainable = [parameter for parameter in parts.unet.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    parts.unet.train()
    losses: list[float] = []
    batches = batch_indices(len(encoded), config.batch_size, config.steps, generator)
    for step, indices in enumerate(batches, 1):
        loss = diffusion_loss(parts, encoded, indices, generator)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            raise FloatingPointError(f"training loss is {losses[-1]} at step {step}; lower learning_rate")
        if checkpoint_dir is not None and config.checkpoint_every and step % config.checkpoint_every == 0:
            save_lora_adapter(parts.unet, checkpoint_dir / f"step-{step:06d}")
    parts.unet.eval()
    return losses


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


def finetune_lora_adapter(
    model_path: str | Path, images: list[TrainingImage], config: LoraTrainConfig, adapter_path: str | Path
) -> list[float]:
    """Train a LoRA for the pipeline at ``model_path`` on ``images`` and save it to ``adapter_path``.

    Deterministic for a given ``config.seed``; the caller's random state is left untouched.
    Returns the loss of each step.

    Raises:
        ValueError: ``images`` is empty.
    """
    import torch

    if not images:
        raise ValueError("no training images: LoRA fine-tuning needs at least one (image, caption) pair")
    adapter_path = Path(adapter_path)
    # Checkpoints of an earlier run would be mistaken for this run's.
    shutil.rmtree(adapter_path / CHECKPOINT_DIR, ignore_errors=True)
    checkpoint_dir = adapter_path / CHECKPOINT_DIR if config.checkpoint_every else None
    with torch.random.fork_rng(), torch_threads(config.cpu_threads):
        torch.manual_seed(config.seed)  # the LoRA's initial weights come from the global generator
        parts = load_diffusion_parts(model_path)
        add_lora_adapter(parts.unet, config.lora_rank)
        for model in (parts.text_encoder, parts.vae, parts.unet):
            model.to(config.device)
        encoded = encode_examples(parts, images, config.batch_size)
        losses = train_lora(parts, encoded, config, checkpoint_dir)
    save_lora_adapter(parts.unet, adapter_path)
    return losses
