"""The flow-matching LoRA recipe on a tiny Qwen-Image pipeline: the objective's arithmetic, learning on a
few figures, and the adapter reloading through the pipeline's own ``load_lora_weights``.

The tiny transformer's weights are random, so, as in tests/training/test_lora_learning.py, the LoRA goes on the
feed-forward and output layers as well as on the attention projections: steering a random model's
attention alone fits little.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from diffusers import QwenImagePipeline
from peft.utils import get_peft_model_state_dict
from PIL import Image, ImageDraw
from safetensors.torch import load_file

from sciir.training.config import LoraTrainConfig
from sciir.training.flow_matching import (
    encode_flow_examples,
    encode_qwen_image_captions,
    flow_matching_loss_at,
    loss_weights,
    noisy_latents,
    pack_latents,
    pick_training_sigmas,
    sample_density,
    velocity_target,
    weighted_flow_loss,
)
from sciir.training.loop import finetune_lora_adapter
from sciir.training.lora_adapter import ADAPTER_FILE
from sciir.training.tiny_qwen_image import ensure_tiny_flow_pipeline, is_tiny_flow_pipeline
from sciir.training.training_images import TrainingImage

RESOLUTION = 32
SEED = 7
SAMPLING_STEPS = 10
FIGURES = [((230, 40, 40), "white"), ((40, 90, 230), "black"), ((30, 180, 60), "yellow")]
CAPTIONS = [f"figure {index}" for index in range(len(FIGURES))]
ALL_LAYERS = (
    "to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out",
    "img_mlp.net.0.proj", "img_mlp.net.2", "proj_out",
)  # fmt: skip
# Fixed evaluation draws: the same noise at the same sigmas before and after training.
EVALUATION_SIGMAS = (0.1, 0.3, 0.5, 0.7, 0.9)


@pytest.fixture(autouse=True)
def _two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


# --- the objective, on hand-made tensors -------------------------------------------------------------


def test_the_noisy_input_runs_from_the_data_at_sigma_0_to_the_noise_at_sigma_1():
    latents, noise = torch.full((3, 1, 2, 2), 2.0), torch.full((3, 1, 2, 2), -1.0)
    noisy = noisy_latents(latents, noise, torch.tensor([0.0, 0.25, 1.0]))
    # Per sample: (1 - s) * 2 + s * (-1) = 2, 1.25, -1.
    assert torch.allclose(noisy[0], latents[0])
    assert torch.allclose(noisy[1], torch.full((1, 2, 2), 1.25))
    assert torch.allclose(noisy[2], noise[2])


def test_the_target_is_the_velocity_along_the_path_from_data_to_noise():
    generator = torch.Generator().manual_seed(0)
    latents, noise = (
        torch.randn(2, 4, 4, 4, generator=generator),
        torch.randn(2, 4, 4, 4, generator=generator),
    )
    sigma = torch.tensor([0.3, 0.6], requires_grad=True)
    noisy = noisy_latents(latents, noise, sigma)
    # d(noisy)/d(sigma), per sample, through autograd: a sign error or swapped terms changes it.
    (derivative,) = torch.autograd.grad(noisy.sum(), sigma)
    target = velocity_target(latents, noise)
    assert torch.allclose(derivative, target.sum(dim=(1, 2, 3)), atol=1e-5)
    assert torch.allclose(target, noise - latents)
    # One Euler step of the exact velocity from sigma back to 0 recovers the data.
    recovered = noisy.detach() - sigma.detach().reshape(-1, 1, 1, 1) * target
    assert torch.allclose(recovered, latents, atol=1e-5)


def test_the_loss_weights_each_samples_mean_squared_error():
    prediction = torch.zeros(2, 2, 2)
    target = torch.stack([torch.ones(2, 2), torch.full((2, 2), 2.0)])
    # Per-sample MSEs 1 and 4, weighted 1 and 0.5: mean of 1 and 2.
    assert weighted_flow_loss(prediction, target, torch.tensor([1.0, 0.5])).item() == pytest.approx(1.5)


def test_the_weighting_schemes():
    sigmas = torch.tensor([0.5, 0.25])
    assert torch.equal(loss_weights(sigmas, "none"), torch.ones(2))
    assert torch.allclose(loss_weights(sigmas, "sigma_sqrt"), torch.tensor([4.0, 16.0]))
    assert loss_weights(sigmas, "cosmap")[0].item() == pytest.approx(4 / math.pi)
    with pytest.raises(ValueError, match="weighting"):
        loss_weights(sigmas, "snr")


def test_sigmas_are_drawn_from_the_density_over_the_training_sigmas():
    generator = torch.Generator().manual_seed(0)
    logit_normal = sample_density(4000, "logit_normal", 0.0, 1.0, generator)
    uniform = sample_density(4000, "uniform", 0.0, 1.0, generator)
    assert 0 < logit_normal.min() and logit_normal.max() < 1 and 0 <= uniform.min() and uniform.max() < 1
    # The logit-normal gathers around the middle; the uniform does not.
    middle = lambda points: ((points > 0.25) & (points < 0.75)).float().mean().item()  # noqa: E731
    assert middle(logit_normal) > 0.6 and middle(uniform) == pytest.approx(0.5, abs=0.05)
    training = torch.linspace(1.0, 0.001, 1000)
    picked = pick_training_sigmas(torch.tensor([0.0, 0.5, 0.9999]), training)
    assert torch.equal(picked, training[[0, 500, 999]])
    with pytest.raises(ValueError, match="density"):
        sample_density(2, "mode", 0.0, 1.0, generator)


def test_packing_matches_the_pipelines_layout():
    latents = torch.randn(2, 4, 6, 8, generator=torch.Generator().manual_seed(0))
    packed = pack_latents(latents)
    assert torch.equal(packed, QwenImagePipeline._pack_latents(latents, 2, 4, 6, 8))
    # The pipeline unpacks with its VAE factor (image side = latent side * factor).
    unpacked = QwenImagePipeline._unpack_latents(packed, 6 * 2, 8 * 2, 2)
    assert torch.equal(unpacked[:, :, 0], latents)


# --- training the tiny pipeline ----------------------------------------------------------------------


def _figures() -> np.ndarray:
    pixels = []
    for background, square in FIGURES:
        image = Image.new("RGB", (RESOLUTION, RESOLUTION), background)
        ImageDraw.Draw(image).rectangle((8, 8, 23, 23), fill=square)
        pixels.append((np.asarray(image, dtype=np.float32) / 127.5 - 1.0).transpose(2, 0, 1))
    return np.stack(pixels)


def _training_images(pixels: np.ndarray) -> list[TrainingImage]:
    return [
        TrainingImage(f"f{i}", caption, image)
        for i, (caption, image) in enumerate(zip(CAPTIONS, pixels, strict=True))
    ]


def _adapter_layers(folder) -> dict[str, torch.Tensor]:
    """The saved adapter's tensors under peft's key names (the file prefixes them with the model)."""
    return {k.removeprefix("transformer."): v for k, v in load_file(folder / ADAPTER_FILE).items()}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The base folder, the training pixels, the adapter folder, the config and the per-step losses."""
    root = tmp_path_factory.mktemp("flow")
    base = ensure_tiny_flow_pipeline(root / "base", seed=0)
    pixels = _figures()
    config = LoraTrainConfig(
        family="flow_matching",
        resolution=RESOLUTION,
        steps=100,
        batch_size=len(FIGURES),
        learning_rate=2e-2,
        lora_rank=4,
        # Not the rank: a reload that dropped alpha would scale the LoRA by 1 instead of 2.
        lora_alpha=8,
        lora_target_modules=ALL_LAYERS,
        seed=0,
        cpu_threads=2,
    )
    records = finetune_lora_adapter(base, _training_images(pixels), config, root / "lora")
    return base, pixels, root / "lora", config, [record.loss for record in records]


