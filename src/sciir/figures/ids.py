"""Stable identifiers that join every stage."""

from __future__ import annotations

import hashlib
import re


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def figure_uid(doi: str, figure_id: str) -> str:
    """Identifier of one source figure: readable slug plus a short hash of DOI and figure id."""
    digest = hashlib.sha1(f"{doi}|{figure_id}".encode()).hexdigest()[:8]
    return f"{_slug(figure_id)[:24]}-{digest}"


def sample_id(doi: str, figure_id: str, panel_index: int) -> str:
    """Identifier of one sample (a panel of a figure), stable across runs and stages."""
    return f"{figure_uid(doi, figure_id)}-p{panel_index}"
