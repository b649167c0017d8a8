"""The LoRA recipe on the tiny pipeline: images in, a few steps, an adapter that reloads and matters."""

from __future__ import annotations

import math
import random
import shutil

import numpy as np
import pytest
import torch
from diffusers import StableDiffusionPipeline
from peft.utils import get_peft_model_state_dict
from PIL import Image
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from sciir.training.config import LoraTrainConfig
from sciir.training.loop import CHECKPOINT_DIR, StepRecord, bucket_batches, finetune_lora_adapter, train_lora
from sciir.training.lora_adapter import canonical_safetensors_header
from sciir.training.noise_prediction import load_recipe, lora_layers
from sciir.training.recipe import LoraRecipe
from sciir.training.tiny_stable_diffusion import ensure_tiny_pipeline
from sciir.training.training_images import load_training_images

RESOLUTION = 32
ADAPTER_FILE = "pytorch_lora_weights.safetensors"


@pytest.fixture(scope="module")
def base_folder(tmp_path_factory):
    return ensure_tiny_pipeline(tmp_path_factory.mktemp("tiny") / "base", seed=0)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train")
    rows = []
    for index, colour in enumerate([(255, 0, 0), (0, 128, 255), (20, 200, 20), (250, 250, 250)]):
        path = folder / f"s{index}.png"
        Image.new("RGB", (96, 96), colour).save(path)
        rows.append(
            {
                "sample_id": f"s{index}",
                "prompt": f"panel {index}: a labelled diagram",
                "image_path": str(path),
            }
        )
    loaded, skipped = load_training_images(rows, [(RESOLUTION, RESOLUTION)])
    assert not skipped
    return loaded


def _config(**changes) -> LoraTrainConfig:
    values = {
        "resolution": RESOLUTION,
        "steps": 3,
        "batch_size": 2,
        "learning_rate": 1e-2,
        "lora_rank": 4,
        "seed": 0,
    }
    return LoraTrainConfig(**(values | changes))


def _losses(records: list[StepRecord]) -> list[float]:
    return [record.loss for record in records]


def test_unusable_images_are_skipped_with_a_reason_naming_the_file(tmp_path, caplog):
    good, corrupt, truncated = tmp_path / "good.png", tmp_path / "corrupt.png", tmp_path / "truncated.png"
    Image.new("RGB", (64, 48), (255, 255, 255)).save(good)
    corrupt.write_bytes(b"not an image")
    truncated.write_bytes(good.read_bytes()[:60])
    rows = [
        {"sample_id": "a", "prompt": "p", "image_path": str(good)},
        {"sample_id": "b", "prompt": "p", "image_path": str(corrupt)},
        {"sample_id": "c", "prompt": "p", "image_path": str(tmp_path / "missing.png")},
        {"sample_id": "d", "prompt": "p", "image_path": str(truncated)},
        {"sample_id": "e", "prompt": "p", "image_path": None},
    ]
    images, skipped = load_training_images(rows, [(16, 16)])
    assert [i.sample_id for i in images] == ["a"]
    assert images[0].pixels.shape == (3, 16, 16) and images[0].pixels.max() == pytest.approx(1.0)
    assert [s.sample_id for s in skipped] == ["b", "c", "d", "e"]
    for entry in skipped[:3]:
        assert entry.image_path in entry.reason and entry.image_path in caplog.text
    assert "no image_path" in skipped[3].reason


def test_each_pass_visits_every_example_once():
    batches = list(bucket_batches([5], 2, 6, torch.Generator().manual_seed(0)))
    assert len(batches) == 6 and {bucket for bucket, _ in batches} == {0}
    first_pass = torch.cat([indices for _, indices in batches[:3]]).tolist()
    assert sorted(first_pass) == [0, 1, 2, 3, 4]


def test_a_few_steps_change_the_lora_weights_with_a_finite_loss(base_folder, images):
    recipe = load_recipe(base_folder, _config())
    unet = recipe.denoiser
    trainable = [name for name, p in unet.named_parameters() if p.requires_grad]
    assert trainable and all("lora" in name for name in trainable)
    before = {name: weight.clone() for name, weight in lora_layers(unet).items()}
    records = train_lora(recipe, recipe.encode(images, 2), _config(), checkpoint_root=None)
    assert [r.step for r in records] == [1, 2, 3] and all(math.isfinite(r.loss) for r in records)
    after = lora_layers(unet)
    assert after.keys() == before.keys()
    assert any(not torch.equal(before[name], after[name]) for name in before)
    frozen = dict(unet.named_parameters())["conv_in.weight"]
    assert not frozen.requires_grad


def _reloaded_lora(pipe: StableDiffusionPipeline, folder, adapter_name: str) -> dict[str, torch.Tensor]:
    """The LoRA tensors ``load_lora_weights`` put into the pipeline's UNet, under the file's key names."""
    pipe.load_lora_weights(folder, adapter_name=adapter_name)
    return {
        f"unet.{k}": v for k, v in get_peft_model_state_dict(pipe.unet, adapter_name=adapter_name).items()
    }