def _pipeline(folder) -> QwenImagePipeline:
    pipe = QwenImagePipeline.from_pretrained(folder, local_files_only=True)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def _evaluation_loss(pipe: QwenImagePipeline, pixels: np.ndarray) -> float:
    """The flow-matching loss over all images at fixed sigmas with fixed noise."""
    examples = encode_flow_examples(pipe, pixels, CAPTIONS)
    indices = torch.arange(len(examples))
    generator = torch.Generator().manual_seed(SEED)
    losses = []
    with torch.no_grad():
        for sigma in EVALUATION_SIGMAS:
            noise = torch.randn(examples.latents.shape, generator=generator)
            sigmas = torch.full((len(examples),), sigma)
            losses.append(flow_matching_loss_at(pipe.transformer, examples, indices, noise, sigmas, "none"))
    return float(torch.stack(losses).mean())


@pytest.mark.slow
def test_the_tiny_pipeline_is_saved_once_and_reloads(trained):
    base = trained[0]
    assert is_tiny_flow_pipeline(base, seed=0) and not is_tiny_flow_pipeline(base, seed=1)
    pipe = _pipeline(base)
    assert type(pipe.transformer).__name__ == "QwenImageTransformer2DModel"
    assert type(pipe.text_encoder).__name__ == "Qwen2_5_VLForConditionalGeneration"
    # The prompt template's chat markers stay one token each, as in the real tokenizer.
    tokens = pipe.tokenizer.tokenize("<|im_start|>user\nhi<|im_end|>")
    assert tokens[0] == "<|im_start|>" and tokens[-1] == "<|im_end|>" and len(tokens) == 9


