"""Curate nodes: split kept figures into panels, apply the geometric rules, standardise the survivors.

Every kept figure yields at least one ``curated`` row (``sciir.figures.curated_rows``): one per panel
region found, kept or rejected with its reason, or a single rejected row when the image cannot be read
or holds no content.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from sciir.figures.curated_rows import panel_counts, warn_if_no_panel_kept
from sciir.figures.params import CurateParams
from sciir.figures.shard_cluster import curate_in_shards
from sciir.images.payload import ImageFile


def curate_figures(
    figures: pd.DataFrame, articles: pd.DataFrame, params: dict[str, Any]
) -> tuple[pd.DataFrame, dict[str, ImageFile]]:
    """Split, filter and standardise every kept figure (``curated``, ``curated_images``).

    Figures are curated in shards on Dask (``sciir.figures.shard_cluster``), each figure in a worker's
    child process under a time and memory limit, so a file that crashes or hangs its decoder is rejected
    with the reason and the run goes on. Each shard's images and rows are written to the shard folder as
    it finishes, and a rerun after a crash computes only the shards not finished. The node returns the
    table and lazy handles on the written images (no image bytes). Figures rejected by ingest are not
    listed again: their reasons stay in ``figures``.
    """
    settings = CurateParams.model_validate(params)
    methods_by_article = dict(zip(articles["article_id"], articles["methods_text"], strict=True))
    rows = figures[figures["status"] == "kept"].to_dict("records")
    kept = cast("list[dict[str, Any]]", rows)  # the table's columns are named by text
    methods = [methods_by_article.get(figure["article_id"]) for figure in kept]
    return curate_in_shards(kept, methods, settings)


def summarise_curate(curated: pd.DataFrame) -> dict[str, float]:
    """Counts of panel rows by status, for MLflow and DVC (``curate_metrics``): kept, rejected and awaiting
    a person's review in the queue, which is neither kept nor rejected yet; a warning when none is kept."""
    counts = panel_counts(curated)
    warn_if_no_panel_kept(curated)
    return counts
