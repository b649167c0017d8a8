"""LoRA fine-tuning of a Stable-Diffusion-style diffusers pipeline, as small steps.

The recipe follows diffusers' ``examples/text_to_image/train_text_to_image_lora.py``: frozen VAE
and text encoder, a LoRA on the UNet's attention projections, noise added at random timesteps,
MSE between the UNet's prediction and its target, AdamW. The adapter is saved by diffusers'
``save_lora_weights`` (safetensors, peft key names), so ``pipe.load_lora_weights(folder)`` reloads
it. The base folder must have the Stable Diffusion layout (tokenizer, text_encoder, vae, unet,
scheduler subfolders). Checkpoints (``sciir.lora_checkpoints``) let a stopped run resume to the very
weights an uninterrupted run reaches.
"""

from __future__ import annotations

import itertools
import logging
import math
import random
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from PIL import Image, ImageOps
from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveFloat, PositiveInt

from sciir.lora_checkpoints import (
    checkpoint_folder,
    find_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)

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
    # Module names (peft matches them as name suffixes) that get a LoRA: by default the attention
    # projections, as diffusers' recipe for a pretrained UNet.
    lora_target_modules: tuple[str, ...] = LORA_TARGET_MODULES
    seed: int
    lr_scheduler: Literal["constant", "constant_with_warmup", "linear", "cosine"] = "constant"
    lr_warmup_steps: NonNegativeInt = 0
    checkpoint_every: NonNegativeInt = 0
    # Keep at most this many checkpoints, removing the oldest first (None: keep all).
    checkpoints_total_limit: PositiveInt | None = None
    # "latest" (the newest checkpoint under the adapter folder, if any), a checkpoint folder, or None.
    resume_from_checkpoint: str | None = None
    device: str = "cpu"
    # Float sums on the CPU depend on the number of threads, and other libraries (Dask starts its
    # workers with OMP_NUM_THREADS=1) change torch's default: a fixed count makes a seeded run give the
    # same adapter bytes whatever ran before it in the process.
    cpu_threads: PositiveInt = 1


# The settings that shape the sequence of weights: a checkpoint resumes only a run that agrees on them.
TRAJECTORY_FIELDS = (
    "resolution",
    "steps",
    "batch_size",
    "learning_rate",
    "lora_rank",
    "lora_target_modules",
    "seed",
    "lr_scheduler",
    "lr_warmup_steps",
)


@dataclass(frozen=True)
class StepRecord:
    """What one optimisation step did; ``samples_per_second`` is a wall-clock measure (MLflow only)."""

    step: int
    loss: float
    learning_rate: float
    samples_per_second: float


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


