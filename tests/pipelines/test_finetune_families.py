"""The finetune node with either LoRA family: the flow-matching family (a tiny Qwen-Image pipeline) learns,
reloads and resumes exactly through ``finetune_lora``; the encoding cache is read by a second run and
changes nothing; the family, the optimiser and the memory options are checked or refused clearly.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from diffusers import AutoencoderKL, AutoencoderKLQwenImage, QwenImagePipeline
from peft.utils import get_peft_model_state_dict
from PIL import Image, ImageColor
from safetensors.torch import load_file
from transformers import CLIPTextModel, Qwen2_5_VLForConditionalGeneration

from sciir.pipelines.finetune.nodes import finetune_lora, prepare_base_model
from sciir.training.checkpoints import CHECKPOINT_PREFIX
from sciir.training.config import LoraTrainConfig
from sciir.training.encoding_cache import INDEX_FILE
from sciir.training.flow_matching import load_recipe
from sciir.training.loop import CHECKPOINT_DIR, train_lora
from sciir.training.lora_adapter import ADAPTER_FILE
from sciir.training.tiny_qwen_image import MARKER_FILE as FLOW_MARKER
from sciir.training.tiny_stable_diffusion import MARKER_FILE as NOISE_MARKER
from sciir.training.training_images import TrainingImage

REPO = Path(__file__).resolve().parents[2]
RESOLUTION = 32
FIGURES = [((230, 40, 40), "white"), ((40, 90, 230), "black"), ((30, 180, 60), "yellow")]
# Attention, feed-forward and output layers: the tiny transformer's weights are random, and steering its
# attention alone fits little (tests/training/test_flow_matching.py).
FLOW_LAYERS = [
    "to_q", "to_k", "to_v", "to_out.0", "add_q_proj", "add_k_proj", "add_v_proj", "to_add_out",
    "img_mlp.net.0.proj", "img_mlp.net.2", "proj_out",
]  # fmt: skip
# Each family's VAE and text encoder classes: what the cache spares.
ENCODERS = {
    "flow_matching": (AutoencoderKLQwenImage, Qwen2_5_VLForConditionalGeneration),
    "noise_prediction": (AutoencoderKL, CLIPTextModel),
}


@pytest.fixture(scope="module")
def train_split(tmp_path_factory) -> pd.DataFrame:
    """Three figures: a coloured square on another colour, one caption each."""
    folder = tmp_path_factory.mktemp("figures")
    paths = []
    for index, (background, square) in enumerate(FIGURES):
        pixels = np.empty((RESOLUTION, RESOLUTION, 3), dtype=np.uint8)
        pixels[:] = background
        pixels[8:24, 8:24] = ImageColor.getrgb(square)
        paths.append(folder / f"f{index}.png")
        Image.fromarray(pixels).save(paths[-1])
    ids = [f"f{index}" for index in range(len(FIGURES))]
    prompts = [f"figure {index}" for index in range(len(FIGURES))]
    return pd.DataFrame({"sample_id": ids, "prompt": prompts, "image_path": [str(p) for p in paths]})


@pytest.fixture(scope="module")
def flow_base(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("flow") / "tiny_base"
    return prepare_base_model(_params(folder.parent, tiny_model_path=str(folder)))


def _params(root: Path, **changes) -> dict:
    """The project's finetune parameters on the flow family, with every path under ``root``."""
    base = yaml.safe_load((REPO / "conf" / "base" / "parameters_finetune.yml").read_text())["finetune"]
    return (
        base
        | {
            "family": "flow_matching",
            "tiny_model_path": str(root / "tiny_base"),
            "adapter_path": str(root / "lora"),
            "encoding_cache": str(root / "cache"),
            "resolution": RESOLUTION,
            "steps": 4,
            "batch_size": 3,
            "learning_rate": 2e-2,
            "cpu_threads": 2,
        }
        | changes
    )


def _losses(history: dict) -> list[float]:
    return [point["value"] for point in history["train_loss"]]


@pytest.mark.slow
def test_the_flow_family_learns_through_the_node_and_reloads(flow_base, train_split, tmp_path):
    params = _params(tmp_path, steps=40, lora_target_modules=FLOW_LAYERS, lora_alpha=8)
    summary, history, _ = finetune_lora(train_split, flow_base, params)
    assert summary["family"] == "flow_matching" and summary["n_train"] == 3
    losses = _losses(history)
    # Measured: 0.915 over the first ten steps, 0.455 over the last ten (a factor 0.50).
    assert np.mean(losses[-10:]) < 0.6 * np.mean(losses[:10])

    saved = {
        k.removeprefix("transformer."): v for k, v in load_file(tmp_path / "lora" / ADAPTER_FILE).items()
    }
    pipe = QwenImagePipeline.from_pretrained(flow_base, local_files_only=True)
    pipe.set_progress_bar_config(disable=True)

    def draw() -> torch.Tensor:
        generator = torch.Generator().manual_seed(7)
        return pipe("figure 0", height=RESOLUTION, width=RESOLUTION, num_inference_steps=4,
                    true_cfg_scale=1.0, generator=generator, output_type="latent").images  # fmt: skip

    plain = draw()
    pipe.load_lora_weights(tmp_path / "lora", adapter_name="tuned")
    reloaded = get_peft_model_state_dict(pipe.transformer, adapter_name="tuned")
    assert reloaded.keys() == saved.keys() and all(torch.equal(reloaded[k], saved[k]) for k in saved)
    assert pipe.transformer.peft_config["tuned"].lora_alpha == 8
    assert (draw() - plain).abs().mean() > 0.1 * plain.abs().mean()


