"""LoRA fine-tuning of a diffusers text-to-image pipeline, as small steps shared by every model family.

A family (:mod:`sciir.training.families`: noise prediction for Stable-Diffusion-style UNets, flow matching for
Qwen-Image's transformer) says how its pipeline loads, which model gets the LoRA, how images and captions
are encoded and what the loss of a batch is (a :class:`LoraRecipe`). Everything else is here, the same for
all: images in, encodings computed once (and cached on disk, :mod:`sciir.training.encoding_cache`), the optimiser
loop with its learning-rate schedule, mixed precision and gradient checkpointing
(:mod:`sciir.training.resources`), checkpoints (:mod:`sciir.training.checkpoints`) that let a stopped run
resume to the very weights an uninterrupted run reaches, and the adapter saved as safetensors that
``pipe.load_lora_weights(folder)`` reloads.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import random
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from PIL import Image, ImageOps
from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

from sciir.training.checkpoints import (
    checkpoint_folder,
    find_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from sciir.training.resources import (
    autocast,
    build_optimizer,
    check_optimizer_available,
    enable_gradient_checkpointing,
)

if TYPE_CHECKING:
    import torch
    from peft import LoraConfig

logger = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoints"
# The file diffusers' save_lora_weights writes and load_lora_weights reads.
ADAPTER_FILE = "pytorch_lora_weights.safetensors"
# Images encoded per call of the VAE and the text encoder: fixed, so the encodings (and the cache key)
# do not depend on the training batch size.
ENCODE_CHUNK_SIZE = 8
Family = Literal["noise_prediction", "flow_matching"]
# Called with the step and the folder of each checkpoint saved during training.
CheckpointCallback = Callable[[int, Path], None]
TimestepDensity = Literal["logit_normal", "uniform"]
LossWeighting = Literal["none", "sigma_sqrt", "cosmap"]
# A batch: its bucket and the indices of its examples within the bucket.
_Batch = tuple[int, "torch.Tensor"]
# An image size as (width, height), PIL's order.
Size = tuple[int, int]
# Sides of an aspect bucket are multiples of this: the VAEs of both families downsample 8 times and
# Qwen-Image's transformer takes 2x2 patches of the latents.
BUCKET_SIDE_MULTIPLE = 16


class LoraTrainConfig(BaseModel):
    """What one training run does. Read from parameters and never changed during the run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # None: the family of the base pipeline's class (model_index.json); a family that disagrees with the
    # pipeline's is refused.
    family: Family | None = None
    resolution: PositiveInt
    # Training sizes (width, height) of similar pixel count: each image is resized and centre-cropped to
    # the one nearest its aspect ratio and every batch holds one size. None: every image a square of
    # ``resolution``.
    aspect_buckets: tuple[tuple[PositiveInt, PositiveInt], ...] | None = None
    steps: PositiveInt
    batch_size: PositiveInt
    # Batches whose gradients are summed before each optimiser step: an effective batch of
    # batch_size x gradient_accumulation_steps in the memory of one batch.
    gradient_accumulation_steps: PositiveInt = 1
    learning_rate: PositiveFloat
    lora_rank: PositiveInt
    # The LoRA's output is scaled by alpha / rank; None: alpha = rank (a scale of 1).
    lora_alpha: PositiveFloat | None = None
    # Module names (peft matches them as name suffixes) that get a LoRA; None: the family's attention
    # projections, as diffusers' recipes for a pretrained model.
    lora_target_modules: tuple[str, ...] | None = None
    seed: int
    lr_scheduler: Literal["constant", "constant_with_warmup", "linear", "cosine"] = "constant"
    lr_warmup_steps: NonNegativeInt = 0
    # "bf16": the denoiser's forward pass under bfloat16 autocast (its weights and the LoRA stay float32).
    mixed_precision: Literal["no", "bf16"] = "no"
    # Recompute activations in the backward pass instead of keeping them: less memory, more time.
    gradient_checkpointing: bool = False
    # "adamw8bit" needs the bitsandbytes package (and a CUDA GPU).
    optimizer: Literal["adamw", "adamw8bit"] = "adamw"
    # Flow matching only: where the sigmas are drawn and how each sample's error is weighted (SD3's options).
    timestep_density: TimestepDensity = "logit_normal"
    logit_mean: float = 0.0
    logit_std: PositiveFloat = 1.0
    loss_weighting: LossWeighting = "none"
    checkpoint_every: NonNegativeInt = 0
    # Keep at most this many checkpoints, removing the oldest first (None: keep all).
    checkpoints_total_limit: PositiveInt | None = None
    # "latest" (the newest checkpoint under the adapter folder, if any), a checkpoint folder, or None.
    resume_from_checkpoint: str | None = None
    # Folder of the latent and caption-embedding cache (sciir.training.encoding_cache); None: encode every run.
    encoding_cache: str | None = None
    # Examples per cache shard file.
    cache_shard_size: PositiveInt = 64
    device: str = "cpu"
    # Float sums on the CPU depend on the number of threads, and other libraries (Dask starts its
    # workers with OMP_NUM_THREADS=1) change torch's default: a fixed count makes a seeded run give the
    # same adapter bytes whatever ran before it in the process.
    cpu_threads: PositiveInt = 1

    @field_validator("aspect_buckets")
    @classmethod
    def _buckets_are_usable(cls, buckets: tuple[Size, ...] | None) -> tuple[Size, ...] | None:
        if buckets is None:
            return None
        if not buckets:
            raise ValueError("aspect_buckets is empty: list (width, height) pairs, or null for squares")
        odd = [size for size in buckets if any(side % BUCKET_SIDE_MULTIPLE for side in size)]
        if odd:
            raise ValueError(f"aspect bucket sides must be multiples of {BUCKET_SIDE_MULTIPLE}: {odd}")
        if len(set(buckets)) < len(buckets):
            raise ValueError(f"aspect_buckets lists a size twice: {list(buckets)}")
        return buckets

    @property
    def training_sizes(self) -> tuple[Size, ...]:
        """The sizes images are trained at: the aspect buckets, or the one square of ``resolution``."""
        return self.aspect_buckets or ((self.resolution, self.resolution),)


