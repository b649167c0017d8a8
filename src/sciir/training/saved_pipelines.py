"""Locally built pipelines saved once and reused: a marker file, written last, says which build a folder
holds (its format version and seed), so a folder whose save was interrupted or that another build wrote is
rebuilt, and an up-to-date one is never built again."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def holds(folder: str | Path, marker_file: str, marker: dict[str, Any]) -> bool:
    """Whether ``folder`` holds a complete save whose marker is ``marker``."""
    try:
        return json.loads((Path(folder) / marker_file).read_text()) == marker
    except (OSError, ValueError):
        return False


def save_marked(
    folder: str | Path, marker_file: str, marker: dict[str, Any], build: Callable[[], Any]
) -> Path:
    """``build()``'s pipeline saved in ``folder`` (safetensors) so ``from_pretrained(folder)`` loads it
    offline, its marker written last."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / marker_file).unlink(missing_ok=True)
    build().save_pretrained(folder, safe_serialization=True)
    (folder / marker_file).write_text(json.dumps(marker) + "\n")
    return folder


def ensure_marked(
    folder: str | Path, marker_file: str, marker: dict[str, Any], build: Callable[[], Any]
) -> Path:
    """The save in ``folder``, built only when absent, incomplete or of another build."""
    return (
        Path(folder)
        if holds(folder, marker_file, marker)
        else save_marked(folder, marker_file, marker, build)
    )
