"""The filtering node: caption privacy cues, near-duplicates, the VLM screen, manual review and spot check.

It takes the panel table ``curate_figures`` wrote and returns the final ``curated`` table, in which a
panel is ``kept``, ``rejected`` (with the reason) or ``review`` (waiting for a person's decision in the
review queue), and the queue itself. Panels rejected earlier keep their rows and reasons.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any, cast

import pandas as pd
from PIL import Image

from sciir.backends.base import VisionLanguageModel, VLMResult
from sciir.figures.near_duplicates import first_copies, hex_hash, phash
from sciir.figures.params import CurateParams
from sciir.figures.privacy import caption_cue
from sciir.figures.review import (
    LOW_CONFIDENCE,
    REVIEW_COLUMNS,
    SPOT_CHECK,
    SpotCheckRate,
    read_decisions,
    spot_check_sample,
    table_decisions,
)
from sciir.images.payload import image_file
from sciir.runs.progress import Progress
from sciir.tasks.screen import Verdict, routed, screen_request, verdict_of

logger = logging.getLogger(__name__)
SCREEN_COLUMNS = ["phash", "screen_decision", "screen_confidence", "screen_reason"]


def _reject(table: pd.DataFrame, index: Any, reason: str) -> None:
    table.loc[index, ["status", "reason", "changes"]] = ["rejected", reason, None]


def _where(row: pd.Series) -> str:
    return f"panel {row['panel_index']} of {row['figure_id']} in {row['doi']}"


def _kept(table: pd.DataFrame) -> pd.Index:
    return table.index[table["status"] == "kept"]


def _sample_id(table: pd.DataFrame, index: Any) -> str:
    """The sample id of the panel at ``index`` (a text column; pandas-stubs types a cell as any scalar)."""
    return cast(str, table.at[index, "sample_id"])


def reject_caption_cues(table: pd.DataFrame, settings: CurateParams) -> None:
    """Default deny: a kept panel whose caption holds a clinical or patient cue is rejected with the cue."""
    for index in _kept(table):
        cue = caption_cue(str(table.at[index, "caption"] or ""), settings.privacy.caption_cues)
        if cue:
            _reject(table, index, f'{_where(table.loc[index])}: privacy: caption cue "{cue}"')


def _panel_image(images: dict[str, Any], sample_id: str) -> Image.Image:
    return Image.open(io.BytesIO(image_file(images[sample_id]).read()))


def reject_near_duplicates(table: pd.DataFrame, images: dict[str, Any], max_distance: int) -> None:
    """Hash every kept panel; a later near-copy of an earlier kept panel is rejected naming the original."""
    kept = list(_kept(table))
    hashes = [phash(_panel_image(images, _sample_id(table, index))) for index in kept]
    for index, value in zip(kept, hashes, strict=True):
        table.at[index, "phash"] = hex_hash(value)
    for index, copy in zip(kept, first_copies(hashes, max_distance), strict=True):
        if copy is not None:
            original, distance = kept[copy[0]], copy[1]
            reason = (
                f"{_where(table.loc[index])}: near-duplicate of {_sample_id(table, original)} "
                f"(pHash distance {distance} <= {max_distance})"
            )
            _reject(table, index, reason)


def screen_verdicts(
    table: pd.DataFrame, images: dict[str, Any], screener: VisionLanguageModel, settings: CurateParams
) -> dict[Any, Verdict]:
    """The screen's verdict on every kept panel, streamed through the screener with progress."""
    kept = list(_kept(table))
    results: dict[int, VLMResult] = {}
    requests = (
        screen_request(
            image_file(images[_sample_id(table, index)]).read(),
            str(table.at[index, "caption"] or ""),
            settings.screen,
        )
        for index in kept
    )
    with Progress("curate screen", len(kept)) as progress:

        def arrived(position: int, result: VLMResult) -> None:
            progress.add(result)
            results[position] = result

        screener.stream(requests, arrived)
    return {index: verdict_of(results[position]) for position, index in enumerate(kept)}


def _queue_row(row: pd.Series, queue: str, verdict: Verdict, reviewed: tuple[str, str] | None) -> dict:
    return {
        "sample_id": row["sample_id"],
        "queue": queue,
        "image": f"{row['sample_id']}.png",
        "doi": row["doi"],
        "figure_id": row["figure_id"],
        "caption": row["caption"],
        "model_decision": verdict.decision,
        "model_confidence": verdict.confidence,
        "model_reason": verdict.reason,
        "decision": reviewed[0] if reviewed else "",
        "note": reviewed[1] if reviewed else "",
    }