# The settings that shape the sequence of weights: a checkpoint resumes only a run that agrees on them.
TRAJECTORY_FIELDS = (
    "family",
    "resolution",
    "aspect_buckets",
    "steps",
    "gradient_accumulation_steps",
    "learning_rate",
    "lora_rank",
    "lora_alpha",
    "lora_target_modules",
    "seed",
    "lr_scheduler",
    "lr_warmup_steps",
    "mixed_precision",
    "optimizer",
    "timestep_density",
    "logit_mean",
    "logit_std",
    "loss_weighting",
)


@dataclass(frozen=True)
class StepRecord:
    """What one optimisation step did; ``samples_per_second`` is a wall-clock measure (MLflow only)."""

    step: int
    loss: float
    learning_rate: float
    samples_per_second: float


@dataclass(frozen=True)
class TrainingImage:
    """One (image, caption) pair; ``pixels`` is (3, height, width) float32 in [-1, 1], at a training size."""

    sample_id: str
    caption: str
    pixels: np.ndarray


@dataclass(frozen=True)
class SkippedImage:
    """A training row whose image could not be used, with the reason."""

    sample_id: str
    image_path: str
    reason: str


def nearest_size(width: int, height: int, sizes: Sequence[Size]) -> Size:
    """The size in ``sizes`` whose aspect ratio is nearest ``width / height`` (on a log scale, so 2:1
    and 1:2 are as far from 1:1); the first listed on a tie."""
    ratio = math.log(width / height)
    return min(sizes, key=lambda size: abs(math.log(size[0] / size[1]) - ratio))


