"""Leakage control between SciIR-Bench and the train split (SciIR appendix C).

A benchmark figure must not be trained on in any form: not the same sample, not another panel of the same
source figure, not a near-duplicate image (a resized or recompressed copy, the same figure in another
article). Each is found from keys that do not come from the split or from sample ids: the source figure
from the curated table's article (DOI, else URL) and figure id, the image from its pixels (perceptual hash,
``sciir.figures.near_duplicates``). The same search removes the leaks when the split is made and then checks the
finished split, so the check never trusts how the split was built.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from sciir.figures.near_duplicates import copies_of, parse_hashes, phash
from sciir.images.payload import UnreadableImageFile, image_file

logger = logging.getLogger(__name__)

LEAK_COLUMNS = ("sample_id", "reason", "benchmark_sample_id", "detail")
SAME_SAMPLE = "same sample"
SAME_FIGURE = "same source figure"
NEAR_DUPLICATE = "near-duplicate image"
_DOI_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "doi:")


class LeakageError(ValueError):
    """A benchmark sample would also be trained on, in some form."""


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value).strip()


def source_article(doi: Any, url: Any) -> str | None:
    """The source article of a panel: its DOI without resolver prefix, in lower case; else its URL. None
    when both are unknown."""
    article = _text(doi).lower()
    for prefix in _DOI_PREFIXES:
        article = article.removeprefix(prefix)
    return article or _text(url) or None


def source_figure(doi: Any, url: Any, figure_id: Any) -> str | None:
    """The source figure of a panel: its article (``source_article``) and the figure's id within it. None
    when the article or the figure id is unknown."""
    article = source_article(doi, url)
    figure = _text(figure_id)
    return f"{article}#{figure}" if article and figure else None


def source_figures(curated: pd.DataFrame) -> dict[str, str]:
    """sample id -> source figure, for every curated panel whose source is known."""
    keys = {
        str(row.sample_id): source_figure(row.doi, row.url, row.figure_id)
        for row in curated[["sample_id", "doi", "url", "figure_id"]].itertuples(index=False)
    }
    return {sample: key for sample, key in keys.items() if key is not None}


def source_articles(curated: pd.DataFrame) -> dict[str, str]:
    """sample id -> source article, for every curated panel whose article is known."""
    keys = {
        str(sample): source_article(doi, url)
        for sample, doi, url in zip(curated["sample_id"], curated["doi"], curated["url"], strict=True)
    }
    return {sample: key for sample, key in keys.items() if key is not None}


def curated_hashes(curated: pd.DataFrame) -> dict[str, int]:
    """sample id -> the perceptual hash curate took of the panel's pixels (kept rows that have one)."""
    if "phash" not in curated.columns:
        return {}
    values = parse_hashes(curated["phash"])
    return {str(sample): value for sample, value in zip(curated["sample_id"], values, strict=True) if value}


def image_hashes(
    images: Mapping[str, Any], sample_ids: Iterable[str], known: Mapping[str, int] | None = None
) -> dict[str, int]:
    """sample id -> perceptual hash of its image: ``known`` (curate's), else hashed from the image, for
    the samples that have one."""
    hashes: dict[str, int] = {}
    for sample in sample_ids:
        if known and sample in known:
            hashes[sample] = known[sample]
            continue
        if sample not in images:
            continue
        try:
            hashes[sample] = phash(image_file(images[sample]).image())
        except UnreadableImageFile as error:
            logger.warning("leakage check: %s (not compared by pixels)", error)
    return hashes


@dataclass(frozen=True)
class LeakSources:
    """What the search compares: source figures and image hashes by sample id, and the hash distance
    within which two images are copies of one another."""

    figures: Mapping[str, str]
    hashes: Mapping[str, int]
    max_distance: int


def _near_copies(train: Sequence[str], benchmark: Sequence[str], sources: LeakSources) -> dict[str, tuple]:
    matches = copies_of(
        [sources.hashes.get(sample) for sample in benchmark],
        [sources.hashes.get(sample) for sample in train],
        sources.max_distance,
    )
    return {
        sample: (benchmark[match[0]], f"{match[1]} of 64 bits apart")
        for sample, match in zip(train, matches, strict=True)
        if match is not None
    }


def find_leaks(train_ids: Iterable[str], benchmark_ids: Iterable[str], sources: LeakSources) -> pd.DataFrame:
    """One row per train sample that leaks a benchmark sample (``LEAK_COLUMNS``), the first reason that
    holds: the same sample, the same source figure, a near-duplicate image."""
    train, benchmark = sorted(set(train_ids)), sorted(set(benchmark_ids))
    held_out = set(benchmark)
    by_figure = {sources.figures[sample]: sample for sample in benchmark if sample in sources.figures}
    copies = _near_copies([sample for sample in train if sample not in held_out], benchmark, sources)
    rows = []
    for sample in train:
        figure = sources.figures.get(sample)
        if sample in held_out:
            rows.append((sample, SAME_SAMPLE, sample, ""))
        elif figure in by_figure:
            rows.append((sample, SAME_FIGURE, by_figure[figure], figure))
        elif sample in copies:
            rows.append((sample, NEAR_DUPLICATE, *copies[sample]))
    return pd.DataFrame(rows, columns=list(LEAK_COLUMNS))


def assert_no_leakage(train_ids: Iterable[str], benchmark_ids: Iterable[str], sources: LeakSources) -> None:
    """Raise LeakageError naming every train sample that leaks a benchmark sample, and how."""
    leaks = find_leaks(train_ids, benchmark_ids, sources)
    if not leaks.empty:
        shown = "; ".join(
            f"{row.sample_id} ({row.reason} as {row.benchmark_sample_id})"
            for row in leaks.head(10).itertuples(index=False)
        )
        raise LeakageError(f"{len(leaks)} train samples leak benchmark samples: {shown}")
