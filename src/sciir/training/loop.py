"""The optimiser loop of LoRA fine-tuning, the same for every model family, and a whole run from a pipeline
folder and images to a saved adapter.

A family (:mod:`sciir.training.families`: noise prediction for Stable-Diffusion-style UNets, flow matching for
Qwen-Image's transformer) says how its pipeline loads, which model gets the LoRA, how images and captions
are encoded and what the loss of a batch is (a :class:`sciir.training.recipe.LoraRecipe`). Everything else is
shared: images in (:mod:`sciir.training.training_images`), encodings computed once (and cached on disk,
:mod:`sciir.training.encoding_cache`), this loop with its learning-rate schedule, mixed precision and gradient
checkpointing (:mod:`sciir.training.resources`), checkpoints (:mod:`sciir.training.checkpoints`) that let a
stopped run resume to the very weights an uninterrupted run reaches, and the adapter saved as safetensors
that ``pipe.load_lora_weights(folder)`` reloads (:mod:`sciir.training.lora_adapter`).
"""

from __future__ import annotations

import itertools
import logging
import math
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sciir.training.checkpoints import (
    checkpoint_folder,
    find_checkpoint,
    load_checkpoint,
    prune_checkpoints,
    save_checkpoint,
)
from sciir.training.config import TRAJECTORY_FIELDS, LoraTrainConfig
from sciir.training.data_parallel import SINGLE_PROCESS, DataParallel
from sciir.training.encoding_cache import encode_with_cache
from sciir.training.families import load_family_recipe, resolve_family
from sciir.training.random_states import preserved_random_states, seeded_random_states
from sciir.training.recipe import LoraRecipe, as_buckets
from sciir.training.resources import (
    autocast,
    build_optimizer,
    check_optimizer_available,
    enable_gradient_checkpointing,
    torch_threads,
)
from sciir.training.scored_adapters import (
    AdapterScorer,
    is_scored_step,
    resume_scores,
    scored_folder,
    scored_root,
)
from sciir.training.training_images import TrainingImage

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

CHECKPOINT_DIR = "checkpoints"
# Called with the step and the folder of each checkpoint saved during training.
CheckpointCallback = Callable[[int, Path], None]
# A batch: its bucket and the indices of its examples within the bucket.
_Batch = tuple[int, "torch.Tensor"]


@dataclass(frozen=True)
class StepRecord:
    """What one optimisation step did; ``samples_per_second`` is a wall-clock measure (MLflow only)."""

    step: int
    loss: float
    learning_rate: float
    samples_per_second: float


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
    parallel: DataParallel = SINGLE_PROCESS,
    scored: Path | None = None,
    on_score: AdapterScorer | None = None,
) -> list[StepRecord]:
    """Optimise the LoRA of the recipe's denoiser up to step ``config.steps``, as process ``parallel`` of
    the data-parallel processes (checkpoints and callbacks in the main process only). ``encoded`` is
    :class:`sciir.training.recipe.BucketedExamples` or one recipe encoding (a single bucket).

    From ``resume_from`` (a checkpoint) the run continues at the step after the checkpoint's and
    reaches the weights an uninterrupted run reaches. Every ``config.checkpoint_every`` steps (when
    positive) a checkpoint is saved under ``checkpoint_root/checkpoint-<step>``, keeping the newest
    ``config.checkpoints_total_limit``, and ``on_checkpoint(step, folder)`` is called with it (its random
    draws do not touch the run's). With ``scored`` (a folder), every ``config.eval_every`` steps and at the
    last step the adapter is saved into ``scored/step-<step>`` and ``on_score(step, folder)`` is called with it
    (:mod:`sciir.training.scored_adapters`; a resumed run first scores again the folders of the steps before its
    checkpoint). Returns the record of every step, those before the checkpoint's included.

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
    if scored is not None and parallel.is_main:
        with preserved_random_states():
            resume_scores(scored, len(records), on_score)
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
        if scored is not None and parallel.is_main and is_scored_step(step, config.eval_every, config.steps):
            folder = recipe.save_adapter(scored_folder(scored, step))
            if on_score is not None:
                with preserved_random_states():
                    on_score(step, folder)
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


def finetune_lora_adapter(
    model_path: str | Path,
    images: list[TrainingImage],
    config: LoraTrainConfig,
    adapter_path: str | Path,
    on_checkpoint: CheckpointCallback | None = None,
    parallel: DataParallel = SINGLE_PROCESS,
    on_score: AdapterScorer | None = None,
) -> list[StepRecord]:
    """Train a LoRA for the pipeline at ``model_path`` on ``images`` and save it to ``adapter_path``, as
    process ``parallel`` of the data-parallel processes (the main one saves; it encodes first, so with an
    encoding cache the others read what it wrote).

    The family is ``config.family`` or, when None, the pipeline's
    (:func:`sciir.training.families.resolve_family`).
    Deterministic for a given ``config.seed``, resumed or not, with or without the encoding cache; the
    caller's random states are left untouched. Checkpoints live under ``adapter_path/checkpoints``; a run
    that does not resume removes those of an earlier run (and its scored adapters); ``on_checkpoint(step, folder)`` is called after
    each is saved (e.g. to draw validation images with it). With ``config.eval_every``, the adapters scored
    during training are saved under ``adapter_path/scored`` and ``on_score(step, folder)`` is called with
    each (:mod:`sciir.training.scored_adapters`). Returns the record of each step.

    Raises:
        ValueError: ``images`` is empty, the family disagrees with the pipeline's, or the checkpoint to
            resume was saved with other settings.
        FileNotFoundError: ``config.resume_from_checkpoint`` names a folder that is not a checkpoint.
        ImportError: the optimiser's package is not installed.
    """
    if not images:
        raise ValueError("no training images: LoRA fine-tuning needs at least one (image, caption) pair")
    family = resolve_family(model_path, config.family)
    check_optimizer_available(config.optimizer)
    checkpoint_root = Path(adapter_path) / CHECKPOINT_DIR
    if config.resume_from_checkpoint is None and parallel.is_main:
        # Checkpoints of an earlier run would be mistaken for this run's, and so would its scored adapters.
        shutil.rmtree(checkpoint_root, ignore_errors=True)
        shutil.rmtree(scored_root(adapter_path), ignore_errors=True)
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
            scored_root(adapter_path) if config.eval_every else None,
            on_score,
        )
    if parallel.is_main:
        recipe.save_adapter(Path(adapter_path))
    return records