@pytest.mark.slow
def test_a_resumed_flow_run_reaches_the_adapter_bytes_of_an_uninterrupted_one(
    flow_base, train_split, tmp_path, encoder_calls
):
    # Warmup and decay, so a scheduler state lost on resume would show in the weights.
    schedule = {"steps": 6, "lr_scheduler": "cosine", "lr_warmup_steps": 2}
    _, full, _ = finetune_lora(train_split, flow_base, _params(tmp_path / "full", **schedule))

    checkpointed = _params(tmp_path / "cut", **schedule, checkpoint_every=2, checkpoints_total_limit=2)
    finetune_lora(train_split, flow_base, checkpointed)
    checkpoints = tmp_path / "cut" / "lora" / CHECKPOINT_DIR
    assert sorted(p.name for p in checkpoints.iterdir()) == [f"{CHECKPOINT_PREFIX}4", f"{CHECKPOINT_PREFIX}6"]
    # As if the run had stopped during step 5: only the checkpoint of step 4 is left.
    shutil.rmtree(checkpoints / f"{CHECKPOINT_PREFIX}6")
    (tmp_path / "cut" / "lora" / ADAPTER_FILE).unlink()
    encoder_calls.clear()
    _, resumed, _ = finetune_lora(train_split, flow_base, checkpointed | {"resume_from_checkpoint": "latest"})
    assert not encoder_calls  # the resumed run reads the encodings the interrupted one cached

    adapter = lambda root: (root / "lora" / ADAPTER_FILE).read_bytes()  # noqa: E731
    assert adapter(tmp_path / "cut") == adapter(tmp_path / "full")
    assert _losses(resumed) == _losses(full)
    assert len({point["value"] for point in resumed["learning_rate"]}) > 2


@pytest.fixture
def encoder_calls(monkeypatch) -> dict[str, int]:
    """How often each family's VAE encoder and text encoder run."""
    calls: dict[str, int] = {}
    for vae_class, text_class in ENCODERS.values():
        for cls, method in ((vae_class, "encode"), (text_class, "forward")):
            original = getattr(cls, method)
            key = f"{cls.__name__}.{method}"

            def counted(self, *args, _original=original, _key=key, **kwargs):
                calls[_key] = calls.get(_key, 0) + 1
                return _original(self, *args, **kwargs)

            monkeypatch.setattr(cls, method, counted)
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("family", ["flow_matching", "noise_prediction"])
def test_a_second_run_reads_the_cache_and_trains_the_same_adapter(
    family, train_split, tmp_path, encoder_calls
):
    params = _params(tmp_path, family=family, cache_shard_size=2, steps=2)
    base = prepare_base_model(params)
    vae_class, text_class = ENCODERS[family]
    encoders = {f"{vae_class.__name__}.encode", f"{text_class.__name__}.forward"}

    finetune_lora(train_split, base, params)
    assert encoders <= encoder_calls.keys()  # the first run encodes
    (entry,) = (tmp_path / "cache").iterdir()
    index = json.loads((entry / INDEX_FILE).read_text())
    (bucket,) = index["buckets"]  # square images: one bucket
    assert bucket["count"] == 3
    assert bucket["shards"] == ["bucket-00-shard-00000.safetensors", "bucket-00-shard-00001.safetensors"]
    first = (tmp_path / "lora" / ADAPTER_FILE).read_bytes()

    encoder_calls.clear()
    finetune_lora(train_split, base, params)
    assert not encoder_calls  # the second reads the cache: neither encoder runs
    assert (tmp_path / "lora" / ADAPTER_FILE).read_bytes() == first

    finetune_lora(
        train_split, base, params | {"encoding_cache": None, "adapter_path": str(tmp_path / "plain")}
    )
    assert encoders <= encoder_calls.keys()
    assert (tmp_path / "plain" / ADAPTER_FILE).read_bytes() == first

    # Another caption is another cache entry, never a stale read.
    changed = train_split.assign(prompt=train_split["prompt"].str.upper())
    finetune_lora(changed, base, params)
    assert len(list((tmp_path / "cache").iterdir())) == 2


