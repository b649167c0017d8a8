"""The LoRA recipe learns: on three small figures the tiny pipeline's loss falls and its images move
toward the training images.

The tiny pipeline's weights are random, so two choices keep the measure honest. Its decoder cannot draw
the training images at all (a decoded training latent is as far from its image as any output is), so
pixels are compared with the training images as the decoder renders them, ``decode(encode(image))``:
the best the pipeline can produce. And its base UNet is no denoiser, so the LoRA goes on the
convolutions and feed-forward layers as well as on the attention projections: steering a pretrained
UNet's attention, as diffusers' recipe does, cannot make a random one fit anything.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from diffusers import StableDiffusionPipeline
from PIL import Image, ImageDraw

from sciir.training.config import LoraTrainConfig
from sciir.training.loop import finetune_lora_adapter
from sciir.training.tiny_stable_diffusion import ensure_tiny_pipeline
from sciir.training.training_images import load_training_images

RESOLUTION = 32
SAMPLING_STEPS = 10
SEED = 7
# Everything a LoRA can go on in the tiny UNet's down, mid and up blocks.
ALL_LAYERS = (
    "to_q", "to_k", "to_v", "to_out.0", "proj_in", "proj_out", "ff.net.0.proj", "ff.net.2",
    "conv1", "conv2", "conv_in", "conv_out", "time_emb_proj",
)  # fmt: skip
FIGURES = [((230, 40, 40), "white"), ((40, 90, 230), "black"), ((30, 180, 60), "yellow")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The base folder, the training images, the adapter folder and the per-step losses."""
    root = tmp_path_factory.mktemp("learning")
    base = ensure_tiny_pipeline(root / "base", seed=0)
    rows = []
    for index, (background, square) in enumerate(FIGURES):
        image = Image.new("RGB", (RESOLUTION, RESOLUTION), background)
        ImageDraw.Draw(image).rectangle((8, 8, 23, 23), fill=square)
        image.save(root / f"f{index}.png")
        rows.append(
            {"sample_id": f"f{index}", "prompt": f"figure {index}", "image_path": str(root / f"f{index}.png")}
        )
    images, skipped = load_training_images(rows, [(RESOLUTION, RESOLUTION)])
    assert not skipped
    config = LoraTrainConfig(
        resolution=RESOLUTION,
        steps=100,
        batch_size=len(images),
        learning_rate=2e-2,
        lora_rank=4,
        lora_target_modules=ALL_LAYERS,
        seed=0,
    )
    records = finetune_lora_adapter(base, images, config, root / "lora")
    return base, images, root / "lora", [record.loss for record in records]


@pytest.mark.slow
def test_the_training_loss_falls_below_half(trained):
    losses = trained[3]
    # Measured: 0.995 over the first five steps, 0.228 over the last five (a factor 0.23).
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])


def _generated_latents(pipe: StableDiffusionPipeline, prompts: list[str]) -> torch.Tensor:
    latents = []
    for prompt in prompts:
        generator = torch.Generator().manual_seed(SEED)
        output = pipe(
            prompt,
            num_inference_steps=SAMPLING_STEPS,
            guidance_scale=1.0,
            height=RESOLUTION,
            width=RESOLUTION,
            generator=generator,
            output_type="latent",
        )
        latents.append(output.images[0])
    return torch.stack(latents)


def _decoded(pipe: StableDiffusionPipeline, scaled_latents: torch.Tensor) -> np.ndarray:
    """Images in [0, 1] as the pipeline decodes them."""
    with torch.no_grad():
        pixels = pipe.vae.decode(scaled_latents / pipe.vae.config.scaling_factor).sample
    return (pixels / 2 + 0.5).clamp(0, 1).numpy()


def _nearest_mse(outputs: np.ndarray, references: np.ndarray) -> float:
    """Mean over outputs of the mean squared error to the nearest reference."""
    errors = ((outputs[:, None] - references[None]) ** 2).mean(axis=tuple(range(2, outputs.ndim + 1)))
    return float(errors.min(axis=1).mean())


@pytest.mark.slow
def test_images_made_with_the_adapter_move_toward_the_training_images(trained):
    base_folder, images, adapter, _ = trained
    pipe = StableDiffusionPipeline.from_pretrained(base_folder, local_files_only=True)
    pipe.set_progress_bar_config(disable=True)
    prompts = [f"figure {index}" for index in range(len(images))]
    with torch.no_grad():
        pixels = torch.from_numpy(np.stack([image.pixels for image in images]))
        training_latents = pipe.vae.encode(pixels).latent_dist.mean * pipe.vae.config.scaling_factor
    as_rendered = _decoded(pipe, training_latents)

    base_latents = _generated_latents(pipe, prompts)
    pipe.load_lora_weights(adapter)
    tuned_latents = _generated_latents(pipe, prompts)

    # Measured: 0.042 -> 0.030 (a factor 0.72) to the nearest training image as the decoder renders it.
    base_error = _nearest_mse(_decoded(pipe, base_latents), as_rendered)
    tuned_error = _nearest_mse(_decoded(pipe, tuned_latents), as_rendered)
    assert tuned_error < 0.85 * base_error
    # Measured: 76 -> 2.9 in latent space (the base's sampling drifts far from the data).
    base_latent_error = _nearest_mse(base_latents.numpy(), training_latents.numpy())
    tuned_latent_error = _nearest_mse(tuned_latents.numpy(), training_latents.numpy())
    assert tuned_latent_error < 0.1 * base_latent_error