def load_pixels(path: str | Path, sizes: Sequence[Size]) -> np.ndarray:
    """An image as a (3, h, w) float32 array in [-1, 1]: resized to cover the size of ``sizes`` nearest
    its aspect ratio, then centre-cropped to it.

    Raises:
        OSError: the file is missing, not an image, or truncated.
    """
    with Image.open(path) as image:
        image.load()  # decode now, so a truncated file fails here and not later
        size = nearest_size(image.width, image.height, sizes)
        fitted = ImageOps.fit(image.convert("RGB"), size, Image.Resampling.LANCZOS)
    return (np.asarray(fitted, dtype=np.float32) / 127.5 - 1.0).transpose(2, 0, 1)


def load_training_images(
    rows: Iterable[Mapping[str, Any]], sizes: Sequence[Size]
) -> tuple[list[TrainingImage], list[SkippedImage]]:
    """The usable (image, caption) pairs of rows with sample_id, prompt and image_path, each image at the
    training size of ``sizes`` nearest its aspect ratio.

    A missing or unreadable image is skipped with a logged warning naming the file; it is
    returned among the skipped rows, never dropped silently.
    """
    images: list[TrainingImage] = []
    skipped: list[SkippedImage] = []
    for row in rows:
        sample, path = str(row["sample_id"]), row["image_path"]
        try:
            if not isinstance(path, str) or not path:
                raise ValueError("the row has no image_path")
            pixels = load_pixels(path, sizes)
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            reason = (
                f"training image {path!r} of sample {sample} is unusable: {type(error).__name__}: {error}"
            )
            logger.warning("Skipped a training image: %s", reason)
            skipped.append(SkippedImage(sample_id=sample, image_path=str(path), reason=reason))
            continue
        images.append(TrainingImage(sample_id=sample, caption=str(row["prompt"]), pixels=pixels))
    return images, skipped


def image_size(image: TrainingImage) -> Size:
    """The (width, height) an image was loaded at."""
    _, height, width = image.pixels.shape
    return width, height


def by_size(images: Sequence[TrainingImage]) -> list[list[TrainingImage]]:
    """The images grouped by size, groups in the order their first image comes, images in their order."""
    groups: dict[Size, list[TrainingImage]] = {}
    for image in images:
        groups.setdefault(image_size(image), []).append(image)
    return list(groups.values())


def describe_buckets(images: Sequence[TrainingImage]) -> dict[str, int]:
    """Images per training size, as ``{"<width>x<height>": count}``."""
    return {"{}x{}".format(*image_size(group[0])): len(group) for group in by_size(images)}


@dataclass(frozen=True)
class LoraRecipe:
    """A model family's side of training, for one loaded pipeline whose denoiser carries a fresh LoRA.

    ``encode(images, chunk_size)`` returns a dataclass of ``encoded_type`` whose fields are tensors (or
    None) with the examples along the first axis; ``draw(encoded, indices, generator)`` draws a batch's
    random numbers from ``generator``, a tuple of tensors with one row per example of ``indices``;
    ``loss(encoded, indices, draws)`` is the mean loss of the examples at ``indices`` with their draws. The
    two are apart so that data-parallel processes draw a batch's numbers alike and each computes the loss
    of its share of the examples (:class:`DataParallel`).
    """

    denoiser: torch.nn.Module
    encoders: tuple[torch.nn.Module, ...]
    encode: Callable[[list[TrainingImage], int], Any]
    encoded_type: type
    draw: Callable[[Any, torch.Tensor, torch.Generator], tuple[torch.Tensor, ...]]
    loss: Callable[[Any, torch.Tensor, tuple[torch.Tensor, ...]], torch.Tensor]
    save_adapter: Callable[[Path], Path]