def test_saved_adapter_reloads_whole_into_a_fresh_pipeline_and_changes_its_output(
    base_folder, images, tmp_path
):
    # Attention projections and convolutions: a file mixing diffusers' and peft's key names loses the
    # attention tensors on reload, silently; every tensor must come back.
    config = _config(checkpoint_every=2, lora_target_modules=("to_q", "to_k", "to_v", "to_out.0", "conv1"))
    losses = _losses(finetune_lora_adapter(base_folder, images, config, tmp_path / "lora"))
    assert _losses(finetune_lora_adapter(base_folder, images, config, tmp_path / "again")) == losses  # seeded
    saved = load_file(tmp_path / "lora" / ADAPTER_FILE)
    assert any(".to_q." in key for key in saved) and any(".conv1." in key for key in saved)

    pipe = StableDiffusionPipeline.from_pretrained(base_folder, local_files_only=True)
    pipe.set_progress_bar_config(disable=True)

    def render() -> np.ndarray:
        generator = torch.Generator().manual_seed(7)
        return pipe("panel 0", num_inference_steps=2, generator=generator, output_type="np").images[0]

    base = render()
    reloaded = _reloaded_lora(pipe, tmp_path / "lora", "final")
    assert reloaded.keys() == saved.keys()
    assert all(torch.equal(reloaded[key], saved[key]) for key in saved)
    tuned = render()
    assert base.shape == tuned.shape
    assert np.abs(base - tuned).max() > 1e-3

    checkpoint = tmp_path / "lora" / CHECKPOINT_DIR / "checkpoint-2"
    assert _reloaded_lora(pipe, checkpoint, "step_2").keys() == saved.keys()  # checkpoints load the same way


def test_training_without_images_is_refused(base_folder, tmp_path):
    with pytest.raises(ValueError, match="no training images"):
        finetune_lora_adapter(base_folder, [], _config(), tmp_path / "lora")


def test_the_adapter_bytes_do_not_depend_on_the_callers_thread_count(base_folder, images, tmp_path):
    """Dask starts its workers with OMP_NUM_THREADS=1; a seeded run must not depend on what ran before."""
    before = torch.get_num_threads()
    adapters = []
    for threads in (1, 2):
        torch.set_num_threads(threads)
        try:
            finetune_lora_adapter(base_folder, images, _config(), tmp_path / f"t{threads}")
        finally:
            torch.set_num_threads(before)
        adapters.append((tmp_path / f"t{threads}" / "pytorch_lora_weights.safetensors").read_bytes())
    assert adapters[0] == adapters[1]
    assert torch.get_num_threads() == before  # the caller's setting is restored


def test_a_resumed_run_reaches_the_same_adapter_bytes_as_an_uninterrupted_one(base_folder, images, tmp_path):
    # A schedule with warmup and decay, so a scheduler state lost on resume would show in the weights.
    config = _config(steps=6, lr_scheduler="cosine", lr_warmup_steps=2)
    uninterrupted = finetune_lora_adapter(base_folder, images, config, tmp_path / "full")

    checkpointed = config.model_copy(update={"checkpoint_every": 2, "checkpoints_total_limit": 2})
    finetune_lora_adapter(base_folder, images, checkpointed, tmp_path / "cut")
    checkpoints = tmp_path / "cut" / CHECKPOINT_DIR
    assert sorted(p.name for p in checkpoints.iterdir()) == ["checkpoint-4", "checkpoint-6"]  # 2 dropped
    # As if the run had stopped during step 5: only the checkpoint of step 4 is left.
    shutil.rmtree(checkpoints / "checkpoint-6")
    (tmp_path / "cut" / ADAPTER_FILE).unlink()

    python_state, numpy_state = random.getstate(), np.random.get_state()
    resumed = finetune_lora_adapter(
        base_folder,
        images,
        checkpointed.model_copy(update={"resume_from_checkpoint": "latest"}),
        tmp_path / "cut",
    )
    assert (tmp_path / "cut" / ADAPTER_FILE).read_bytes() == (tmp_path / "full" / ADAPTER_FILE).read_bytes()
    assert _losses(resumed) == _losses(uninterrupted)
    assert [r.learning_rate for r in resumed] == [r.learning_rate for r in uninterrupted]
    assert len(set(r.learning_rate for r in resumed)) > 2
    assert random.getstate() == python_state  # restoring the checkpoint's states did not leak out
    assert np.array_equal(np.random.get_state()[1], numpy_state[1])

    by_path = checkpointed.model_copy(update={"resume_from_checkpoint": str(checkpoints / "checkpoint-4")})
    finetune_lora_adapter(base_folder, images, by_path, tmp_path / "elsewhere")
    assert (tmp_path / "elsewhere" / ADAPTER_FILE).read_bytes() == (
        tmp_path / "full" / ADAPTER_FILE
    ).read_bytes()


