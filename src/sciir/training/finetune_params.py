"""The finetune stage's parameters (``params:finetune``: a training run plus what it trains on and where the
base model and the adapter live) and the base pipeline folder they name."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from sciir.training.config import Family, LoraTrainConfig
from sciir.training.distributed import LaunchParams
from sciir.training.families import ensure_tiny_base, resolve_family

TINY_BASE_MODEL = "tiny"
# The family of the tiny pipeline when ``family`` is not set.
TINY_DEFAULT_FAMILY: Family = "noise_prediction"


class TrainDataParams(BaseModel):
    """``params:finetune.train_data``: what the LoRA is trained on. ``train_split``: bench_select's train
    split; ``release``: the train split of the release folder ``path`` (its images written into
    ``release_images`` for training); ``folder``: the image + caption pairs of the folder ``path``
    (``sciir.user_files.training_pairs``). ``path`` is required by a folder source and refused with
    ``train_split`` (it would otherwise be silently unused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["train_split", "release", "folder"] = "train_split"
    path: str | None = None
    release_images: str = "data/05_model_input/release_images"

    @model_validator(mode="after")
    def _path_matches_source(self) -> TrainDataParams:
        if self.source != "train_split" and not self.path:
            raise ValueError(f"train_data.source is {self.source!r} but train_data.path is not set")
        if self.source == "train_split" and self.path:
            raise ValueError(
                f"train_data.path is {self.path!r} but train_data.source is 'train_split': "
                "set train_data.source=release or folder"
            )
        return self


class CheckpointScoringParams(BaseModel):
    """``params:finetune.checkpoint_scoring``: what the adapter is scored on every ``eval_every`` steps. A
    fixed subset (``n_samples``, drawn by a hash of ``seed`` and each sample id) of bench_select's validation
    split (``validation_split``) or of a benchmark file (``benchmark_file``, ``path``), drawn by the generator
    ``generator`` of conf/base/backends.yml with the adapter in place of its own, and judged and scored as
    evaluate judges and scores (docs/finetune.md, "Checkpoints scored while training")."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["validation_split", "benchmark_file"] = "validation_split"
    path: str | None = None
    n_samples: PositiveInt = 2
    seed: int = 0
    generator: str = "tiny_diffusers_lora"
    # A sample the judge could not judge counts as failed (fail), so an adapter drawing what the judge cannot
    # read never wins; or, as evaluate's default, is left out of the pass rate (exclude).
    unjudged_policy: Literal["fail", "exclude"] = "fail"

    @model_validator(mode="after")
    def _path_matches_source(self) -> CheckpointScoringParams:
        if self.source == "benchmark_file" and not self.path:
            raise ValueError(
                "checkpoint_scoring.source is 'benchmark_file' but checkpoint_scoring.path is not set"
            )
        if self.source == "validation_split" and self.path:
            raise ValueError(
                f"checkpoint_scoring.path is {self.path!r} but checkpoint_scoring.source is 'validation_split': "
                "set checkpoint_scoring.source=benchmark_file"
            )
        return self


class FinetuneParams(LoraTrainConfig):
    """``params:finetune``: the training run plus what it trains on, where the base model and the adapter live."""

    train_data: TrainDataParams = TrainDataParams()
    base_model: str
    tiny_model_path: str
    adapter_path: str
    max_train_samples: PositiveInt
    # The MLflow registered model the adapter becomes a version of (None: not registered).
    registered_model: str | None = "sciir-lora"
    # Data-parallel training processes (sciir.training.distributed); one in all trains in this process.
    launch: LaunchParams = LaunchParams()
    # What the adapter is scored on every eval_every steps (sciir.training.scored_adapters).
    checkpoint_scoring: CheckpointScoringParams = Field(default_factory=CheckpointScoringParams)

    def training_config(self) -> LoraTrainConfig:
        """The training run's own settings, without where models live or how many processes run it."""
        return LoraTrainConfig.model_validate(self.model_dump(include=set(LoraTrainConfig.model_fields)))


def base_model_folder(config: FinetuneParams) -> str:
    """The base pipeline's folder: for ``base_model: tiny`` the tiny pipeline of ``family`` (noise
    prediction when unset), built when missing; otherwise a local diffusers folder whose pipeline class
    has a recipe of that family.

    Raises:
        FileNotFoundError: ``base_model`` is neither ``tiny`` nor a diffusers pipeline folder.
        ValueError: the folder's pipeline has no recipe, or is not of ``family``.
    """
    if config.base_model == TINY_BASE_MODEL:
        family = config.family or TINY_DEFAULT_FAMILY
        return str(ensure_tiny_base(config.tiny_model_path, family, config.seed))
    if not Path(config.base_model).is_dir():
        raise FileNotFoundError(
            f"finetune.base_model {config.base_model!r} is neither {TINY_BASE_MODEL!r} "
            "nor the folder of a local diffusers pipeline"
        )
    resolve_family(config.base_model, config.family)
    return config.base_model
