"""Latents and caption embeddings computed once and kept on disk, so later and resumed runs skip the VAE
and the text encoder.

A cache entry is a folder ``<cache>/<key>`` of safetensors shards (``bucket-00-shard-00000.safetensors``,
a fixed number of examples of one training size each) and an ``index.json`` written last, so a cut-short
save is never read. The key is a hash of everything the encodings depend on: the family, the base
pipeline's files (by content, or size and time for files too big to read each run:
:func:`sciir.backends.fingerprint.folder_fingerprint`), the training sizes, the encoding chunk size, the
device, and every training image's pixels and caption.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from sciir.backends.fingerprint import folder_fingerprint
from sciir.training.config import LoraTrainConfig
from sciir.training.recipe import ENCODE_CHUNK_SIZE, BucketedExamples, LoraRecipe, encode_by_size
from sciir.training.training_images import TrainingImage

logger = logging.getLogger(__name__)

CACHE_FORMAT_VERSION = 2
INDEX_FILE = "index.json"
SHARD_PATTERN = "bucket-{:02d}-shard-{:05d}.safetensors"


def examples_digest(images: list[TrainingImage]) -> str:
    """A digest of the images' pixels (with their shape) and captions, in order."""
    digest = hashlib.sha256()
    for image in images:
        caption = image.caption.encode()
        digest.update(f"{len(caption)}|{image.pixels.shape}|{image.pixels.dtype}|".encode())
        digest.update(caption)
        digest.update(image.pixels.tobytes())
    return digest.hexdigest()


def cache_key(model_path: str | Path, images: list[TrainingImage], config: LoraTrainConfig) -> str:
    """The hash naming the cache entry of these images' encodings by this pipeline under this config."""
    described = {
        "format": CACHE_FORMAT_VERSION,
        "family": config.family,
        "model": folder_fingerprint(Path(model_path)),
        "sizes": config.training_sizes,
        "chunk_size": ENCODE_CHUNK_SIZE,
        # Kernels differ between devices, and so do their floats.
        "device": config.device,
        "examples": examples_digest(images),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:32]


def _tensor_fields(encoded: Any) -> dict[str, Any]:
    """The dataclass's tensor fields, None ones left out."""
    values = {field.name: getattr(encoded, field.name) for field in dataclasses.fields(encoded)}
    return {name: value.detach() for name, value in values.items() if value is not None}


def save_encoded(folder: Path, encoded: BucketedExamples, key: str, shard_size: int) -> Path:
    """Write ``encoded`` (per bucket, a dataclass of tensors with the examples along the first axis) as
    shards of ``shard_size`` examples of one bucket, then the index."""
    from safetensors.torch import save_file

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    buckets = []
    for bucket, examples in enumerate(encoded.buckets):
        tensors = _tensor_fields(examples)
        shards = []
        for number, start in enumerate(range(0, len(examples), shard_size)):
            name = SHARD_PATTERN.format(bucket, number)
            save_file(
                {
                    field: tensor[start : start + shard_size].cpu().contiguous()
                    for field, tensor in tensors.items()
                },
                folder / name,
            )
            shards.append(name)
        buckets.append({"count": len(examples), "fields": sorted(tensors), "shards": shards})
    (folder / INDEX_FILE).write_text(json.dumps({"key": key, "buckets": buckets}) + "\n")
    return folder


def _load_bucket(folder: Path, described: dict[str, Any], encoded_type: type) -> Any | None:
    """One bucket's encodings from its shards; None when they do not hold the examples the index counts."""
    import torch
    from safetensors.torch import load_file

    shards = [load_file(folder / name) for name in described["shards"]]
    tensors = {field: torch.cat([shard[field] for shard in shards]) for field in described["fields"]}
    if len(next(iter(tensors.values()))) != described["count"]:
        return None
    missing = {field.name: None for field in dataclasses.fields(encoded_type) if field.name not in tensors}
    return encoded_type(**tensors, **missing)


def load_encoded(folder: Path, encoded_type: type, key: str) -> BucketedExamples | None:
    """The encodings saved in ``folder`` under ``key``, each bucket as ``encoded_type``; None when there
    are none."""
    try:
        index = json.loads((folder / INDEX_FILE).read_text())
    except (OSError, ValueError):
        return None
    if index.get("key") != key:
        return None
    buckets = [_load_bucket(folder, described, encoded_type) for described in index["buckets"]]
    return None if any(bucket is None for bucket in buckets) else BucketedExamples(tuple(buckets))


def standardised(encoded: BucketedExamples, device: str) -> BucketedExamples:
    """The encodings with every tensor on ``device`` and contiguous.

    A VAE may hand back channels-last latents while a cache reads contiguous ones; the UNet's convolutions
    round differently on the two layouts, so without this a cached run would not train the same adapter.
    """

    def moved(examples: Any) -> Any:
        updates = {name: tensor.to(device).contiguous() for name, tensor in _tensor_fields(examples).items()}
        return dataclasses.replace(examples, **updates)

    return BucketedExamples(tuple(moved(examples) for examples in encoded.buckets))


def encode_with_cache(
    recipe: LoraRecipe, model_path: str | Path, images: list[TrainingImage], config: LoraTrainConfig
) -> BucketedExamples:
    """The images' encodings on ``config.device``, one bucket per training size: read from
    ``config.encoding_cache`` when an entry has them, else computed by the recipe (and saved there when a
    cache folder is set)."""
    if config.encoding_cache is None:
        return standardised(encode_by_size(recipe, images, ENCODE_CHUNK_SIZE), config.device)
    key = cache_key(model_path, images, config)
    folder = Path(config.encoding_cache) / key
    cached = load_encoded(folder, recipe.encoded_type, key)
    if cached is not None:
        logger.info("Latents and caption embeddings of %d images read from %s", len(images), folder)
        return standardised(cached, config.device)
    encoded = encode_by_size(recipe, images, ENCODE_CHUNK_SIZE)
    save_encoded(folder, encoded, key, config.cache_shard_size)
    logger.info("Latents and caption embeddings of %d images cached in %s", len(images), folder)
    return standardised(encoded, config.device)