@dataclass(frozen=True)
class DataParallel:
    """This process's place among the data-parallel training processes (one, by default).

    Every process holds the same LoRA and draws the same batches and random numbers; each computes the
    loss of its contiguous share of a batch's examples, scaled by its share, and the gradients are summed
    across processes before each optimiser step, so every process takes the step one process would take on
    the whole batch (up to the order of float sums). ``batch_size`` is per process: a step sees
    ``batch_size x world_size x gradient_accumulation_steps`` examples. The process group is the caller's
    (``sciir.training.distributed`` sets it up from the launcher's environment).
    """

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def share(self, batch: torch.Tensor) -> torch.Tensor:
        """Positions (in ``batch``) of this process's examples: a contiguous, nearly equal split."""
        import torch

        return torch.arange(len(batch)).tensor_split(self.world_size)[self.rank]

    def sum_gradients(self, parameters: Iterable[torch.Tensor]) -> None:
        """Sum each parameter's gradient over the processes (a process with no examples adds zeros)."""
        if self.world_size == 1:
            return
        import torch
        import torch.distributed as distributed

        for parameter in parameters:
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            distributed.all_reduce(parameter.grad, op=distributed.ReduceOp.SUM)

    def sum_value(self, value: float) -> float:
        """``value`` summed over the processes (a step's loss from each one's share)."""
        if self.world_size == 1:
            return value
        import torch
        import torch.distributed as distributed

        total = torch.tensor([value], dtype=torch.float64)
        distributed.all_reduce(total, op=distributed.ReduceOp.SUM)
        return float(total.item())

    @contextmanager
    def main_first(self) -> Iterator[None]:
        """The main process runs the block before the others (it fills a cache they then read)."""
        if self.world_size > 1 and not self.is_main:
            self._wait_for_everyone()
        yield
        if self.world_size > 1 and self.is_main:
            self._wait_for_everyone()

    def _wait_for_everyone(self) -> None:
        import torch.distributed as distributed

        distributed.barrier()


def lora_config(rank: int, alpha: float | None, target_modules: Iterable[str]) -> LoraConfig:
    """A peft LoRA configuration with gaussian initial weights (drawn from torch's global generator)."""
    from peft import LoraConfig

    return LoraConfig(
        r=rank,
        lora_alpha=rank if alpha is None else alpha,
        init_lora_weights="gaussian",
        target_modules=list(target_modules),
    )


def peft_lora_layers(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The model's LoRA weights under peft's key names (``<module>.lora_A.weight``, ``lora_B``)."""
    from peft.utils import get_peft_model_state_dict

    return get_peft_model_state_dict(model)


def save_diffusers_lora(
    pipeline_class: type, component: str, model: torch.nn.Module, folder: str | Path
) -> Path:
    """Save the LoRA of the pipeline's ``component`` (``unet``, ``transformer``) with diffusers' writer
    for ``pipeline_class``, with its peft configuration (so a reload gets its alpha), as safetensors with
    a canonical header; ``pipe.load_lora_weights(folder)`` reloads it."""
    folder = Path(folder)
    pipeline_class.save_lora_weights(
        save_directory=folder,
        safe_serialization=True,
        **{
            f"{component}_lora_layers": peft_lora_layers(model),
            f"{component}_lora_adapter_metadata": lora_adapter_metadata(model),
        },
    )
    canonical_safetensors_header(folder / ADAPTER_FILE)
    return folder


def canonical_safetensors_header(path: Path) -> None:
    """Rewrite a safetensors file's header with its metadata entries in sorted order.

    safetensors writes the metadata map in hash order, which changes from one process to the next, so the
    same adapter would get different bytes (and DVC would see a change) on every run. The tensors and
    their offsets are untouched.
    """
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the format pads the header to a multiple of 8 bytes
    path.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + size :])


def lora_adapter_metadata(model: torch.nn.Module) -> dict[str, Any]:
    """The LoRA's peft configuration for the adapter file (so a reload gets its alpha), sets as sorted
    lists: a set's order changes between processes, and the file's bytes would change with it."""
    config = model.peft_config["default"].to_dict()
    return {key: sorted(value) if isinstance(value, set) else value for key, value in config.items()}


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
    """The recipe's encodings of the images, one bucket per training size (:func:`by_size`)."""
    return BucketedExamples(tuple(recipe.encode(group, chunk_size) for group in by_size(images)))


def bucket_batches(
    bucket_sizes: Sequence[int], batch_size: int, steps: int, generator: torch.Generator
) -> Iterator[tuple[int, torch.Tensor]]:
    """``steps`` batches as (bucket, indices within the bucket). Each pass over the data shuffles every
    bucket's examples and splits them into batches (a bucket's last may be smaller); with more than one
    bucket the pass's batches are shuffled too, so sizes alternate. One bucket's batches stay in shuffle
    order, which is already random (and draws nothing more from ``generator``)."""
    import torch

    produced = 0
    while produced < steps:
        batches = [
            (bucket, batch)
            for bucket, count in enumerate(bucket_sizes)
            for batch in torch.randperm(count, generator=generator).split(batch_size)
        ]
        if len(bucket_sizes) > 1:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]
        for batch in batches:
            if produced == steps:
                return
            produced += 1
            yield batch