@pytest.mark.slow
def test_a_seed_gives_the_same_adapter_and_leaves_the_callers_random_state(trained, tmp_path):
    base, pixels, _, config, _ = trained
    short = config.model_copy(update={"steps": 3})
    images = _training_images(pixels)
    state = torch.random.get_rng_state()
    first = finetune_lora_adapter(base, images, short, tmp_path / "first")
    assert torch.equal(torch.random.get_rng_state(), state)
    again = finetune_lora_adapter(base, images, short, tmp_path / "again")
    finetune_lora_adapter(base, images, short.model_copy(update={"seed": 1}), tmp_path / "other")
    assert [r.loss for r in first] == [r.loss for r in again]
    assert (tmp_path / "first" / ADAPTER_FILE).read_bytes() == (
        tmp_path / "again" / ADAPTER_FILE
    ).read_bytes()
    first_layers, other_layers = _adapter_layers(tmp_path / "first"), _adapter_layers(tmp_path / "other")
    assert any(not torch.equal(first_layers[name], other_layers[name]) for name in first_layers)


@pytest.mark.slow
def test_images_and_captions_must_pair_up(trained):
    base, pixels, _, _, _ = trained
    with pytest.raises(ValueError, match="3 images but 2 captions"):
        encode_flow_examples(_pipeline(base), pixels, CAPTIONS[:2])


@pytest.mark.slow
def test_captions_encoded_in_chunks_are_padded_as_one_batch_is(trained):
    pipe = _pipeline(trained[0])
    captions = ["a", "a figure with a much longer caption than the others", "mid size", "b"]
    whole, whole_mask = encode_qwen_image_captions(pipe, captions, chunk_size=len(captions))
    chunked, chunked_mask = encode_qwen_image_captions(pipe, captions, chunk_size=2)
    assert whole_mask is not None and torch.equal(chunked_mask, whole_mask)
    assert chunked.shape == whole.shape and torch.allclose(chunked, whole, atol=1e-5)
    # Captions of one length leave nothing padded: no mask, as the pipeline does.
    assert encode_qwen_image_captions(pipe, ["ab", "cd", "ef"], chunk_size=2)[1] is None


@pytest.mark.slow
def test_the_training_loss_falls(trained):
    losses = trained[4]
    # Measured: 0.915 over the first ten steps, 0.308 over the last ten (a factor 0.34).
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:10])


@pytest.mark.slow
def test_the_adapter_lowers_the_loss_on_fixed_draws(trained):
    base, pixels, adapter, _, _ = trained
    pipe = _pipeline(base)
    before = _evaluation_loss(pipe, pixels)
    pipe.load_lora_weights(adapter)
    after = _evaluation_loss(pipe, pixels)
    # Measured: 1.343 -> 0.349 (a factor 0.26).
    assert after < 0.5 * before


@pytest.mark.slow
def test_the_adapter_reloads_every_tensor_and_its_alpha(trained):
    base, _, adapter, config, _ = trained
    saved = _adapter_layers(adapter)
    pipe = _pipeline(base)
    pipe.load_lora_weights(adapter, adapter_name="tuned")
    reloaded = get_peft_model_state_dict(pipe.transformer, adapter_name="tuned")
    assert reloaded.keys() == saved.keys()
    for name, tensor in saved.items():
        assert torch.equal(reloaded[name], tensor), name
    assert pipe.transformer.peft_config["tuned"].lora_alpha == config.lora_alpha


def _generated_latents(pipe: QwenImagePipeline) -> torch.Tensor:
    """Packed latents the pipeline draws for each caption, every one from the same seed."""
    drawn = []
    for caption in CAPTIONS:
        output = pipe(
            caption,
            height=RESOLUTION,
            width=RESOLUTION,
            num_inference_steps=SAMPLING_STEPS,
            true_cfg_scale=1.0,  # no negative prompt: guidance off, said explicitly
            generator=torch.Generator().manual_seed(SEED),
            output_type="latent",
        )
        drawn.append(output.images)
    return torch.cat(drawn)


def _nearest_mse(drawn: torch.Tensor, references: torch.Tensor) -> float:
    """Mean over the drawn latents of the mean squared error to the nearest reference."""
    errors = ((drawn[:, None] - references[None]) ** 2).mean(dim=(2, 3))
    return float(errors.min(dim=1).values.mean())


@pytest.mark.slow
def test_the_adapter_moves_what_the_pipeline_draws_toward_the_training_images(trained):
    base, pixels, adapter, _, _ = trained
    pipe = _pipeline(base)
    training_latents = pack_latents(encode_flow_examples(pipe, pixels, CAPTIONS).latents)
    plain = _generated_latents(pipe)
    pipe.load_lora_weights(adapter)
    tuned = _generated_latents(pipe)
    # Measured: the drawn latents change by 0.8 of their mean magnitude.
    assert (tuned - plain).abs().mean() > 0.2 * plain.abs().mean()
    # Measured: 1.31 -> 0.20 to the nearest training latent (a factor 0.16).
    assert _nearest_mse(tuned, training_latents) < 0.5 * _nearest_mse(plain, training_latents)