@pytest.mark.slow
def test_gradient_checkpointing_and_bf16_train_the_transformer(flow_base, train_split, tmp_path):
    images = [
        TrainingImage(row.sample_id, row.prompt, np.asarray(Image.open(row.image_path), dtype=np.float32).transpose(2, 0, 1) / 127.5 - 1)
        for row in train_split.itertuples()
    ]  # fmt: skip
    config = LoraTrainConfig(family="flow_matching", resolution=RESOLUTION, steps=3, batch_size=3,
                             learning_rate=2e-2, lora_rank=4, seed=0)  # fmt: skip

    def losses(**changes) -> tuple[list[float], torch.nn.Module]:
        run = config.model_copy(update=changes)
        torch.manual_seed(0)
        recipe = load_recipe(flow_base, run)
        records = train_lora(recipe, recipe.encode(images, 8), run, checkpoint_root=None)
        return [record.loss for record in records], recipe.denoiser

    plain, _ = losses()
    checkpointed, transformer = losses(gradient_checkpointing=True)
    assert transformer.is_gradient_checkpointing
    # Recomputing activations changes the memory used, not the arithmetic.
    assert checkpointed == pytest.approx(plain, rel=1e-5)
    bf16, transformer = losses(mixed_precision="bf16")
    assert all(np.isfinite(bf16)) and bf16 != plain and bf16 == pytest.approx(plain, rel=0.1)
    # The trained weights stay float32; only the forward pass ran in bfloat16.
    assert {p.dtype for p in transformer.parameters() if p.requires_grad} == {torch.float32}


def test_adamw8bit_without_bitsandbytes_is_refused_before_training(
    flow_base, train_split, tmp_path, monkeypatch
):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "bitsandbytes" else real_find_spec(name, *a),
    )
    with pytest.raises(ImportError, match="adamw8bit.*bitsandbytes package, which is not installed"):
        finetune_lora(train_split, flow_base, _params(tmp_path, optimizer="adamw8bit"))
    assert not (tmp_path / "lora").exists()


def test_the_family_picks_the_tiny_pipeline_and_must_match_a_folders_class(tmp_path):
    folder = tmp_path / "tiny_base"
    prepare_base_model(_params(tmp_path, family="noise_prediction"))
    assert (folder / NOISE_MARKER).is_file()
    # The same folder switched to the other family is rebuilt, not mixed.
    prepare_base_model(_params(tmp_path, family="flow_matching"))
    assert (folder / FLOW_MARKER).is_file() and not (folder / NOISE_MARKER).exists()
    assert not (folder / "unet").exists()

    with pytest.raises(ValueError, match="family is 'noise_prediction' but .* QwenImagePipeline"):
        prepare_base_model(_params(tmp_path, base_model=str(folder), family="noise_prediction"))
    assert prepare_base_model(_params(tmp_path, base_model=str(folder), family=None)) == str(folder)

    other = tmp_path / "other"
    other.mkdir()
    (other / "model_index.json").write_text(json.dumps({"_class_name": "KandinskyPipeline"}))
    with pytest.raises(
        ValueError, match="KandinskyPipeline is of no known family; supported: .*FluxPipeline"
    ):
        prepare_base_model(_params(tmp_path, base_model=str(other), family=None))


def test_aspect_buckets_train_the_flow_family_and_its_cache_keeps_each_size(
    flow_base, tmp_path, encoder_calls
):
    # Two square figures and two twice as wide: the wide ones train at 64x32, as latents twice as wide.
    rows = []
    for index, size in enumerate([(48, 48), (96, 48), (48, 48), (96, 48)]):
        path = tmp_path / f"f{index}.png"
        Image.new("RGB", size, FIGURES[index % 3][0]).save(path)
        rows.append({"sample_id": f"f{index}", "prompt": f"figure {index}", "image_path": str(path)})
    split = pd.DataFrame(rows)
    params = _params(tmp_path, aspect_buckets=[[32, 32], [64, 32]], batch_size=2)
    summary, history, _ = finetune_lora(split, flow_base, params)
    assert summary["buckets"] == {"32x32": 2, "64x32": 2}
    assert len(_losses(history)) == 4 and all(np.isfinite(_losses(history)))
    (entry,) = (tmp_path / "cache").iterdir()
    index = json.loads((entry / INDEX_FILE).read_text())
    assert [bucket["count"] for bucket in index["buckets"]] == [2, 2]
    square, wide = (load_file(entry / bucket["shards"][0])["latents"] for bucket in index["buckets"])
    assert wide.shape[-1] == 2 * square.shape[-1] and wide.shape[-2] == square.shape[-2]
    first = (tmp_path / "lora" / ADAPTER_FILE).read_bytes()
    # Read back from the cache (no encoder runs), the buckets train the same adapter.
    encoder_calls.clear()
    finetune_lora(split, flow_base, params)
    assert not encoder_calls
    assert (tmp_path / "lora" / ADAPTER_FILE).read_bytes() == first
    assert len(list((tmp_path / "cache").iterdir())) == 1
