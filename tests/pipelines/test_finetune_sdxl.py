"""SDXL-class training (the noise-prediction family with two text encoders): through the finetune node on a
tiny SDXL pipeline saved locally, the loss falls, the adapter reloads into StableDiffusionXLPipeline and the
diffusers generator draws with it, the encoding cache keeps the pooled captions and size ids, and each
aspect bucket is conditioned on its own size."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from diffusers import StableDiffusionXLPipeline
from peft.utils import get_peft_model_state_dict
from PIL import Image, ImageDraw
from safetensors.torch import load_file

from sciir.backends.base import GenerationRequest
from sciir.backends.diffusers_gen import DiffusersGenerator
from sciir.encoding_cache import INDEX_FILE
from sciir.noise_prediction import load_recipe
from sciir.pipelines.finetune.nodes import finetune_lora, prepare_base_model
from sciir.tiny_models import ensure_tiny_sdxl_pipeline
from sciir.training import ADAPTER_FILE, LoraTrainConfig, encode_by_size, load_training_images

SIDE = 64
COLOURS = [((230, 40, 40), "white"), ((40, 90, 230), "black"), ((30, 180, 60), "yellow")]
# Attention, convolution and projection layers of the UNet: its weights are random, so steering its
# attention alone fits little.
ALL_LAYERS = ["to_q", "to_k", "to_v", "to_out.0", "proj_in", "proj_out", "conv1", "conv2", "conv_out"]


@pytest.fixture(scope="module")
def sdxl_base(tmp_path_factory) -> str:
    return str(ensure_tiny_sdxl_pipeline(tmp_path_factory.mktemp("sdxl") / "base", seed=0))


def _split(folder: Path, sizes: list[tuple[int, int]]) -> pd.DataFrame:
    rows = []
    for index, size in enumerate(sizes):
        background, square = COLOURS[index % len(COLOURS)]
        image = Image.new("RGB", size, background)
        ImageDraw.Draw(image).rectangle((size[0] // 4, size[1] // 4, size[0] // 2, size[1] // 2), fill=square)
        image.save(folder / f"f{index}.png")
        rows.append({"sample_id": f"f{index}", "prompt": f"figure {index}", "image_path": str(folder / f"f{index}.png")})
    return pd.DataFrame(rows)


@pytest.fixture
def params(finetune_defaults, sdxl_base, tmp_path) -> dict:
    """The project's finetune parameters on the tiny SDXL folder, with every path under tmp_path."""
    paths = {"adapter_path": str(tmp_path / "lora"), "encoding_cache": str(tmp_path / "cache")}
    run = {"resolution": SIDE, "steps": 4, "batch_size": 3, "learning_rate": 2e-2}
    return finetune_defaults | {"family": None, "base_model": sdxl_base} | paths | run


def _losses(history: dict) -> list[float]:
    return [point["value"] for point in history["train_loss"]]


def test_the_node_trains_sdxl_and_the_adapter_reloads_and_draws(params, tmp_path):
    split = _split(tmp_path, [(SIDE, SIDE)] * 3)
    params = params | {"steps": 40, "lora_target_modules": ALL_LAYERS, "lora_alpha": 8}
    base = prepare_base_model(params)
    summary, history, _ = finetune_lora(split, base, params)
    assert summary["family"] == "noise_prediction" and summary["n_train"] == 3
    losses = _losses(history)
    # Measured: 0.823 over the first ten steps, 0.406 over the last ten (a factor 0.49).
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:10])

    saved = {k.removeprefix("unet."): v for k, v in load_file(tmp_path / "lora" / ADAPTER_FILE).items()}
    pipe = StableDiffusionXLPipeline.from_pretrained(base, local_files_only=True)
    pipe.load_lora_weights(tmp_path / "lora", adapter_name="tuned")
    reloaded = get_peft_model_state_dict(pipe.unet, adapter_name="tuned")
    assert reloaded.keys() == saved.keys() and all(torch.equal(reloaded[k], saved[k]) for k in saved)
    assert pipe.unet.peft_config["tuned"].lora_alpha == 8

    def draw(lora: Path | None) -> np.ndarray:
        generator = DiffusersGenerator(pipeline_path=base, lora_path=lora and str(lora), steps=4, resolution=SIDE)
        (result,) = generator.generate([GenerationRequest(sample_id="f0", prompt="figure 0", seed=3, width=SIDE, height=SIDE)])
        assert result.ok, result.failure
        return np.asarray(Image.open(io.BytesIO(result.image)), dtype=np.float32)

    plain, tuned = draw(None), draw(tmp_path / "lora")
    # The adapter changes what is drawn (measured: 36 of 255 per channel on average).
    assert np.abs(tuned - plain).mean() > 5.0


def test_the_cache_keeps_the_pooled_captions_and_size_ids_and_trains_the_same_adapter(
    params, sdxl_base, tmp_path
):
    split = _split(tmp_path, [(SIDE, SIDE)] * 3)
    finetune_lora(split, sdxl_base, params)
    (entry,) = (tmp_path / "cache").iterdir()
    (bucket,) = json.loads((entry / INDEX_FILE).read_text())["buckets"]
    assert bucket["fields"] == ["caption_states", "latent_mean", "latent_std", "pooled_captions", "size_ids"]
    first = (tmp_path / "lora" / ADAPTER_FILE).read_bytes()
    finetune_lora(split, sdxl_base, params)
    assert (tmp_path / "lora" / ADAPTER_FILE).read_bytes() == first
    finetune_lora(split, sdxl_base, params | {"encoding_cache": None, "adapter_path": str(tmp_path / "plain")})
    assert (tmp_path / "plain" / ADAPTER_FILE).read_bytes() == first


def test_each_bucket_is_conditioned_on_its_own_size(sdxl_base, tmp_path):
    split = _split(tmp_path, [(SIDE, SIDE), (2 * SIDE, SIDE), (SIDE, SIDE)])
    config = LoraTrainConfig(
        resolution=SIDE, aspect_buckets=[(SIDE, SIDE), (2 * SIDE, SIDE)], steps=1, batch_size=1,
        learning_rate=1e-3, lora_rank=2, seed=0,
    )  # fmt: skip
    images, _ = load_training_images(split.to_dict("records"), config.training_sizes)
    recipe = load_recipe(sdxl_base, config)
    square, wide = encode_by_size(recipe, images, 8).buckets
    assert square.size_ids.tolist() == [[SIDE, SIDE, 0, 0, SIDE, SIDE]] * 2
    assert wide.size_ids.tolist() == [[SIDE, 2 * SIDE, 0, 0, SIDE, 2 * SIDE]]
    # The caption states are both encoders' (32 + 32 wide), the pooled caption the second's projection.
    assert square.caption_states.shape[-1] == 64 and square.pooled_captions.shape == (2, 32)