def accumulation_groups(batches: Iterator[_Batch], size: int) -> Iterator[list[_Batch]]:
    """The batches in consecutive groups of ``size``: the batches of one optimiser step each."""
    while group := list(itertools.islice(batches, size)):
        yield group


def _stream_seeds(seed: int) -> tuple[int, int]:
    """Independent seeds for the batch order and for the noise, both derived from ``seed``."""
    order, noise = np.random.SeedSequence(seed % 2**32).generate_state(2)
    return int(order), int(noise)


def _trajectory(config: LoraTrainConfig, parallel: DataParallel) -> dict[str, Any]:
    """The settings that shape the run, as JSON values (a checkpoint stores them so), with the examples of
    one batch over all processes: how the run is split into processes does not shape it."""
    settings = config.model_dump(mode="json", include=set(TRAJECTORY_FIELDS))
    return settings | {"global_batch_size": config.batch_size * parallel.world_size}


def _check_same_trajectory(
    progress: Mapping[str, Any], config: LoraTrainConfig, parallel: DataParallel, folder: Path
) -> None:
    """Refuse a checkpoint of a run with other settings: resuming it would not continue that run."""
    saved, current = progress["trajectory"], _trajectory(config, parallel)
    differing = [f"{k}: {saved.get(k)!r} != {v!r}" for k, v in current.items() if saved.get(k) != v]
    if differing:
        raise ValueError(
            f"checkpoint {folder} was saved by a run with other settings ({'; '.join(differing)})"
        )


