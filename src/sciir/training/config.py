"""The settings of one LoRA training run (:class:`LoraTrainConfig`), read from parameters and never changed
during the run, and the names of its options that the loop, the families and the cache share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

Family = Literal["noise_prediction", "flow_matching"]
TimestepDensity = Literal["logit_normal", "uniform"]
LossWeighting = Literal["none", "sigma_sqrt", "cosmap"]
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
    # Save the adapter every N steps (and at the last step) for a scorer to score (0: never); scoring draws
    # nothing from the run's random numbers, so it does not shape the run (sciir.training.scored_adapters).
    eval_every: NonNegativeInt = 0
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
