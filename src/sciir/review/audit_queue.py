"""Judge audit: a seeded sample of the judge's verdicts, stratified by question kind and verdict, each image
beside its question and the judge's evidence; right / wrong / can't tell.

Filled from evaluate's outputs (``audit.verdicts``: the verdicts table; ``audit.checklists``: the questions with
their ``kind`` and ``polarity``, annotate's checklists table or the benchmark file evaluated; ``audit.images``:
the images judged, ``<model>/<sample_id>.png``). The candidates are the judged verdicts (``yes`` or ``no``) of
images on disk; each stratum (question kind: text, entity, relation, law, or other; verdict) gets up to
``per_stratum`` of them, drawn with ``seed`` from the candidates sorted by key, and a later start tops each
stratum up from the candidates not queued yet (a new run's verdicts). An item's key is
``<model>/<sample_id>/<question_id>``; the page shows the image, the question, the verdict and the judge's
evidence and reasoning, never the model. Evaluate reads the answers back (``sciir.catalog.review_audit_dataset``)
and reports the judge's accuracy and Cohen's kappa against people per question kind.
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import select
from sqlalchemy.orm import Session

from sciir.review.audit_table import ANSWERS, NAME, SCORES, audit_answers
from sciir.review.models import Item, Queue
from sciir.review.queue_store import Refused, agreement_of, ensure_queue
from sciir.review.settings import AuditSettings
from sciir.stats.agreement import Agreement
from sciir.user_files.benchmark_file import read_benchmark_file

logger = logging.getLogger(__name__)

KIND = "judge_audit"
# The question kinds of evaluate's judge validation (sciir.evaluation.judge_validation.KINDS); any other: other.
QUESTION_KINDS = ("text", "entity", "relation", "law")
VERDICTS = ("yes", "no")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


@dataclass(frozen=True)
class Filled:
    """What a start added, per stratum ``kind/verdict``, and how many candidates there were."""

    added: dict[str, int]
    candidates: int


def open_queue(session: Session, settings: AuditSettings) -> Queue:
    config = {
        "raters_per_item": settings.raters_per_item,
        "seed": settings.seed,
        "per_stratum": settings.per_stratum,
    }
    return ensure_queue(session, NAME, KIND, config)


def _table(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.suffix.lower() == ".parquet" else pd.read_csv(path, dtype=str)


def read_questions(path: str) -> pd.DataFrame:
    """sample_id, question_id, question, kind, polarity: annotate's checklists table or a benchmark file."""
    file = Path(path)
    if file.suffix.lower() == ".jsonl" or not {"question", "question_id"} <= set(_table(file).columns):
        table = read_benchmark_file(file, "review audit.checklists").checklists
    else:
        table = _table(file)
    for column in ("kind", "polarity"):
        if column not in table.columns:
            table[column] = None
    return table[["sample_id", "question_id", "question", "kind", "polarity"]].astype(object)


def _image(folder: Path, model: str, sample_id: str) -> Path | None:
    for suffix in IMAGE_SUFFIXES:
        path = folder / model / f"{sample_id}{suffix}"
        if path.is_file():
            return path
    return None


