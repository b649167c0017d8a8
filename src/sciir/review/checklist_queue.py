"""Checklist review: a benchmark file's samples, each question edited (text, category, expected text, parents),
deleted or added, saved as a new versioned benchmark file.

Filled from the benchmark file the settings name (``checklists.benchmark``: one written from prompts or
imported, docs/bring_your_own_benchmark.md; JSON Lines or a table), one item per sample, its record as the file
holds it in the item's context, and the sample's image when ``checklists.images`` holds one. Each file is a
queue of its own (``checklists:<file name>``): a start with the file changed under answers given to the old one
is refused. A rater's answer is the sample's checklist as they left it: the form's rows (each original question
kept, edited or deleted, and the questions added), checked as the benchmark reader checks a file. Saving
(``save_benchmark``) writes the file again with each reviewed sample's latest checklist, under a new name
``<name>-v<N>.jsonl`` beside the input (or in ``checklists.output_folder``), never over a file; evaluate reads it
as any benchmark file and records its sha256.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import unicodedata
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from sciir.review.models import Item, Queue
from sciir.review.queue_store import (
    Refused,
    agreement_of,
    ensure_queue,
    has_answers,
    live_answers,
    queue_named,
)
from sciir.review.settings import ChecklistsSettings
from sciir.stats.agreement import Agreement
from sciir.user_files.benchmark_file import BenchmarkFileError, read_samples, sample_questions
from sciir.user_files.importers.common import sample_record, write_benchmark

KIND = "checklist_review"
PREFIX = "checklists:"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
MAX_ROWS = 200
FIELDS = ("orig", "id", "text", "category", "expected", "parents", "delete")
TEXT_MAX, ID_MAX = 2000, 64
VERSIONED = re.compile(r"^(?P<base>.+?)-v(?P<n>\d+)$")
CHANGES = {"kept": 0, "edited": 1, "deleted": 2}


class ChecklistFileChanged(ValueError):
    """The benchmark file changed under answers given to its earlier version."""


def queue_name(benchmark: str | None) -> str:
    """The queue of a benchmark file: ``checklists:<file name>`` (at most 64 characters)."""
    name = PREFIX + (Path(benchmark).name if benchmark else "(none)")
    if len(name) <= 64:
        return name
    return name[:47] + "~" + hashlib.sha256(name.encode()).hexdigest()[:16]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _image_of(folder: str | None, sample_id: str, settings: list[str]) -> str:
    """The sample's image in ``folder`` (``<sample_id>`` or ``<sample_id>__<setting>``, any image suffix); ''."""
    if folder is None:
        return ""
    for stem in (sample_id, *(f"{sample_id}__{setting}" for setting in settings)):
        for suffix in IMAGE_SUFFIXES:
            if (Path(folder) / f"{stem}{suffix}").is_file():
                return str((Path(folder) / f"{stem}{suffix}").resolve())
    return ""


def fill(session: Session, settings: ChecklistsSettings) -> tuple[Queue | None, int]:
    """The queue of the configured file with its samples not queued yet (None without a file); how many were
    added. ChecklistFileChanged when the file changed under answers; BenchmarkFileError when it cannot be read."""
    if settings.benchmark is None:
        return None, 0
    path = Path(settings.benchmark)
    samples = read_samples(path, "review checklists.benchmark")
    name, sha256 = queue_name(settings.benchmark), _sha256(path)
    queue = queue_named(session, name)
    if queue is not None and queue.config.get("sha256") != sha256:
        if has_answers(session, queue):
            raise ChecklistFileChanged(
                f"{path} changed since its checklists were reviewed here: save the review first "
                "(kedro review --save-benchmark) and review the saved version, or use another store"
            )
        session.execute(delete(Item).where(Item.queue_id == queue.id))
    config = {
        "benchmark": str(path.resolve()),
        "sha256": sha256,
        "raters_per_item": settings.raters_per_item,
        "seed": settings.seed,
    }
    queue = ensure_queue(session, name, KIND, config)
    known = set(session.scalars(select(Item.key).where(Item.queue_id == queue.id)))
    added = 0
    for sample in samples:
        if sample.sample_id in known:
            continue
        record = sample_record(sample)
        session.add(
            Item(
                queue_id=queue.id,
                public_id=secrets.token_urlsafe(12),
                key=sample.sample_id,
                path=_image_of(settings.images, sample.sample_id, list(sample.prompts)),
                prompt=None,
                context={"record": record},
            )
        )
        added += 1
    session.flush()
    return queue, added


# ---- the form: one row per question


def original_questions(item: Item) -> list[dict[str, Any]]:
    questions: list[dict[str, Any]] = (item.context or {}).get("record", {}).get("questions", [])
    return questions


