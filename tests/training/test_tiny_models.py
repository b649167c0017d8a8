"""The tiny Stable-Diffusion-style pipeline: built locally, saved, loaded and run offline."""

from __future__ import annotations

import json

import pytest
import torch
from diffusers import StableDiffusionPipeline
from transformers import CLIPTokenizer

from sciir.training.tiny_stable_diffusion import (
    MARKER_FILE,
    build_tiny_pipeline,
    clip_tokenizer_vocab,
    ensure_tiny_pipeline,
    is_tiny_pipeline,
)


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return ensure_tiny_pipeline(tmp_path_factory.mktemp("tiny") / "base", seed=0)


def test_saved_pipeline_loads_offline_and_makes_an_image_of_the_right_size(tiny_folder):
    pipe = StableDiffusionPipeline.from_pretrained(tiny_folder, local_files_only=True)
    pipe.set_progress_bar_config(disable=True)
    generator = torch.Generator().manual_seed(0)
    image = pipe("a cell membrane", num_inference_steps=2, guidance_scale=1.0, generator=generator).images[0]
    assert image.size == (64, 64)  # the native size: 32 latent pixels, doubled by the VAE
    small = pipe("a cell membrane", num_inference_steps=2, height=32, width=32, generator=generator).images[0]
    assert small.size == (32, 32)


def test_tokenizer_is_built_locally_and_encodes_any_text(tiny_folder):
    saved = sorted(p.name for p in (tiny_folder / "tokenizer").iterdir())
    assert "tokenizer.json" in saved
    tokenizer = CLIPTokenizer.from_pretrained(tiny_folder, subfolder="tokenizer", local_files_only=True)
    assert len(tokenizer) == len(clip_tokenizer_vocab()) == 2 * 256 + 2
    ids = tokenizer("Na⁺/K⁺ pump → ATP").input_ids
    assert ids[0] == tokenizer.bos_token_id and ids[-1] == tokenizer.eos_token_id
    assert tokenizer.unk_token_id not in ids[1:-1]  # every byte has a token: nothing is unknown
    assert tokenizer.decode(ids, skip_special_tokens=True).replace(" ", "") == "na⁺/k⁺pump→atp"
    long = tokenizer("word " * 200, truncation=True, max_length=tokenizer.model_max_length).input_ids
    assert len(long) == 77


def test_weights_depend_only_on_the_seed():
    first, again, other = build_tiny_pipeline(1), build_tiny_pipeline(1), build_tiny_pipeline(2)
    weight = "conv_in.weight"
    assert torch.equal(first.unet.state_dict()[weight], again.unet.state_dict()[weight])
    assert not torch.equal(first.unet.state_dict()[weight], other.unet.state_dict()[weight])


def test_ensure_rebuilds_only_for_another_seed_or_an_incomplete_folder(tiny_folder):
    weights = tiny_folder / "unet" / "diffusion_pytorch_model.safetensors"
    before = weights.stat().st_mtime_ns
    ensure_tiny_pipeline(tiny_folder, seed=0)
    assert weights.stat().st_mtime_ns == before
    assert not is_tiny_pipeline(tiny_folder, seed=3)

    other = ensure_tiny_pipeline(tiny_folder.parent / "other", seed=3)
    assert json.loads((other / MARKER_FILE).read_text())["seed"] == 3
    (other / MARKER_FILE).unlink()  # as after an interrupted save
    assert not is_tiny_pipeline(other, seed=3)
    ensure_tiny_pipeline(other, seed=3)
    assert is_tiny_pipeline(other, seed=3)


def test_latents_of_figures_are_about_unit_variance_and_barely_random(tiny_folder):
    """As a trained VAE's: the scaled latent means have a variance near 1 and the posterior is narrow,
    so training on sampled latents trains on the images and not on the encoder's noise."""
    pipe = StableDiffusionPipeline.from_pretrained(tiny_folder, local_files_only=True)
    figures = torch.zeros(2, 3, 64, 64)
    figures[0, 0] = 1.0  # a red square on black
    figures[1, :, 16:48, 16:48] = -1.0  # a dark square on grey
    with torch.no_grad():
        posterior = pipe.vae.encode(figures).latent_dist
    scaled = posterior.mean * pipe.vae.config.scaling_factor
    assert 0.5 < float(scaled.std()) < 2.0
    # A random encoder's posterior std is 1, four times the spread of its means.
    assert float(posterior.std.max()) < 0.05 * float(posterior.mean.std())
