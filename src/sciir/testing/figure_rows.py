"""Rows of the ``figures`` table (docs/data_contract.md) for tests that feed curate their own image files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sciir.figures.ids import figure_uid


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
