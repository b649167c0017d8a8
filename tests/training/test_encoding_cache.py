"""The encoding cache on hand-made tensors: what its key depends on, shards that round-trip exactly, and
entries that are never read when incomplete or of another key."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sciir.training.config import LoraTrainConfig
from sciir.training.encoding_cache import INDEX_FILE, cache_key, load_encoded, save_encoded, standardised
from sciir.training.recipe import BucketedExamples
from sciir.training.training_images import TrainingImage


@dataclasses.dataclass
class Encoded:
    latents: torch.Tensor
    mask: torch.Tensor | None

    def __len__(self) -> int:
        return len(self.latents)


def _images(count: int = 3) -> list[TrainingImage]:
    rng = np.random.default_rng(0)
    return [
        TrainingImage(f"s{i}", f"caption {i}", rng.random((3, 8, 8), dtype=np.float32)) for i in range(count)
    ]


def _config(**changes) -> LoraTrainConfig:
    values = {"family": "flow_matching", "resolution": 8, "steps": 1, "batch_size": 1, "learning_rate": 1e-3}
    return LoraTrainConfig(**(values | {"lora_rank": 2, "seed": 0} | changes))


def test_the_key_follows_the_model_the_images_the_captions_and_the_sizes(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.bin").write_bytes(b"one")
    images = _images()
    key = cache_key(model, images, _config())
    assert cache_key(model, _images(), _config()) == key  # the same content, the same key
    # Training settings do not change what the encoders make: the same entry.
    assert cache_key(model, images, _config(learning_rate=1.0, steps=9)) == key
    recaptioned = [dataclasses.replace(images[0], caption="another"), *images[1:]]
    repainted = [dataclasses.replace(images[0], pixels=images[0].pixels + 1), *images[1:]]
    changed = [
        cache_key(model, recaptioned, _config()),
        cache_key(model, repainted, _config()),
        cache_key(model, images[:2], _config()),
        cache_key(model, images, _config(resolution=16)),
        cache_key(model, images, _config(aspect_buckets=[(16, 16), (32, 16)])),
        cache_key(model, images, _config(family="noise_prediction")),
    ]
    (model / "weights.bin").write_bytes(b"two")
    changed.append(cache_key(model, images, _config()))
    assert key not in changed and len(set(changed)) == len(changed)
    (model / "weights.bin").write_bytes(b"one")
    assert cache_key(model, images, _config()) == key


def test_shards_round_trip_exactly_and_an_unset_field_stays_none(tmp_path):
    latents = torch.randn(5, 4, 2, 2, generator=torch.Generator().manual_seed(0))
    encoded = Encoded(latents=latents.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2), mask=None)
    wide = Encoded(latents=torch.randn(1, 4, 2, 4, generator=torch.Generator().manual_seed(1)), mask=None)
    folder = save_encoded(tmp_path / "entry", BucketedExamples((encoded, wide)), "k1", shard_size=2)
    assert sorted(p.name for p in folder.iterdir()) == [
        "bucket-00-shard-00000.safetensors", "bucket-00-shard-00001.safetensors",
        "bucket-00-shard-00002.safetensors", "bucket-01-shard-00000.safetensors", INDEX_FILE,
    ]  # fmt: skip
    loaded = load_encoded(folder, Encoded, "k1")
    assert loaded is not None and loaded.bucket_sizes == [5, 1]
    square, oblong = loaded.buckets
    assert (
        square.mask is None
        and torch.equal(square.latents, latents)
        and torch.equal(oblong.latents, wide.latents)
    )
    # Whatever layout the encoder returned, training sees contiguous tensors either way.
    moved = standardised(BucketedExamples((encoded,)), "cpu").buckets[0]
    assert moved.latents.is_contiguous() and square.latents.is_contiguous()


def test_an_entry_of_another_key_or_without_its_index_is_not_read(tmp_path):
    encoded = BucketedExamples((Encoded(latents=torch.ones(2, 1), mask=torch.ones(2, 3)),))
    folder = save_encoded(tmp_path / "entry", encoded, "k1", shard_size=4)
    assert load_encoded(folder, Encoded, "k2") is None
    (folder / INDEX_FILE).unlink()  # as if the save had been cut short before the index
    assert load_encoded(folder, Encoded, "k1") is None
    assert load_encoded(tmp_path / "missing", Encoded, "k1") is None


@pytest.mark.parametrize("shard_size", [1, 3])
def test_a_new_save_replaces_the_old_shards(tmp_path, shard_size):
    def one_bucket(value: float) -> BucketedExamples:
        return BucketedExamples((Encoded(latents=torch.full((3, 1), value), mask=None),))

    save_encoded(tmp_path / "entry", one_bucket(0.0), "k", shard_size=1)
    save_encoded(tmp_path / "entry", one_bucket(1.0), "k", shard_size=shard_size)
    loaded = load_encoded(tmp_path / "entry", Encoded, "k")
    assert torch.equal(loaded.buckets[0].latents, torch.ones(3, 1))
    assert len(list((tmp_path / "entry").glob("bucket-*"))) == 3 // shard_size
