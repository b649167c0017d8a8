"""Aspect buckets: each image trained at the size nearest its aspect ratio, every batch of one size, and a
single bucket the square run it was before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw
from pydantic import ValidationError

from sciir.training.config import LoraTrainConfig
from sciir.training.loop import bucket_batches, train_lora
from sciir.training.noise_prediction import load_recipe
from sciir.training.recipe import encode_by_size
from sciir.training.tiny_stable_diffusion import ensure_tiny_pipeline
from sciir.training.training_images import describe_buckets, load_training_images, nearest_size

SQUARE, WIDE, TALL = (32, 32), (64, 32), (32, 64)


def _config(**changes) -> LoraTrainConfig:
    values = {"resolution": 32, "steps": 6, "batch_size": 2, "learning_rate": 1e-2, "lora_rank": 4, "seed": 0}
    return LoraTrainConfig(**(values | changes))


def _figure(path, size: tuple[int, int], colour: tuple[int, int, int]) -> str:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).rectangle((4, 4, size[0] - 5, size[1] - 5), outline=colour, width=3)
    image.save(path)
    return str(path)


def test_the_nearest_bucket_is_the_one_of_the_nearest_aspect_ratio():
    buckets = [SQUARE, WIDE, TALL]
    assert nearest_size(1000, 1000, buckets) == SQUARE
    assert nearest_size(1900, 1000, buckets) == WIDE
    assert nearest_size(500, 1100, buckets) == TALL
    # On a log scale 3:2 is nearer 2:1 than 1:1 (0.29 against 0.41).
    assert nearest_size(300, 200, buckets) == WIDE
    # A square is as far from 2:1 as from 1:2: the first listed.
    assert nearest_size(100, 100, [WIDE, TALL]) == WIDE and nearest_size(100, 100, [TALL, WIDE]) == TALL


def test_images_load_at_their_bucket_and_a_square_stays_a_square(tmp_path):
    rows = [
        {
            "sample_id": name,
            "prompt": name,
            "image_path": _figure(tmp_path / f"{name}.png", size, (200, 0, 0)),
        }
        for name, size in [("wide", (400, 190)), ("tall", (120, 260)), ("square", (90, 100))]
    ]
    images, skipped = load_training_images(rows, [SQUARE, WIDE, TALL])
    assert not skipped
    assert [image.pixels.shape for image in images] == [(3, 32, 64), (3, 64, 32), (3, 32, 32)]
    assert describe_buckets(images) == {"64x32": 1, "32x64": 1, "32x32": 1}
    # Without buckets the config trains squares of its resolution.
    assert _config().training_sizes == ((32, 32),)
    (square,), _ = load_training_images(rows[:1], _config().training_sizes)
    assert square.pixels.shape == (3, 32, 32)


@pytest.mark.parametrize(
    ("buckets", "message"),
    [([], "empty"), ([(32, 32), (40, 32)], "multiples of 16"), ([(32, 32), (32, 32)], "a size twice")],
)
def test_unusable_buckets_are_refused_with_the_reason(buckets, message):
    with pytest.raises(ValidationError, match=message):
        _config(aspect_buckets=buckets)


def test_every_batch_holds_one_bucket_and_each_pass_visits_every_example_once():
    sizes = [5, 3]
    batches = list(bucket_batches(sizes, 2, 10, torch.Generator().manual_seed(0)))
    first_pass = batches[:5]  # ceil(5 / 2) + ceil(3 / 2) batches
    seen = sorted((bucket, index) for bucket, indices in first_pass for index in indices.tolist())
    assert seen == [(0, i) for i in range(5)] + [(1, i) for i in range(3)]
    assert all(indices.max() < sizes[bucket] for bucket, indices in batches)
    # The buckets alternate within a pass rather than one following the other (seeded: the same again).
    order = [bucket for bucket, _ in first_pass]
    assert order != sorted(order)
    again = list(bucket_batches(sizes, 2, 10, torch.Generator().manual_seed(0)))
    assert [(b, i.tolist()) for b, i in again] == [(b, i.tolist()) for b, i in batches]


def test_one_bucket_draws_the_batches_of_a_plain_shuffle():
    generator = torch.Generator().manual_seed(3)
    expected = [
        *torch.randperm(5, generator=generator).split(2),
        *torch.randperm(5, generator=generator).split(2),
    ]
    batches = list(bucket_batches([5], 2, 6, torch.Generator().manual_seed(3)))
    assert [indices.tolist() for _, indices in batches] == [indices.tolist() for indices in expected]


def test_the_noise_family_trains_each_bucket_at_its_own_latent_shape(tmp_path):
    base = ensure_tiny_pipeline(tmp_path / "base", seed=0)
    colours = [(220, 30, 30), (30, 30, 220), (30, 160, 30), (0, 0, 0)]
    rows = [
        {
            "sample_id": f"s{i}",
            "prompt": f"figure {i}",
            "image_path": _figure(tmp_path / f"s{i}.png", size, colour),
        }
        for i, (size, colour) in enumerate(
            zip([(64, 64), (128, 64), (64, 64), (128, 64)], colours, strict=True)
        )
    ]
    config = _config(aspect_buckets=[SQUARE, WIDE])
    images, _ = load_training_images(rows, config.training_sizes)
    torch.manual_seed(0)
    recipe = load_recipe(base, config)
    shapes: list[set[tuple[int, ...]]] = []

    def loss(encoded, indices, draws):
        shapes.append({tuple(encoded.latent_mean[index].shape) for index in indices.tolist()})
        return recipe.loss(encoded, indices, draws)

    encoded = encode_by_size(recipe, images, 2)
    assert encoded.bucket_sizes == [2, 2]
    records = train_lora(dataclasses.replace(recipe, loss=loss), encoded, config, checkpoint_root=None)
    assert len(records) == 6 and all(np.isfinite(record.loss) for record in records)
    # Every batch is of one size, and both sizes were trained; a wide latent is twice as wide as tall.
    assert all(len(batch) == 1 for batch in shapes)
    trained = {shape for batch in shapes for shape in batch}
    assert len(trained) == 2 and any(shape[-1] == 2 * shape[-2] for shape in trained)