def candidates(settings: AuditSettings) -> pd.DataFrame:
    """The judged verdicts of images on disk with their question, kind and image: the sample is drawn from
    these (empty when evaluate has not run)."""
    verdicts_file, questions_file = Path(settings.verdicts), Path(settings.checklists)
    if not verdicts_file.is_file() or not questions_file.is_file():
        missing = verdicts_file if not verdicts_file.is_file() else questions_file
        logger.warning(
            "judge audit: no %s (run evaluate first, or name the files in review.yml's audit)", missing
        )
        return pd.DataFrame(
            columns=["key", "model", "sample_id", "question_id", "verdict", "image", "stratum"]
        )
    verdicts = _table(verdicts_file)
    verdicts = verdicts[(verdicts["status"] == "judged") & verdicts["verdict"].isin(VERDICTS)]
    table = verdicts.astype({"model": str, "sample_id": str, "question_id": str}).merge(
        read_questions(settings.checklists).astype({"sample_id": str, "question_id": str}),
        on=["sample_id", "question_id"],
        how="inner",
    )
    folder = Path(settings.images)
    found = [_image(folder, m, s) for m, s in zip(table["model"], table["sample_id"], strict=True)]
    table["image"] = pd.Series([None if path is None else str(path) for path in found], index=table.index)
    table = table[table["image"].notna()].copy()
    table["question_kind"] = table["kind"].where(table["kind"].isin(QUESTION_KINDS), "other")
    table["key"] = table["model"] + "/" + table["sample_id"] + "/" + table["question_id"]
    table["stratum"] = table["question_kind"] + "/" + table["verdict"]
    return table.drop_duplicates("key").sort_values("key").reset_index(drop=True)


def _drawn(pool: pd.DataFrame, count: int, rng: np.random.Generator) -> pd.DataFrame:
    if count <= 0 or pool.empty:
        return pool.iloc[0:0]
    chosen = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
    return pool.iloc[np.sort(chosen)]


def _text(value: Any) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _context(row: Mapping[Hashable, Any]) -> dict[str, Any]:
    """What the page shows and the answers table carries of an audited verdict."""
    return {
        "model": str(row["model"]),
        "sample_id": str(row["sample_id"]),
        "question_id": str(row["question_id"]),
        "question_kind": str(row["question_kind"]),
        "polarity": _text(row.get("polarity")),
        "question": _text(row.get("question")),
        "judge_verdict": str(row["verdict"]),
        "evidence": _text(row.get("evidence")),
        "reasoning": _text(row.get("reasoning")),
        "stratum": str(row["stratum"]),
    }


def fill(session: Session, queue: Queue, settings: AuditSettings) -> Filled:
    """Top each stratum up to ``per_stratum`` items with verdicts drawn (seeded) from those not queued yet."""
    table = candidates(settings)
    items = session.scalars(select(Item).where(Item.queue_id == queue.id)).all()
    known = {item.key for item in items}
    have = Counter(str((item.context or {}).get("stratum")) for item in items)
    rng = np.random.default_rng(settings.seed)
    added: dict[str, int] = {}
    for stratum, pool in table[~table["key"].isin(known)].groupby("stratum", sort=True):
        drawn = _drawn(pool, settings.per_stratum - have[str(stratum)], rng)
        for row in drawn.to_dict("records"):
            session.add(
                Item(
                    queue_id=queue.id,
                    public_id=secrets.token_urlsafe(12),
                    key=row["key"],
                    path=str(Path(row["image"]).resolve()),
                    context=_context(row),
                )
            )
        if len(drawn):
            added[str(stratum)] = len(drawn)
    session.flush()
    return Filled(added, len(table))


def checked_answer(fields: dict[str, str]) -> tuple[int | None, str]:
    """The score and detail of right, wrong or can't tell; Refused for anything else (nothing stored)."""
    answer = fields.get("answer", "")
    if answer not in ANSWERS:
        raise Refused(f"an answer is right, wrong or cant_tell, not {answer[:20]!r}: nothing was stored", 400)
    return SCORES[answer], answer


def agreement(session: Session) -> Agreement:
    """Krippendorff's alpha (nominal) between raters on right / wrong (can't tell counts as no answer)."""
    answers = audit_answers(session)
    told = answers[answers["answer"] != "cant_tell"]
    keys = told["model"] + "/" + told["sample_id"] + "/" + told["question_id"]
    values = pd.DataFrame({"unit": keys, "rater": told["rater_id"], "value": told["answer"].map(SCORES)})
    return agreement_of(values, "nominal")


def audit_file(session: Session) -> pd.DataFrame:
    """The audit CSV: every live answer with what it audited (``sciir.review.audit_table.AUDIT_COLUMNS``)."""
    return audit_answers(session)