def add_lora_adapter(
    unet: UNet2DConditionModel, rank: int, target_modules: Iterable[str] = LORA_TARGET_MODULES
) -> list[torch.nn.Parameter]:
    """Add a LoRA of ``rank`` on the UNet's ``target_modules``; returns its trainable parameters."""
    from peft import LoraConfig

    config = LoraConfig(
        r=rank, lora_alpha=rank, init_lora_weights="gaussian", target_modules=list(target_modules)
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
    """The UNet's LoRA weights under peft's key names (``<module>.lora_A.weight``, ``lora_B``).

    Not converted with ``convert_state_dict_to_diffusers``: it renames only the attention projections,
    and ``load_lora_weights`` reading such a mixed file (attention keys renamed, convolution keys not)
    silently drops the renamed ones. Peft's names are what it reads for every module.
    """
    from peft.utils import get_peft_model_state_dict

    return get_peft_model_state_dict(unet)


def save_lora_adapter(unet: UNet2DConditionModel, folder: str | Path) -> Path:
    """Save the UNet's LoRA as safetensors with diffusers' writer; ``load_lora_weights(folder)`` reloads it."""
    from diffusers import StableDiffusionPipeline

    folder = Path(folder)
    StableDiffusionPipeline.save_lora_weights(
        save_directory=folder, unet_lora_layers=lora_layers(unet), safe_serialization=True
    )
    return folder


def _stream_seeds(seed: int) -> tuple[int, int]:
    """Independent seeds for the batch order and for the noise, both derived from ``seed``."""
    order, noise = np.random.SeedSequence(seed % 2**32).generate_state(2)
    return int(order), int(noise)


def _trajectory(config: LoraTrainConfig) -> dict[str, Any]:
    """The settings that shape the run, as JSON values (a checkpoint stores them so)."""
    return config.model_dump(mode="json", include=set(TRAJECTORY_FIELDS))


def _check_same_trajectory(progress: Mapping[str, Any], config: LoraTrainConfig, folder: Path) -> None:
    """Refuse a checkpoint of a run with other settings: resuming it would not continue that run."""
    saved, current = progress["trajectory"], _trajectory(config)
    differing = [f"{k}: {saved.get(k)!r} != {v!r}" for k, v in current.items() if saved.get(k) != v]
    if differing:
        raise ValueError(
            f"checkpoint {folder} was saved by a run with other settings ({'; '.join(differing)})"
        )


def train_lora(
    parts: DiffusionParts,
    encoded: EncodedExamples,
    config: LoraTrainConfig,
    checkpoint_root: Path | None,
    resume_from: Path | None = None,
) -> list[StepRecord]:
    """Optimise the UNet's LoRA (added by :func:`add_lora_adapter`) up to step ``config.steps``.

    From ``resume_from`` (a checkpoint) the run continues at the step after the checkpoint's and
    reaches the weights an uninterrupted run reaches. Every ``config.checkpoint_every`` steps (when
    positive) a checkpoint is saved under ``checkpoint_root/checkpoint-<step>``, keeping the newest
    ``config.checkpoints_total_limit``. Returns the record of every step, those before the checkpoint's
    included.

    Raises:
        FloatingPointError: the loss stopped being finite (the learning rate is too high).
        ValueError: the checkpoint was saved by a run with other settings.
    """
    import torch
    from diffusers.optimization import get_scheduler

    trainable = {name: p for name, p in parts.unet.named_parameters() if p.requires_grad}
    optimizer = torch.optim.AdamW(trainable.values(), lr=config.learning_rate)
    scheduler = get_scheduler(
        config.lr_scheduler,
        optimizer,
        num_warmup_steps=config.lr_warmup_steps,
        num_training_steps=config.steps,
    )
    order_seed, noise_seed = _stream_seeds(config.seed)
    generator = torch.Generator().manual_seed(noise_seed)
    records: list[StepRecord] = []
    if resume_from is not None:
        progress = load_checkpoint(resume_from, trainable, optimizer, scheduler, generator)
        _check_same_trajectory(progress, config, resume_from)
        records = [StepRecord(**record) for record in progress["records"]]
        logger.info("Resuming LoRA training from %s (step %d)", resume_from, len(records))
    # The order is replayed from its seed, so the resumed run sees the batches the interrupted one would have.
    order = batch_indices(
        len(encoded), config.batch_size, config.steps, torch.Generator().manual_seed(order_seed)
    )
    parts.unet.train()
    for step, indices in enumerate(itertools.islice(order, len(records), None), len(records) + 1):
        started = time.perf_counter()
        learning_rate = optimizer.param_groups[0]["lr"]
        loss = diffusion_loss(parts, encoded, indices, generator)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        value = float(loss.detach())
        if not math.isfinite(value):
            raise FloatingPointError(f"training loss is {value} at step {step}; lower learning_rate")
        speed = len(indices) / max(time.perf_counter() - started, 1e-9)
        records.append(StepRecord(step, value, learning_rate, speed))
        if checkpoint_root is not None and config.checkpoint_every and step % config.checkpoint_every == 0:
            _save_training_checkpoint(
                parts.unet, trainable, optimizer, scheduler, generator, records, config, checkpoint_root
            )
    parts.unet.eval()
    return records


def _save_training_checkpoint(
    unet: UNet2DConditionModel,
    trainable: Mapping[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    generator: torch.Generator,
    records: list[StepRecord],
    config: LoraTrainConfig,
    root: Path,
) -> Path:
    """A checkpoint of the run after its last record, with the adapter also in diffusers' format."""
    if config.checkpoints_total_limit is not None:
        prune_checkpoints(root, keep=config.checkpoints_total_limit - 1)  # room for the new one
    folder = checkpoint_folder(root, records[-1].step)
    save_lora_adapter(unet, folder)
    progress = {
        "step": records[-1].step,
        "records": [asdict(record) for record in records],
        "trajectory": _trajectory(config),
    }
    return save_checkpoint(folder, trainable, optimizer, scheduler, generator, progress)


@contextmanager
def seeded_random_states(seed: int) -> Iterator[None]:
    """torch, numpy and Python seeded with ``seed`` inside; the caller's random states restored after."""
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng():
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


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
) -> list[StepRecord]:
    """Train a LoRA for the pipeline at ``model_path`` on ``images`` and save it to ``adapter_path``.

    Deterministic for a given ``config.seed``, resumed or not; the caller's random states are left
    untouched. Checkpoints live under ``adapter_path/checkpoints``; a run that does not resume
    removes those of an earlier run. Returns the record of each step.

    Raises:
        ValueError: ``images`` is empty, or the checkpoint to resume was saved with other settings.
        FileNotFoundError: ``config.resume_from_checkpoint`` names a folder that is not a checkpoint.
    """
    if not images:
        raise ValueError("no training images: LoRA fine-tuning needs at least one (image, caption) pair")
    checkpoint_root = Path(adapter_path) / CHECKPOINT_DIR
    if config.resume_from_checkpoint is None:
        # Checkpoints of an earlier run would be mistaken for this run's.
        shutil.rmtree(checkpoint_root, ignore_errors=True)
    resume_from = find_checkpoint(checkpoint_root, config.resume_from_checkpoint)
    with seeded_random_states(config.seed), torch_threads(config.cpu_threads):
        parts = load_diffusion_parts(model_path)
        # The LoRA's initial weights come from torch's global generator, seeded above.
        add_lora_adapter(parts.unet, config.lora_rank, config.lora_target_modules)
        for model in (parts.text_encoder, parts.vae, parts.unet):
            model.to(config.device)
        encoded = encode_examples(parts, images, config.batch_size)
        records = train_lora(
            parts, encoded, config, checkpoint_root if config.checkpoint_every else None, resume_from
        )
    save_lora_adapter(parts.unet, adapter_path)
    return records
