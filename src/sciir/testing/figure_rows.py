"""Rows of the ``figures`` table (docs/data_contract.md) for tests that feed curate their own image files, and
curate's kept panels for tests and benchmarks that feed the screen and annotate their own."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from sciir.figures.ids import figure_uid
from sciir.images.payload import ImageFile, encode

METHODS = (
    "We measured the flux through each stage of the pathway under three conditions. Samples were "
    "prepared in triplicate, labelled and imaged; the figure summarises the protocol and its result. "
)


def kept_figure_row(doi: str, article_id: str, figure_id: str, image_path: Path) -> dict[str, Any]:
    """A kept CC BY 4.0 figure of article ``article_id`` whose image is ``image_path``."""
    return {
        "figure_uid": figure_uid(doi, figure_id),
        "article_id": article_id,
        "doi": doi,
        "url": f"https://doi.org/{doi}",
        "figure_id": figure_id,
        "label": figure_id,
        "caption": f"Caption of {figure_id}.",
        "image_path": str(image_path),
        "licence_name": "CC BY 4.0",
        "licence_url": "http://creativecommons.org/licenses/by/4.0/",
        "status": "kept",
        "reason": None,
    }


def kept_panels(count: int, prefix: str = "s", methods_repeat: int = 1) -> pd.DataFrame:
    """``count`` kept panels with the columns the screen and annotate read, each caption distinct (so no
    request repeats another); the methods text is ``METHODS`` ``methods_repeat`` times."""
    rows = [
        {
            "sample_id": f"{prefix}{n:05d}-p0",
            "figure_uid": f"{prefix}{n:05d}",
            "panel_index": 0,
            "n_panels": 1,
            "caption": f"Figure {n}: the citric acid cycle, from Glucose to NADH, at stage {n}.",
            "methods_text": f"Experiment {n}. " + METHODS * methods_repeat,
            "status": "kept",
            "reason": None,
            "doi": f"10.5555/bench.{n}",
            "figure_id": f"fig{n}",
        }
        for n in range(count)
    ]
    return pd.DataFrame(rows)


def white_images(sample_ids: Iterable[str], side: int = 32) -> dict[str, ImageFile]:
    """One small white PNG per sample, as the catalog's partitioned images hand them over."""
    png = encode(Image.new("RGB", (side, side), "white"), "png")
    return {sample: ImageFile.of_bytes(png, f"{sample}.png") for sample in sample_ids}
