"""The interface between the shared training steps and a model family (:class:`LoraRecipe`), and a
training set's encodings, one bucket per training size (:class:`BucketedExamples`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sciir.training.training_images import TrainingImage, by_size

if TYPE_CHECKING:
    import torch
    from diffusers.models.modeling_utils import ModelMixin

# Images encoded per call of the VAE and the text encoder: fixed, so the encodings (and the cache key)
# do not depend on the training batch size.
ENCODE_CHUNK_SIZE = 8


@dataclass(frozen=True)
class LoraRecipe:
    """A model family's side of training, for one loaded pipeline whose denoiser carries a fresh LoRA.

    ``encode(images, chunk_size)`` returns a dataclass of ``encoded_type`` whose fields are tensors (or
    None) with the examples along the first axis; ``draw(encoded, indices, generator)`` draws a batch's
    random numbers from ``generator``, a tuple of tensors with one row per example of ``indices``;
    ``loss(encoded, indices, draws)`` is the mean loss of the examples at ``indices`` with their draws. The
    two are apart so that data-parallel processes draw a batch's numbers alike and each computes the loss
    of its share of the examples (:class:`sciir.training.data_parallel.DataParallel`).
    """

    denoiser: ModelMixin
    encoders: tuple[torch.nn.Module, ...]
    encode: Callable[[list[TrainingImage], int], Any]
    encoded_type: type
    draw: Callable[[Any, torch.Tensor, torch.Generator], tuple[torch.Tensor, ...]]
    loss: Callable[[Any, torch.Tensor, tuple[torch.Tensor, ...]], torch.Tensor]
    save_adapter: Callable[[Path], Path]


@dataclass(frozen=True)
class BucketedExamples:
    """A training set's encodings, one recipe encoding per training size: the examples of a bucket share
    a latent shape, so every batch is drawn from one bucket."""

    buckets: tuple[Any, ...]

    @property
    def bucket_sizes(self) -> list[int]:
        return [len(bucket) for bucket in self.buckets]

    def __len__(self) -> int:
        return sum(self.bucket_sizes)


def as_buckets(encoded: Any) -> BucketedExamples:
    """``encoded`` as bucketed examples (a recipe's single encoding is one bucket)."""
    return encoded if isinstance(encoded, BucketedExamples) else BucketedExamples((encoded,))


def encode_by_size(recipe: LoraRecipe, images: list[TrainingImage], chunk_size: int) -> BucketedExamples:
    """The recipe's encodings of the images, one bucket per training size
    (:func:`sciir.training.training_images.by_size`)."""
    return BucketedExamples(tuple(recipe.encode(group, chunk_size) for group in by_size(images)))