def apply_screen(
    table: pd.DataFrame,
    verdicts: dict[Any, Verdict],
    decisions: dict[str, tuple[str, str]],
    settings: CurateParams,
) -> tuple[pd.DataFrame, SpotCheckRate]:
    """Route each verdict, apply a person's reviewed decisions, draw the spot check; the review queue and
    the spot check's false-positive rate."""
    queue: list[dict[str, Any]] = []
    model_keeps: list[Any] = []
    for index, verdict in verdicts.items():
        row = table.loc[index]
        table.loc[index, ["screen_decision", "screen_confidence", "screen_reason"]] = [
            verdict.decision, verdict.confidence, verdict.reason,
        ]  # fmt: skip
        route = routed(verdict, settings.screen.min_confidence)
        reviewed = decisions.get(row["sample_id"])
        if route == "rejected":
            _reject(
                table, index, f"{_where(row)}: screen REJECT ({verdict.confidence:.2f}): {verdict.reason}"
            )
        elif route == "kept":
            model_keeps.append(index)
        else:
            queue.append(_queue_row(row, LOW_CONFIDENCE, verdict, reviewed))
            if reviewed is None:
                table.loc[index, ["status", "reason"]] = [
                    "review",
                    f"{_where(row)}: awaiting review: {_low_confidence(verdict, settings)}",
                ]
            elif reviewed[0] == "REJECT":
                _reject(table, index, f"{_where(row)}: manual review REJECT: {reviewed[1] or verdict.reason}")
    sampled = spot_check_sample(
        [_sample_id(table, index) for index in model_keeps],
        settings.review.spot_check_share,
        settings.review.seed,
    )
    reviewed_count = false_positives = 0
    for index in model_keeps:
        sample = _sample_id(table, index)
        if sample not in sampled:
            continue
        reviewed = decisions.get(sample)
        queue.append(_queue_row(table.loc[index], SPOT_CHECK, verdicts[index], reviewed))
        if reviewed is not None:
            reviewed_count += 1
            if reviewed[0] == "REJECT":
                false_positives += 1
                _reject(table, index, f"{_where(table.loc[index])}: spot check REJECT: {reviewed[1]}")
    rate = SpotCheckRate(
        len(sampled), reviewed_count, false_positives, settings.review.max_false_positive_rate
    )
    return pd.DataFrame(queue, columns=REVIEW_COLUMNS), rate


def _low_confidence(verdict: Verdict, settings: CurateParams) -> str:
    if verdict.decision is None:
        return f"the screen gave no decision ({verdict.reason})"
    return (
        f"screen {verdict.decision} at confidence {verdict.confidence:.2f}, below "
        f"{settings.screen.min_confidence}: {verdict.reason}"
    )


def reviewed_decisions(settings: CurateParams, from_store: pd.DataFrame | None) -> dict[str, tuple[str, str]]:
    """The decisions people made: the file ``curate.review.decisions`` names when it names one, else those of
    the review app's store (the catalog's ``review_decisions``) when it holds any, else none."""
    stored = {} if from_store is None or from_store.empty else table_decisions(from_store)
    source = from_store.attrs.get("source", "the review store") if from_store is not None else ""
    if settings.review.decisions:
        if stored:
            logger.info(
                "review decisions from %s; the %d decision(s) of %s are not used",
                settings.review.decisions, len(stored), source,
            )  # fmt: skip
        return read_decisions(settings.review.decisions)
    if stored:
        logger.info("review decisions: %d panel(s) decided in %s", len(stored), source)
    return stored


def screen_panels(
    panels: pd.DataFrame,
    images: dict[str, Any],
    screener: VisionLanguageModel,
    params: dict[str, Any],
    review_decisions: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float]]:
    """Filter the kept panels (``curated``), write the manual-review queue (``review_queue``) and the
    filtering metrics (``curate_screen_metrics``); people's decisions from a file or the review app's store
    (``review_decisions``: ``reviewed_decisions``)."""
    settings = CurateParams.model_validate(params)
    decisions = reviewed_decisions(settings, review_decisions)
    table = panels.copy().reset_index(drop=True)
    for column in SCREEN_COLUMNS:
        table[column] = pd.Series([None] * len(table), dtype=object)
    reject_caption_cues(table, settings)
    if settings.near_duplicates.enabled:
        reject_near_duplicates(table, images, settings.near_duplicates.max_distance)
    verdicts = screen_verdicts(table, images, screener, settings) if settings.screen.enabled else {}
    queue, rate = apply_screen(table, verdicts, decisions, settings)
    known = set(table["sample_id"])
    unknown = sorted(set(decisions) - known)
    if unknown:
        logger.warning(
            "reviewed queue: %d decision(s) name no panel of this run, e.g. %s", len(unknown), unknown[:3]
        )
    if rate.flagged:
        logger.warning(
            "spot check: false-positive rate %.1f%% (%d of %d reviewed KEEPs) is above %.0f%%: refine the "
            "screen prompt (SciIR B.3)", 100 * cast(float, rate.rate), rate.false_positives, rate.reviewed,
            100 * rate.max_rate,
        )  # fmt: skip
    table["screen_confidence"] = pd.to_numeric(table["screen_confidence"])
    counts = table["status"].value_counts()
    metrics = {
        "screened": float(len(verdicts)),
        "review_queue": float(len(queue)),
        "awaiting_review": float(counts.get("review", 0)),
        **rate.metrics(),
    }
    logger.info("curate screen: %s", json.dumps(metrics))
    return table, queue, metrics