def rows_of_questions(questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The form's rows for a checklist as the file holds it: every question kept."""
    return [
        {
            "orig": question["id"],
            "id": question["id"],
            "text": question["text"],
            "category": question.get("category", ""),
            "expected": question.get("expected_text") or "",
            "parents": ", ".join(question.get("parent_ids", [])),
            "delete": False,
        }
        for question in questions
    ]


def rows_of_fields(fields: dict[str, str]) -> list[dict[str, Any]]:
    """The rows a checklist form sent (``q<i>_<field>``), in order; empty spare rows left out."""
    rows = []
    for index in range(MAX_ROWS):
        if f"q{index}_orig" not in fields and f"q{index}_id" not in fields:
            continue
        row: dict[str, Any] = {key: fields.get(f"q{index}_{key}", "").strip() for key in FIELDS[:-1]}
        row["delete"] = fields.get(f"q{index}_delete", "") == "on"
        if row["orig"] or row["text"]:  # a new question's row left blank is a spare
            rows.append(row)
    return rows


def _clean(text: str, what: str, limit: int) -> str:
    cleaned = unicodedata.normalize("NFC", text.strip())
    if len(cleaned) > limit:
        raise Refused(f"{what} has more than {limit} characters: nothing was stored", 400)
    if any(unicodedata.category(char).startswith("C") for char in cleaned):
        raise Refused(f"{what} holds control characters: nothing was stored", 400)
    return cleaned


def _record(row: dict[str, Any], original: dict[str, Any] | None) -> dict[str, Any]:
    """A question's record from its row; the layer follows the expected text (kept when its presence does not
    change), the polarity is the original's."""
    qid = _clean(row["orig"] or row["id"], "a question id", ID_MAX)
    expected = _clean(row["expected"], f"question {qid}'s expected text", TEXT_MAX)
    had_expected = bool(original and original.get("expected_text"))
    layer = original["layer"] if original and had_expected == bool(expected) else (1 if expected else 2)
    record: dict[str, Any] = {
        "id": qid,
        "text": _clean(row["text"], f"question {qid}'s text", TEXT_MAX),
        "layer": layer,
        "parent_ids": [part.strip() for part in row["parents"].split(",") if part.strip()],
        "polarity": (original or {}).get("polarity", "positive"),
    }
    category = _clean(row["category"], f"question {qid}'s category", ID_MAX)
    if category:
        record["category"] = category
    if expected:
        record["expected_text"] = expected
    return record


def checked_answer(item: Item, fields: dict[str, str]) -> tuple[None, str]:
    """The detail of an answer: the rows as the rater left them and the checklist they make, checked as the
    benchmark reader checks a file; Refused (nothing stored) for a form that does not match the sample or a
    checklist the reader would refuse."""
    originals = {question["id"]: question for question in original_questions(item)}
    rows = rows_of_fields(fields)
    sent = [row["orig"] for row in rows if row["orig"]]
    if sorted(sent) != sorted(originals):
        raise Refused(
            "this form does not match the sample's checklist (reload the page): nothing was stored", 400
        )
    questions = [_record(row, originals.get(row["orig"])) for row in rows if not row["delete"]]
    record = (item.context or {}).get("record", {})
    if not questions and not record.get("choice_questions"):
        raise Refused("a sample keeps at least one question: nothing was stored", 400)
    try:
        sample_questions(f"sample {item.key}", questions)
    except BenchmarkFileError as error:
        raise Refused(f"{error}: nothing was stored", 400) from None
    return None, json.dumps({"rows": rows, "questions": questions}, ensure_ascii=False)


def changes(item_questions: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[str, str]:
    """Each original question's fate in a rater's rows: kept, edited or deleted."""
    before = {row["orig"]: row for row in rows_of_questions(item_questions)}
    fate = {}
    for row in rows:
        if row["orig"] in before:
            unchanged = all(
                row[key] == before[row["orig"]][key] for key in ("text", "category", "expected", "parents")
            )
            fate[row["orig"]] = "deleted" if row["delete"] else "kept" if unchanged else "edited"
    return fate


def agreement(session: Session, name: str) -> Agreement:
    """Krippendorff's alpha (nominal) between raters of what each did to each original question."""
    units = []
    for key, rater, detail, context in live_answers(session, name)[
        ["key", "rater", "detail", "context"]
    ].itertuples(index=False):
        questions = (context or {}).get("record", {}).get("questions", [])
        for question, fate in changes(questions, json.loads(detail or "{}").get("rows", [])).items():
            units.append({"unit": f"{key}/{question}", "rater": rater, "value": CHANGES[fate]})
    return agreement_of(pd.DataFrame(units, columns=["unit", "rater", "value"]), "nominal")


# ---- saving a new version


def next_version(benchmark: Path, folder: Path | None = None) -> Path:
    """``<name>-v<N>.jsonl`` for the first N above every version already in the folder (``physics.jsonl`` and
    ``physics-v1.jsonl`` both lead to ``physics-v2.jsonl`` when v1 exists)."""
    folder = folder or benchmark.parent
    stem = benchmark.name.split(".")[0]
    match = VERSIONED.match(stem)
    base = match.group("base") if match else stem
    taken = [
        int(m.group("n")) for p in folder.glob(f"{base}-v*.jsonl") if (m := VERSIONED.match(p.name[:-6]))
    ]
    return folder / f"{base}-v{max(taken, default=0) + 1}.jsonl"


def latest_checklists(session: Session, name: str) -> dict[str, list[dict[str, Any]]]:
    """Sample id -> the checklist of its latest live answer (a sample several raters answered: the latest)."""
    live = live_answers(session, name).sort_values("answered_at", kind="stable")
    return {
        str(key): json.loads(detail)["questions"]
        for key, detail in zip(live["key"], live["detail"], strict=True)
    }


def save_benchmark(session: Session, settings: ChecklistsSettings) -> tuple[Path, int, int]:
    """Write the benchmark file with each reviewed sample's checklist under a new versioned name (never over
    a file): the path, the samples reviewed, the samples in the file. ValueError without a file to review."""
    if settings.benchmark is None:
        raise ValueError("no benchmark file to review: set checklists.benchmark or give --checklists FILE")
    source = Path(settings.benchmark)
    reviewed = latest_checklists(session, queue_name(settings.benchmark))
    samples = [
        replace(sample, questions=sample_questions(f"sample {sample.sample_id}", reviewed[sample.sample_id]))
        if sample.sample_id in reviewed
        else sample
        for sample in read_samples(source, "review checklists.benchmark")
    ]
    target = next_version(source, Path(settings.output_folder) if settings.output_folder else None)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.open("x").close()  # claimed: an existing file is never written over
    write_benchmark(samples, target)
    read_samples(target)  # read back as evaluate reads it
    return target, sum(sample.sample_id in reviewed for sample in samples), len(samples)