def test_resuming_refuses_a_checkpoint_of_other_settings(base_folder, images, tmp_path):
    config = _config(steps=2, checkpoint_every=2)
    finetune_lora_adapter(base_folder, images, config, tmp_path / "lora")
    latest = config.model_copy(update={"resume_from_checkpoint": "latest"})
    with pytest.raises(ValueError, match="learning_rate: 0.01 != 0.02"):
        finetune_lora_adapter(
            base_folder, images, latest.model_copy(update={"learning_rate": 2e-2}), tmp_path / "lora"
        )
    with pytest.raises(ValueError, match="another shape"):
        finetune_lora_adapter(
            base_folder, images, latest.model_copy(update={"lora_rank": 2}), tmp_path / "lora"
        )
    with pytest.raises(FileNotFoundError, match="not a checkpoint"):
        finetune_lora_adapter(
            base_folder,
            images,
            config.model_copy(update={"resume_from_checkpoint": str(tmp_path)}),
            tmp_path / "x",
        )


def test_the_adapter_header_is_canonical_whatever_order_the_metadata_was_written_in(tmp_path):
    """safetensors writes its metadata map in hash order, which differs between processes."""
    tensors = {"b": torch.arange(3.0), "a": torch.ones(2)}
    paths = [tmp_path / "first.safetensors", tmp_path / "second.safetensors"]
    save_file(tensors, paths[0], metadata={"format": "pt", "lora_adapter_metadata": "{}", "z": "1"})
    save_file(tensors, paths[1], metadata={"z": "1", "lora_adapter_metadata": "{}", "format": "pt"})
    for path in paths:
        canonical_safetensors_header(path)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert b'{"format":"pt","lora_adapter_metadata":"{}","z":"1"}' in paths[0].read_bytes()[:200]
    reloaded = load_file(paths[0])
    assert all(torch.equal(reloaded[name], tensor) for name, tensor in tensors.items())
    with safe_open(paths[0], "pt") as handle:
        assert handle.metadata() == {"format": "pt", "lora_adapter_metadata": "{}", "z": "1"}


class _Denoiser(torch.nn.Module):
    """One trainable vector: the least-squares fit of the examples, a loss with no random draws."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(3))
        self.device = torch.device("cpu")


def _deterministic_recipe(examples: torch.Tensor) -> LoraRecipe:
    denoiser = _Denoiser()

    def loss(encoded: torch.Tensor, indices: torch.Tensor, draws: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return ((encoded[indices] - denoiser.weight) ** 2).mean()

    return LoraRecipe(
        denoiser=denoiser,
        encoders=(),
        encode=lambda images, chunk: examples,
        encoded_type=torch.Tensor,
        draw=lambda encoded, indices, generator: (),
        loss=loss,
        save_adapter=lambda folder: folder,
    )


def test_gradient_accumulation_steps_like_one_batch_of_their_sum():
    examples = torch.arange(24, dtype=torch.float32).reshape(8, 3) / 10
    whole = _deterministic_recipe(examples)
    accumulated = _deterministic_recipe(examples)
    big = _config(steps=4, batch_size=4, learning_rate=0.1)
    small = _config(steps=4, batch_size=2, gradient_accumulation_steps=2, learning_rate=0.1)

    whole_records = train_lora(whole, examples, big, checkpoint_root=None)
    accumulated_records = train_lora(accumulated, examples, small, checkpoint_root=None)

    # The same examples reach each step (the batch order splits one shuffle), so the same weights follow.
    assert [record.step for record in accumulated_records] == [1, 2, 3, 4]
    assert torch.allclose(whole.denoiser.weight, accumulated.denoiser.weight, atol=1e-6)
    assert _losses(accumulated_records) == pytest.approx(_losses(whole_records), rel=1e-6)
    assert not torch.equal(whole.denoiser.weight, torch.zeros(3))
    # Two batches of 2 per step against one batch of 2: accumulation is not silently ignored.
    plain = _deterministic_recipe(examples)
    train_lora(plain, examples, _config(steps=4, batch_size=2, learning_rate=0.1), checkpoint_root=None)
    assert not torch.allclose(plain.denoiser.weight, whole.denoiser.weight, atol=1e-3)


def test_a_checkpoint_callback_sees_every_checkpoint_and_leaves_the_run_unchanged(
    base_folder, images, tmp_path
):
    config = _config(steps=4, checkpoint_every=2)
    plain = finetune_lora_adapter(base_folder, images, config, tmp_path / "plain")
    seen = []

    def draw_at_random(step, folder):
        seen.append((step, (folder / ADAPTER_FILE).is_file()))
        torch.rand(100), np.random.rand(100), random.random()  # random draws, as drawing images makes

    watched = finetune_lora_adapter(base_folder, images, config, tmp_path / "watched", draw_at_random)
    assert seen == [(2, True), (4, True)]
    assert _losses(watched) == _losses(plain)
    assert (tmp_path / "watched" / ADAPTER_FILE).read_bytes() == (
        tmp_path / "plain" / ADAPTER_FILE
    ).read_bytes()
