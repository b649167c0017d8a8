"""Sanity baselines beside the contestants of every benchmark, scored like them and never ranked.

- ``blank``: a white image for every sample (``evaluate.blank``), made here, so it runs for a folder of
  the user's images as for the generations; of the size of the sample's images (the first model's in
  name order, read from its header) unless ``width`` and ``height`` are set. It is a *reference* (role
  ``reference``), named ``blank``: it shows what the judge makes of an image that shows nothing. A judge
  that passes it cannot be trusted with the contestants, so when its SciIR score (the primary rule's
  ``final``) is above ``warn_above``, or the AIBench solver claims to see something in more than
  ``warn_above`` of its answers about it (a "yes", or an option other than the insufficient-information
  one), a warning is logged and the report says so.
- the papers' own figures, or any images the user gives as references: the model folders named in
  ``evaluate.reference_models`` (default ``reference``: ``<images>/reference/<sample_id>.png``) are
  references too, whatever the generation manifest says.

A model folder of the user's named ``blank`` is the user's: it is judged as it is, and no white images
are made.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

import pandas as pd
from PIL import Image

from sciir.backends.base import REFERENCE
from sciir.evaluation.generated_images import ImageLoaders, image_models
from sciir.evaluation.params import BlankBaseline, EvaluateParams
from sciir.images.conversion_workers import HEAD_BYTES
from sciir.images.payload import image_file, read_header

logger = logging.getLogger(__name__)

BLANK = "blank"
DEFAULT_BLANK_SIZE = (1024, 1024)  # a blank's size when its sample has no readable image to take it from


def with_blank(images: ImageLoaders, sample_ids: Iterable[str], settings: BlankBaseline) -> ImageLoaders:
    """The images and, when the blank baseline is enabled and no model is named ``blank``, a white image
    for each sample (made when it is read): of ``settings``' size, or of the size of the sample's first
    image when none is set."""
    if not settings.enabled:
        return images
    if BLANK in image_models(images):
        logger.info("a model folder is named %s: it is judged as it is, and no white images are made", BLANK)
        return images
    sample_ids = list(sample_ids)
    if settings.width and settings.height:
        white = partial(Image.new, "RGB", (settings.width, settings.height), "white")
        return {**images, **{f"{BLANK}/{sample_id}": white for sample_id in sample_ids}}
    first = _first_images(images, sample_ids)
    blanks = {f"{BLANK}/{sample_id}": partial(_white_like, first.get(sample_id)) for sample_id in sample_ids}
    return {**images, **blanks}


def _first_images(images: ImageLoaders, sample_ids: list[str]) -> dict[str, Any]:
    """Sample -> the entry of its image in the first model folder (name order) that has one."""
    wanted, first = set(sample_ids), {}
    for key in sorted(images):
        sample = key.partition("/")[2]
        if sample in wanted and sample not in first:
            first[sample] = images[key]
    return first


def _white_like(entry: Any) -> Image.Image:
    """A white image of the size of ``entry``'s image (its header only is read), or of
    ``DEFAULT_BLANK_SIZE`` when there is none or it cannot be read (its own judging says why)."""
    size = DEFAULT_BLANK_SIZE
    if entry is not None:
        try:
            handle = image_file(entry)
            size = read_header(handle.head(HEAD_BYTES), handle.name).size
        except (OSError, ValueError):
            pass
    return Image.new("RGB", size, "white")


def baseline_roles(config: EvaluateParams) -> dict[str, str]:
    """Model -> ``reference`` for the blank baseline (when enabled) and the reference folders."""
    roles: dict[str, str] = dict.fromkeys(config.reference_models, REFERENCE)
    return roles | ({BLANK: REFERENCE} if config.blank.enabled else {})


def blank_score(leaderboard: pd.DataFrame, rule: str) -> float:
    """The blank baseline's ``final`` score under ``rule`` (NaN when it has none)."""
    rows = leaderboard[(leaderboard["model"] == BLANK) & (leaderboard["aggregation"] == rule)]
    return float(rows["final"].iloc[0]) if len(rows) and pd.notna(rows["final"].iloc[0]) else math.nan


def blank_warning(leaderboard: pd.DataFrame, config: EvaluateParams) -> str | None:
    """The warning to log (and show in the report) when the judge passes blank images, else None."""
    score = blank_score(leaderboard, config.primary_rule)
    if not score > config.blank.warn_above:
        return None
    return (
        f"the judge passes blank images: {BLANK} (white, {config.blank.width}x{config.blank.height}) scores "
        f"{score:.2f} final under {config.primary_rule}, above evaluate.blank.warn_above "
        f"{config.blank.warn_above:.2f}; its verdicts on the contestants' images are not to be trusted"
    )


def blank_claim_rate(answers: pd.DataFrame) -> tuple[int, int]:
    """Of the AIBench solver's answers about the blank images, how many claim something is shown (a
    "yes", or an option other than the insufficient-information one), and how many were given."""
    given = answers[(answers["model"] == BLANK) & (answers["status"] == "answered")]
    chose_option = given["insufficient"].eq(False).fillna(False) if "insufficient" in given else False
    claims = (given["answer"] == "yes") | chose_option
    return int(claims.sum()), len(given)


def blank_answers_warning(answers: pd.DataFrame, config: EvaluateParams) -> str | None:
    """The warning to log when the AIBench solver sees things in blank images, else None."""
    claims, given = blank_claim_rate(answers)
    if not given or claims / given <= config.blank.warn_above:
        return None
    return (
        f"the AIBench solver sees things in blank images: of its {given} answers about {BLANK} (white), "
        f"{claims} ({claims / given:.0%}) say something is shown (a yes, or an option other than the "
        f"insufficient-information one), above evaluate.blank.warn_above {config.blank.warn_above:.2f}; "
        "its answers about the contestants' images are not to be trusted"
    )


def log_warning(message: str | None) -> None:
    if message is not None:
        logger.warning("%s", message)


def roles_with_baselines(roles: Mapping[str, str], config: EvaluateParams) -> dict[str, str]:
    """``roles`` (from a generation manifest) with the sanity baselines' roles added."""
    return {**roles, **baseline_roles(config)}
