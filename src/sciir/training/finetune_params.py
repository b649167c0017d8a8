"""The finetune stage's parameters (``params:finetune``: a training run plus where the base model and the
adapter live) and the base pipeline folder they name."""

from __future__ import annotations

from pathlib import Path

from pydantic import PositiveInt

from sciir.training.config import Family, LoraTrainConfig
from sciir.training.distributed import LaunchParams
from sciir.training.families import ensure_tiny_base, resolve_family

TINY_BASE_MODEL = "tiny"
# The family of the tiny pipeline when ``family`` is not set.
TINY_DEFAULT_FAMILY: Family = "noise_prediction"


class FinetuneParams(LoraTrainConfig):
    """``params:finetune``: the training run plus where the base model and the adapter live."""

    base_model: str
    tiny_model_path: str
    adapter_path: str
    max_train_samples: PositiveInt
    # The MLflow registered model the adapter becomes a version of (None: not registered).
    registered_model: str | None = "sciir-lora"
    # Data-parallel training processes (sciir.training.distributed); one in all trains in this process.
    launch: LaunchParams = LaunchParams()

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
