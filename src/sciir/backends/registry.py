"""Lazy registry: backend names map to ``"module:Class"`` strings, imported only when built."""

from __future__ import annotations

import difflib
import importlib
from typing import Any, Literal, overload

from sciir.backends.base import Backend, ImageGenerator, VisionLanguageModel

Kind = Literal["vlm", "generator"]

_REGISTRY: dict[Kind, dict[str, str]] = {
    "vlm": {
        "offline": "sciir.backends.offline:OfflineVLM",
        "ocr": "sciir.backends.ocr:OcrVLM",
        "openai": "sciir.backends.openai_compat:OpenAICompatibleVLM",
        "transformers": "sciir.backends.transformers_vlm:TransformersVLM",
    },
    "generator": {
        "programmatic": "sciir.backends.programmatic:ProgrammaticGenerator",
        "plan_reference": "sciir.backends.plan_reference:PlanReferenceRenderer",
        "diffusers": "sciir.backends.diffusers_gen:DiffusersGenerator",
        "openai_images": "sciir.backends.openai_images:OpenAIImagesGenerator",
    },
}

_BASES: dict[Kind, type[Backend]] = {"vlm": VisionLanguageModel, "generator": ImageGenerator}


class UnknownBackendError(KeyError):
    """Raised for a backend name that is not registered, with close matches."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plainly
        return str(self.args[0])


def registered_backends(kind: Kind) -> list[str]:
    return sorted(_REGISTRY[kind])


def register_backend(kind: Kind, name: str, target: str) -> None:
    """Register ``name`` -> ``"module:Class"`` (plugins and tests add their own backends)."""
    if ":" not in target:
        raise ValueError(f"backend target {target!r} must look like 'package.module:ClassName'")
    _REGISTRY[kind][name] = target


@overload
def resolve_backend(kind: Literal["vlm"], name: str) -> type[VisionLanguageModel]: ...
@overload
def resolve_backend(kind: Literal["generator"], name: str) -> type[ImageGenerator]: ...
@overload
def resolve_backend(kind: Kind, name: str) -> type[VisionLanguageModel] | type[ImageGenerator]: ...
def resolve_backend(kind: Kind, name: str) -> type[Backend]:
    """Import the class registered as ``name`` and check it implements the ``kind`` interface."""
    if kind not in _REGISTRY:
        raise ValueError(f"unknown backend kind {kind!r}; expected one of {sorted(_REGISTRY)}")
    try:
        target = _REGISTRY[kind][name]
    except KeyError:
        close = difflib.get_close_matches(name, _REGISTRY[kind], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UnknownBackendError(
            f"no {kind} backend named {name!r} (registered: {', '.join(registered_backends(kind))}){hint}"
        ) from None
    module_name, class_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, _BASES[kind])):
        raise TypeError(f"{target} is registered as a {kind} backend but is not a {_BASES[kind].__name__}")
    return cls


@overload
def build_backend(kind: Literal["vlm"], name: str, **config: Any) -> VisionLanguageModel: ...
@overload
def build_backend(kind: Literal["generator"], name: str, **config: Any) -> ImageGenerator: ...
@overload
def build_backend(kind: Kind, name: str, **config: Any) -> VisionLanguageModel | ImageGenerator: ...
def build_backend(kind: Kind, name: str, **config: Any) -> Backend:
    """Build the backend registered as ``name`` with its configuration."""
    return resolve_backend(kind, name)(**config)
