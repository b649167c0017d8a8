"""Ingest nodes: find the source articles, read them, decide licences, list every figure.

The source is made available by ``sciir.sources.prepare`` and read into the ``articles`` and ``figures``
tables by ``sciir.sources.article_tables``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from sciir.sources.article_tables import read_articles, table_counts
from sciir.sources.params import IngestParams
from sciir.sources.prepare import prepare_source_folder


def prepare_source(params: dict[str, Any]) -> str:
    """Make the configured source available locally and return its folder (``source_articles``)."""
    settings = IngestParams.model_validate(params)
    return str(prepare_source_folder(settings.source, settings.limits.file_limits()))


def ingest_articles(source_articles: str, params: dict[str, Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read every article folder under ``source_articles`` into the ``articles`` and ``figures`` tables."""
    settings = IngestParams.model_validate(params)
    return read_articles(Path(source_articles), settings.policy(), settings.limits)


def summarise_ingest(articles: pd.DataFrame, figures: pd.DataFrame) -> dict[str, float]:
    """Counts of articles and figures, for MLflow (``ingest_metrics``)."""
    return table_counts(articles, figures)