def train_lora(
    recipe: LoraRecipe,
    encoded: Any,
    config: LoraTrainConfig,
    checkpoint_root: Path | None,
    resume_from: Path | None = None,
    on_checkpoint: CheckpointCallback | None = None,
    parallel: DataParallel = DataParallel(),
) -> list[StepRecord]:
    """Optimise the LoRA of the recipe's denoiser up to step ``config.steps``, as process ``parallel`` of
    the data-parallel processes (checkpoints and callbacks in the main process only). ``encoded`` is
    :class:`BucketedExamples` or one recipe encoding (a single bucket).

    From ``resume_from`` (a checkpoint) the run continues at the step after the checkpoint's and
    reaches the weights an uninterrupted run reaches. Every ``config.checkpoint_every`` steps (when
    positive) a checkpoint is saved under ``checkpoint_root/checkpoint-<step>``, keeping the newest
    ``config.checkpoints_total_limit``, and ``on_checkpoint(step, folder)`` is called with it (its random
    draws do not touch the run's). Returns the record of every step, those before the checkpoint's
    included.

    Raises:
        FloatingPointError: the loss stopped being finite (the learning rate is too high).
        ValueError: the checkpoint was saved by a run with other settings.
        ImportError: the optimiser's package is not installed.
    """
    import torch
    from diffusers.optimization import get_scheduler

    examples = as_buckets(encoded)
    model = recipe.denoiser
    trainable = {name: p for name, p in model.named_parameters() if p.requires_grad}
    optimizer = build_optimizer(config.optimizer, list(trainable.values()), config.learning_rate)
    scheduler = get_scheduler(
        config.lr_scheduler,
        optimizer,
        num_warmup_steps=config.lr_warmup_steps,
        num_training_steps=config.steps,
    )
    order_seed, noise_seed = _stream_seeds(config.seed)
    generator = torch.Generator().manual_seed(noise_seed)
    records: list[StepRecord] = []
    if resume_from is not None:
        progress = load_checkpoint(resume_from, trainable, optimizer, scheduler, generator)
        _check_same_trajectory(progress, config, parallel, resume_from)
        records = [StepRecord(**record) for record in progress["records"]]
        logger.info("Resuming LoRA training from %s (step %d)", resume_from, len(records))
    # The order is replayed from its seed, so the resumed run sees the batches the interrupted one would have.
    accumulation = config.gradient_accumulation_steps
    order = accumulation_groups(
        bucket_batches(
            examples.bucket_sizes,
            config.batch_size * parallel.world_size,
            config.steps * accumulation,
            torch.Generator().manual_seed(order_seed),
        ),
        accumulation,
    )
    if config.gradient_checkpointing:
        enable_gradient_checkpointing(model)
    model.train()
    for step, batches in enumerate(itertools.islice(order, len(records), None), len(records) + 1):
        started = time.perf_counter()
        learning_rate = optimizer.param_groups[0]["lr"]
        value = sum(
            _accumulate_gradients(
                recipe, examples.buckets[bucket], indices, generator, config, len(batches), parallel
            )
            for bucket, indices in batches
        )
        parallel.sum_gradients(trainable.values())
        value = parallel.sum_value(value)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if not math.isfinite(value):
            raise FloatingPointError(f"training loss is {value} at step {step}; lower learning_rate")
        speed = sum(len(indices) for _, indices in batches) / max(time.perf_counter() - started, 1e-9)
        records.append(StepRecord(step, value, learning_rate, speed))
        at_checkpoint = config.checkpoint_every and step % config.checkpoint_every == 0
        if checkpoint_root is not None and at_checkpoint and parallel.is_main:
            saved = _save_training_checkpoint(
                recipe, trainable, optimizer, scheduler, generator, records, config, parallel, checkpoint_root
            )
            if on_checkpoint is not None:
                with preserved_random_states():
                    on_checkpoint(step, saved)
    model.eval()
    return records


def _accumulate_gradients(
    recipe: LoraRecipe,
    encoded: Any,
    indices: torch.Tensor,
    generator: torch.Generator,
    config: LoraTrainConfig,
    batches_per_step: int,
    parallel: DataParallel,
) -> float:
    """Add this process's part of one batch's share of the step's loss gradient to the LoRA's; returns
    that part of the loss.

    Each batch's mean loss is divided by the batches of the step, so the step's loss (and gradient) is
    the mean over its batches whatever their number; every process draws the whole batch's random
    numbers, and the mean over its own examples counts by their share of the batch.
    """
    draws = recipe.draw(encoded, indices, generator)
    mine = parallel.share(indices)
    if len(mine) == 0:
        return 0.0
    with autocast(config.mixed_precision, recipe.denoiser.device):
        loss = recipe.loss(encoded, indices[mine], tuple(draw[mine] for draw in draws))
        loss = loss * (len(mine) / len(indices)) / batches_per_step
    loss.backward()
    return float(loss.detach())


