"""The ratings queue: blind Likert ratings of generated images, for human_corr.

Filled from a folder of images (generate's ``<model>/<sample_id>.png``, or any folder: an image's key is its
path under the folder without the suffix, so ``<model>/<sample_id>`` for generate's) with each image's prompt
looked up by its file name in a benchmark table or file. Pages and URLs show an item's random ``public_id``
only, never its key or path. The answers come back as human_corr's ratings table (``image_id, rater_id,
score``: docs/human_corr.md), and the agreement between raters is ``sciir.stats``'s Krippendorff's alpha.
"""

from __future__ import annotations

import logging
import secrets
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from sciir.review.models import Item, Queue
from sciir.review.queue_store import Refused, ensure_queue, has_answers, queue_named
from sciir.review.ratings_table import NAME, ratings_table
from sciir.review.settings import RatingsSettings
from sciir.stats.agreement import Agreement, krippendorff_alpha, reliability_matrix
from sciir.user_files.benchmark_file import read_benchmark_file

logger = logging.getLogger(__name__)

KIND = "likert"
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp"})


class QueueSettingsError(ValueError):
    """Settings that would mix answers of two kinds in one queue (a new scale over old answers)."""


def queue_config(settings: RatingsSettings) -> dict[str, Any]:
    return {"scale": settings.scale, "raters_per_image": settings.raters_per_image, "seed": settings.seed}


def open_queue(session: Session, settings: RatingsSettings) -> Queue:
    """The ratings queue with these settings; QueueSettingsError when its answers were given on another scale."""
    queue = queue_named(session, NAME)
    if queue is not None and queue.config.get("scale") != settings.scale and has_answers(session, queue):
        raise QueueSettingsError(
            f"the ratings queue holds answers on a 1-{queue.config.get('scale')} scale; set ratings.scale back "
            f"to {queue.config.get('scale')} (or use another store) rather than mix them with 1-{settings.scale}"
        )
    return ensure_queue(session, NAME, KIND, queue_config(settings))


def image_files(folder: Path) -> dict[str, Path]:
    """Key -> file of every image under ``folder`` (hidden files and folders left out), sorted by key."""
    found = {
        path.relative_to(folder).with_suffix("").as_posix(): path
        for path in folder.rglob("*")
        if path.suffix.lower() in IMAGE_SUFFIXES
        and path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(folder).parts)
    }
    return dict(sorted(found.items()))


def prompts_of(benchmark: str | None) -> dict[str, str]:
    """Sample id -> prompt of a benchmark table (bench_select's parquet) or benchmark file; {} when absent."""
    if benchmark is None:
        return {}
    path = Path(benchmark)
    if not path.is_file():
        logger.warning("ratings queue: no benchmark at %s, so no prompts are shown", path)
        return {}
    table = pd.read_parquet(path) if path.suffix.lower() == ".parquet" else None
    if table is None or not {"sample_id", "prompt"} <= set(table.columns):
        # A benchmark file (one row per question, or JSON Lines): read as evaluate reads it.
        table = read_benchmark_file(path, "review ratings.benchmark").benchmark
    return {str(s): str(p) for s, p in zip(table["sample_id"], table["prompt"], strict=True) if pd.notna(p)}


def fill(session: Session, queue: Queue, folder: Path, prompts: dict[str, str]) -> int:
    """Add the images of ``folder`` the queue does not hold yet (by key); how many were added."""
    if not folder.is_dir():
        logger.warning("ratings queue: no image folder at %s", folder)
        return 0
    known = set(session.scalars(select(Item.key).where(Item.queue_id == queue.id)))
    added = 0
    for key, path in image_files(folder).items():
        if key in known:
            continue
        prompt = prompts.get(Path(key).name)
        session.add(
            Item(
                queue_id=queue.id,
                public_id=secrets.token_urlsafe(12),
                key=key,
                path=str(path.resolve()),
                prompt=prompt,
            )
        )
        added += 1
    session.flush()
    return added


def checked_score(raw: str | None, scale: int) -> int:
    """The score a form sent, as an integer of 1..scale; Refused otherwise (nothing is stored)."""
    try:
        score = int(raw or "")
    except ValueError:
        raise Refused(f"a score is a whole number from 1 to {scale}: nothing was stored", 400) from None
    if not 1 <= score <= scale:
        raise Refused(f"score {score} is outside the scale 1-{scale}: nothing was stored", 400)
    return score


def agreement(session: Session, settings: RatingsSettings) -> Agreement:
    """Krippendorff's alpha between the raters of the queue so far (NaN with the reason when not defined)."""
    table = ratings_table(session)
    if table.empty:
        return Agreement(
            "krippendorff_alpha", settings.agreement_level, float("nan"), 0, 0, 0, "", "no ratings yet"
        )
    return krippendorff_alpha(reliability_matrix(table).to_numpy(), settings.agreement_level, warn=False)
