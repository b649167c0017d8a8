"""Which LoRA recipe trains which diffusers pipeline, and the tiny stand-in pipeline of each family.

Two families: ``noise_prediction`` (a UNet predicting the added noise, DDPM objective: Stable Diffusion
1.x/2.x, SDXL) and ``flow_matching`` (a transformer predicting the rectified-flow velocity: Qwen-Image,
SD3, Flux), each pipeline class with its recipe. A pipeline's family is read from its class name in ``model_index.json``. Recipes and tiny
builders are named as ``"module:function"`` strings, imported only when used, so this module pulls in no
torch.
"""

from __future__ import annotations

import importlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sciir.training.config import Family, LoraTrainConfig
from sciir.training.recipe import LoraRecipe

FAMILIES: tuple[Family, ...] = ("noise_prediction", "flow_matching")
# Each pipeline class trained: its family and its recipe.
PIPELINE_RECIPES: dict[str, tuple[Family, str]] = {
    "StableDiffusionPipeline": ("noise_prediction", "sciir.training.noise_prediction:load_recipe"),
    "StableDiffusionXLPipeline": ("noise_prediction", "sciir.training.noise_prediction:load_recipe"),
    "QwenImagePipeline": ("flow_matching", "sciir.training.flow_matching:load_recipe"),
    "FluxPipeline": ("flow_matching", "sciir.training.flux:load_recipe"),
    "StableDiffusion3Pipeline": ("flow_matching", "sciir.training.sd3:load_recipe"),
}
# Each family's tiny pipeline builder; its module's MARKER_FILE marks a folder it saved.
TINY_BUILDERS: dict[Family, str] = {
    "noise_prediction": "sciir.training.tiny_stable_diffusion:ensure_tiny_pipeline",
    "flow_matching": "sciir.training.tiny_qwen_image:ensure_tiny_flow_pipeline",
}


def _imported(target: str) -> Callable[..., Any]:
    module, name = target.split(":")
    return getattr(importlib.import_module(module), name)


def pipeline_class(model_path: str | Path) -> str:
    """The pipeline class a diffusers folder names in its ``model_index.json``.

    Raises:
        FileNotFoundError: the folder has no ``model_index.json``.
        ValueError: the file names no class.
    """
    index = Path(model_path) / "model_index.json"
    if not index.is_file():
        raise FileNotFoundError(f"{model_path} is not a diffusers pipeline folder (no model_index.json)")
    name = json.loads(index.read_text()).get("_class_name")
    if not isinstance(name, str):
        raise ValueError(f"{index} names no pipeline class (_class_name)")
    return name


def resolve_family(model_path: str | Path, requested: Family | None) -> Family:
    """The family of the pipeline at ``model_path``, checked against ``requested`` when one is given.

    Raises:
        ValueError: the pipeline's class has no recipe, or its family is not ``requested``.
    """
    name = pipeline_class(model_path)
    if name not in PIPELINE_RECIPES:
        supported = ", ".join(f"{cls} ({family})" for cls, (family, _) in PIPELINE_RECIPES.items())
        raise ValueError(
            f"finetune base model {model_path}: {name} is of no known family; supported: {supported}"
        )
    family = PIPELINE_RECIPES[name][0]
    if requested is not None and requested != family:
        raise ValueError(
            f"finetune.family is {requested!r} but the base model {model_path} is a {name} ({family})"
        )
    return family


def load_family_recipe(family: Family, model_path: str | Path, config: LoraTrainConfig) -> LoraRecipe:
    """The recipe of ``family`` for the pipeline at ``model_path``, its denoiser carrying a fresh LoRA.

    Raises:
        ValueError: the pipeline's class has no recipe, or its family is not ``family``.
    """
    resolve_family(model_path, family)
    return _imported(PIPELINE_RECIPES[pipeline_class(model_path)][1])(model_path, config)


def ensure_tiny_base(folder: str | Path, family: Family, seed: int) -> Path:
    """The family's tiny pipeline in ``folder``, built when missing. A tiny pipeline of the other family
    found there is removed first, so the two never mix in one folder.

    Raises:
        ValueError: ``family`` is not a family.
    """
    if family not in TINY_BUILDERS:
        raise ValueError(f"finetune.family {family!r} is unknown (expected one of {list(FAMILIES)})")
    for other, builder in TINY_BUILDERS.items():
        marker = importlib.import_module(builder.split(":")[0]).MARKER_FILE
        if other != family and (Path(folder) / marker).is_file():
            shutil.rmtree(folder)
    return _imported(TINY_BUILDERS[family])(folder, seed)