def _save_training_checkpoint(
    recipe: LoraRecipe,
    trainable: Mapping[str, torch.Tensor],
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    generator: torch.Generator,
    records: list[StepRecord],
    config: LoraTrainConfig,
    parallel: DataParallel,
    root: Path,
) -> Path:
    """A checkpoint of the run after its last record, with the adapter also in diffusers' format."""
    if config.checkpoints_total_limit is not None:
        prune_checkpoints(root, keep=config.checkpoints_total_limit - 1)  # room for the new one
    folder = checkpoint_folder(root, records[-1].step)
    recipe.save_adapter(folder)
    progress = {
        "step": records[-1].step,
        "records": [asdict(record) for record in records],
        "trajectory": _trajectory(config, parallel),
    }
    return save_checkpoint(folder, trainable, optimizer, scheduler, generator, progress)


@contextmanager
def preserved_random_states() -> Iterator[None]:
    """torch's, numpy's and Python's global random states after the block are those before it."""
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng():
        try:
            yield
        finally:
            random.setstate(python_state)
            np.random.set_state(numpy_state)


@contextmanager
def seeded_random_states(seed: int) -> Iterator[None]:
    """torch, numpy and Python seeded with ``seed`` inside; the caller's random states restored after."""
    import torch

    with preserved_random_states():
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        yield


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run with torch using ``count`` CPU threads, then restore the caller's setting."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def finetune_lora_adapter(
    model_path: str | Path,
    images: list[TrainingImage],
    config: LoraTrainConfig,
    adapter_path: str | Path,
    on_checkpoint: CheckpointCallback | None = None,
    parallel: DataParallel = DataParallel(),
) -> list[StepRecord]:
    """Train a LoRA for the pipeline at ``model_path`` on ``images`` and save it to ``adapter_path``, as
    process ``parallel`` of the data-parallel processes (the main one saves; it encodes first, so with an
    encoding cache the others read what it wrote).

    The family is ``config.family`` or, when None, the pipeline's (:func:`sciir.training.families.resolve_family`).
    Deterministic for a given ``config.seed``, resumed or not, with or without the encoding cache; the
    caller's random states are left untouched. Checkpoints live under ``adapter_path/checkpoints``; a run
    that does not resume removes those of an earlier run; ``on_checkpoint(step, folder)`` is called after
    each is saved (e.g. to draw validation images with it). Returns the record of each step.

    Raises:
        ValueError: ``images`` is empty, the family disagrees with the pipeline's, or the checkpoint to
            resume was saved with other settings.
        FileNotFoundError: ``config.resume_from_checkpoint`` names a folder that is not a checkpoint.
        ImportError: the optimiser's package is not installed.
    """
    from sciir.training.encoding_cache import encode_with_cache
    from sciir.training.families import load_family_recipe, resolve_family

    if not images:
        raise ValueError("no training images: LoRA fine-tuning needs at least one (image, caption) pair")
    family = resolve_family(model_path, config.family)
    check_optimizer_available(config.optimizer)
    checkpoint_root = Path(adapter_path) / CHECKPOINT_DIR
    if config.resume_from_checkpoint is None and parallel.is_main:
        # Checkpoints of an earlier run would be mistaken for this run's.
        shutil.rmtree(checkpoint_root, ignore_errors=True)
    resume_from = find_checkpoint(checkpoint_root, config.resume_from_checkpoint)
    config = config.model_copy(update={"family": family})
    with seeded_random_states(config.seed), torch_threads(config.cpu_threads):
        # The LoRA's initial weights come from torch's global generator, seeded above.
        recipe = load_family_recipe(family, model_path, config)
        for model in (recipe.denoiser, *recipe.encoders):
            model.to(config.device)
        with parallel.main_first():
            encoded = encode_with_cache(recipe, model_path, images, config)
        records = train_lora(
            recipe,
            encoded,
            config,
            checkpoint_root if config.checkpoint_every else None,
            resume_from,
            on_checkpoint,
            parallel,
        )
    if parallel.is_main:
        recipe.save_adapter(Path(adapter_path))
    return records
