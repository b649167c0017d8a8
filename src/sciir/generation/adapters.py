"""Generators that load a LoRA adapter: each paired with the generator of its base model, so generate draws
both with the same prompts and seed and evaluate measures the fine-tuning effect (``generate.adapter_bases``);
and an adapter's generator drawing with another adapter in place of its own (finetune's scored checkpoints).

A base is honest only when it draws exactly as the adapter's generator does without the LoRA: the same
backend and every setting the same but ``lora_path``, which it does not set. Anything else would measure
the settings, not the fine-tuning, and is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sciir.backends.base import CONTESTANT, ImageGenerator
from sciir.backends.cache import CachedGenerator

logger = logging.getLogger(__name__)

LORA_SETTING = "lora_path"
BASES_SETTING = "params:generate.adapter_bases"


def plain_generator(generator: ImageGenerator) -> ImageGenerator:
    """The generator under its response cache (the backend itself, holding its settings in ``config``)."""
    return generator.inner if isinstance(generator, CachedGenerator) else generator  # type: ignore[return-value]


def lora_settings(name: str, generator: ImageGenerator) -> dict[str, Any]:
    """The settings of a generator that loads a LoRA adapter.

    Raises:
        ValueError: it loads none (no ``lora_path``), or it plans or selects (a wrapper, not a backend).
    """
    plain = plain_generator(generator)
    if not plain.config.get(LORA_SETTING):
        raise ValueError(
            f"generator {name} ({type(plain).__name__}) loads no LoRA adapter ({LORA_SETTING} in "
            "conf/base/backends.yml): it cannot draw with another adapter, nor have a base"
        )
    return dict(plain.config)


def with_adapter(name: str, generator: ImageGenerator, adapter: str | Path) -> ImageGenerator:
    """A new, uncached generator of ``name``'s class and settings that loads ``adapter`` instead of its own.

    Raises:
        ValueError: ``name`` loads no LoRA adapter (:func:`lora_settings`).
    """
    settings = lora_settings(name, generator) | {LORA_SETTING: str(adapter)}
    drawer = type(plain_generator(generator))(**settings)
    drawer.role = generator.role
    return drawer


def _base_differences(adapter: ImageGenerator, base: ImageGenerator) -> list[str]:
    """What makes ``base`` draw otherwise than ``adapter`` without its LoRA, in words (empty: nothing)."""
    adapter, base = plain_generator(adapter), plain_generator(base)
    if type(adapter) is not type(base):
        return [f"backend {type(base).__name__} != {type(adapter).__name__}"]
    found = (
        [f"{LORA_SETTING} {base.config[LORA_SETTING]!r} (a base loads none)"]
        if base.config.get(LORA_SETTING)
        else []
    )
    keys = sorted((set(adapter.config) | set(base.config)) - {LORA_SETTING})
    found += [
        f"{key}: {base.config.get(key)!r} != {adapter.config.get(key)!r}"
        for key in keys
        if base.config.get(key) != adapter.config.get(key)
    ]
    if base.role != CONTESTANT or adapter.role != CONTESTANT:
        found.append("both must be contestants (role)")
    return found


def checked_bases(generators: Mapping[str, ImageGenerator], bases: Mapping[str, str]) -> dict[str, str]:
    """The pairs of ``bases`` (adapter's generator -> its base's) whose adapter generator is configured,
    each checked to be honest (module docstring); a pair whose adapter generator is not configured is left
    out, with one log line.

    Raises:
        ValueError: a base that is not configured, an adapter generator that loads no LoRA, or a base that
            would draw otherwise than the adapter's generator without its LoRA (the message says how).
    """
    absent = sorted(adapter for adapter in bases if adapter not in generators)
    if absent:
        logger.info("%s: %s not among the configured generators: no base drawn for it", BASES_SETTING, absent)
    checked: dict[str, str] = {}
    for adapter, base in bases.items():
        if adapter in absent:
            continue
        if base not in generators:
            raise ValueError(
                f"{BASES_SETTING} names {base!r} as the base of {adapter}, but no generator of that name is "
                f"configured (conf/base/backends.yml); configured: {sorted(generators)}"
            )
        lora_settings(adapter, generators[adapter])
        differences = _base_differences(generators[adapter], generators[base])
        if differences:
            raise ValueError(
                f"{BASES_SETTING}: {base} is not {adapter} without its LoRA adapter, so their difference would "
                f"not be the fine-tuning's: {'; '.join(differences)}"
            )
        checked[adapter] = base
    return checked


def with_bases(
    selected: Mapping[str, ImageGenerator], generators: Mapping[str, ImageGenerator], bases: Mapping[str, str]
) -> dict[str, ImageGenerator]:
    """The ``selected`` generators plus the base of each selected adapter generator (``bases``, checked),
    each base drawn just before its first adapter; a base added is said in one log line."""
    drawn: dict[str, ImageGenerator] = {}
    for name, generator in selected.items():
        base = bases.get(name)
        if base is not None and base not in selected and base not in drawn:
            logger.info("generate: %s draws too, as the base of %s (%s)", base, name, BASES_SETTING)
            drawn[base] = generators[base]
        drawn[name] = generator
    return drawn
