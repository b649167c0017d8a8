"""Make the configured source available as a local folder of articles (the ``prepare_source`` node).

``embedded`` writes the generated sample; ``jats_folder`` reads a folder as it is, unpacking any PMC OA
packages lying in it; ``europepmc`` downloads into its folder and resumes there (sciir.sources.europepmc).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sciir.sample import write_embedded_sample
from sciir.sample.build import SAMPLE_VERSION
from sciir.sources.europepmc import download
from sciir.sources.packages import PackageLimits, unpack_packages
from sciir.sources.params import FileLimits, SourceParams

logger = logging.getLogger(__name__)


def _manifest_key(folder: Path) -> tuple[Any, Any, Any] | None:
    """Seed, generator version and copies recorded in the sample's MANIFEST.json; None when unreadable."""
    try:
        manifest = json.loads((folder / "MANIFEST.json").read_text(encoding="utf-8"))
        return manifest.get("seed"), manifest.get("version"), manifest.get("copies", 1)
    except (OSError, ValueError, AttributeError):
        return None


def _prepare_embedded(source: SourceParams, limits: FileLimits) -> Path:
    """Generate the embedded sample unless one of the same seed and copies, by this generator version, is
    there."""
    folder = Path(source.path)
    if _manifest_key(folder) != (source.seed, SAMPLE_VERSION, source.copies):
        logger.info(
            "Writing the embedded sample (seed %d, %d copies) to %s", source.seed, source.copies, folder
        )
        write_embedded_sample(folder, source.seed, source.copies, processes=os.cpu_count() or 1)
    return folder


def _prepare_jats_folder(source: SourceParams, limits: FileLimits) -> Path:
    """A folder of ``<article>/*.xml`` (or ``.nxml``) plus images, with its ``.tar.gz`` packages unpacked."""
    folder = Path(source.path)
    if not folder.is_dir():
        raise FileNotFoundError(f"ingest source folder {folder} does not exist")
    unpack_packages(folder, PackageLimits.of(limits))
    return folder


def _prepare_europepmc(source: SourceParams, limits: FileLimits) -> Path:
    """Download from Europe PMC into the source folder, continuing an earlier download there."""
    folder = Path(source.path)
    download(source.europepmc, folder, limits)
    return folder


_PREPARERS: dict[str, Callable[[SourceParams, FileLimits], Path]] = {
    "embedded": _prepare_embedded,
    "jats_folder": _prepare_jats_folder,
    "europepmc": _prepare_europepmc,
}


def prepare_source_folder(source: SourceParams, limits: FileLimits) -> Path:
    """The folder of articles the configured source provides, made ready to read."""
    if source.kind not in _PREPARERS:
        raise ValueError(f"unknown ingest source kind {source.kind!r}; known: {sorted(_PREPARERS)}")
    return _PREPARERS[source.kind](source, limits)
