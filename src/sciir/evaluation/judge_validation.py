"""Judge validation on ground truth: how often the judge catches planted faults and how often it
raises false alarms on what was drawn correctly, per kind of question.

The code-based generators record what they actually drew (generation manifest ``meta``:
``drawn_labels``, ``drawn_edges``, ``planted_faults``): the ``reference_renderer`` (role ``reference``)
draws the benchmark plan as is, ``reference_renderer_faulty`` after misspelling, reversing and
dropping, and the ``programmatic`` contestants whatever they parsed from the prompt alone. Every
checklist question states what it checks in structured fields (``kind``, ``polarity``, ``about``), so
for every question about one of those images it is known whether its claim holds, from those fields
and the drawing's record alone (question text is never parsed):

- text [string]: the string is a plan label; violated when it is written nowhere in the drawing, as
  the judge's text check reads a string (``written``): a drawn label or group title containing it counts,
  so a dropped node whose label is still written inside another label ("C1" in "tau1 = R1 C1") holds
  here, its fault being its entity question's (and its arrows');
- entity [label], a plan label: positive ("drawn as a component") violated when its node was not
  drawn (a misspelled node is still drawn, under another spelling); negative ("drawn once") violated
  when it was drawn more than once;
- relation [A, B], both plan labels: positive ("an arrow from A to B") violated when that edge was not
  drawn (reversed, or an end dropped); negative ("no arrow from A to B") violated when it was drawn;
- law [statement]: positive ("stated or obeyed") violated, when the statement is a plan label, if it
  was not drawn with that spelling; a law only in the caption holds on an image that shows exactly the
  plan (every plan label and edge, nothing else, no planted fault) and is unknown on any other.
  Negative ("nothing contradicts it") violated when a drawn label writes an equation for the same left
  side with another right side (``sciir.tasks.laws``); these renderers draw nothing else that could.

Questions about anything else, or without structured fields, have no known truth and are counted as
such, never guessed. Only images of generators whose manifest records ``drawn_labels`` take part. Per
judge, question kind and polarity: detection rate (judged "no" / judged questions whose claim is
violated), false-alarm rate (judged "no" / judged questions whose claim holds) and abstention rate
(unjudged / questions with known truth).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sciir.backends.readers.text import fold_confusables, phrase_pattern
from sciir.tasks.laws import contradicting
from sciir.user_files.benchmark_file import POLARITIES

logger = logging.getLogger(__name__)

ALL = "all"
KINDS = ("text", "entity", "relation", "law")
OTHER_KIND = "other"
VALIDATION_COLUMNS = (
    "judge",
    "question_kind",
    "polarity",
    "n_questions",
    "n_faulty",
    "n_faulty_judged",
    "n_detected",
    "detection_rate",
    "n_correct",
    "n_correct_judged",
    "n_false_alarms",
    "false_alarm_rate",
    "n_unjudged",
    "abstention_rate",
    "n_without_truth",
    "no_precision",
    "cohen_kappa",
)


@dataclass(frozen=True)
class ImageTruth:
    """What one programmatic image shows, in the plan's names (a misspelled node under its plan name)."""

    plan_labels: frozenset[str]
    drawn_texts: frozenset[str]  # every text on the canvas, as drawn: labels and group titles
    drawn_entities: frozenset[str]
    repeated_entities: frozenset[str]  # drawn more than once
    drawn_edges: frozenset[tuple[str, str]]
    faulty: bool  # it deviates from the plan: planted faults, or labels or edges missing or added


def image_truth(plan: Mapping[str, Any], meta: Mapping[str, Any]) -> ImageTruth | None:
    """The truth of one image from its benchmark plan and manifest meta; None without ``drawn_labels``."""
    if "drawn_labels" not in meta:
        return None
    faults = meta.get("planted_faults") or []
    plan_name = {fault["drawn"]: fault["label"] for fault in faults if fault.get("kind") == "misspell"}
    drawn = [str(label) for label in meta["drawn_labels"]]
    titles = [str(group[0]) for group in meta.get("drawn_groups", []) if group]
    drawn_edges = frozenset(
        (plan_name.get(src, src), plan_name.get(dst, dst)) for src, dst in meta.get("drawn_edges", [])
    )
    plan_labels = frozenset(str(label) for label in plan.get("labels", []))
    plan_edges = frozenset((str(edge[0]), str(edge[1])) for edge in plan.get("edges", []) if len(edge) == 2)
    plan_names = plan_labels | {end for edge in plan_edges for end in edge}
    entities = Counter(plan_name.get(label, label) for label in drawn)
    return ImageTruth(
        plan_labels=plan_labels,
        drawn_texts=frozenset(drawn + titles),
        drawn_entities=frozenset(entities),
        repeated_entities=frozenset(name for name, count in entities.items() if count > 1),
        drawn_edges=drawn_edges,
        faulty=bool(faults) or set(drawn) != plan_names or drawn_edges != plan_edges,
    )


def written(string: str, texts: frozenset[str]) -> bool | None:
    """Whether ``string`` is written in one of ``texts`` as the judge's text check finds a string in what
    OCR read (``OcrReading.find``): case-sensitive, not inside a longer word, glyphs drawn alike (I, l, 1;
    O, 0; rn, m) and the spaces between words forgiven; None for an empty string."""
    pattern = phrase_pattern(string)
    if pattern is None:
        return None
    return any(pattern.search(fold_confusables(text)) for text in texts)


def _text_violated(string: str, truth: ImageTruth) -> bool | None:
    if string not in truth.plan_labels:
        return None
    found = written(string, truth.drawn_texts)
    return None if found is None else not found


def _entity_violated(negative: bool, label: str, truth: ImageTruth) -> bool | None:
    if label not in truth.plan_labels:
        return None
    return label in truth.repeated_entities if negative else label not in truth.drawn_entities


def _relation_violated(negative: bool, about: Sequence[str], truth: ImageTruth) -> bool | None:
    if len(about) != 2 or not truth.plan_labels.issuperset(about):
        return None
    drawn = (about[0], about[1]) in truth.drawn_edges
    return drawn if negative else not drawn


def _law_violated(negative: bool, statement: str, truth: ImageTruth) -> bool | None:
    if negative:
        return bool(contradicting(statement, truth.drawn_texts))
    if statement in truth.plan_labels:
        return statement not in truth.drawn_texts
    return None if truth.faulty else False


def claim_violated(kind: Any, polarity: Any, about: Sequence[str], truth: ImageTruth) -> bool | None:
    """True when the question's claim is false in the image, False when it holds, None when unknown."""
    negative = polarity == "negative"
    if not about or polarity not in POLARITIES:
        return None
    if kind == "text":
        return None if negative else _text_violated(about[0], truth)
    if kind == "entity":
        return _entity_violated(negative, about[0], truth)
    if kind == "relation":
        return _relation_violated(negative, about, truth)
    if kind == "law":
        return _law_violated(negative, about[0], truth)
    return None


def _image_truths(benchmark: pd.DataFrame, manifest: pd.DataFrame) -> dict[tuple[str, str], ImageTruth]:
    """Truth per (model, sample) for the manifest's successful images that record what they drew."""
    # A benchmark brought from a file has no plan (what a sample must show is in its checklist only).
    plans = {
        str(row.sample_id): json.loads(row.plan)
        for row in benchmark.itertuples(index=False)
        if isinstance(row.plan, str)
    }
    truths: dict[tuple[str, str], ImageTruth] = {}
    row: Any  # an itertuples row: fields typed by the table (pandas-stubs: any scalar)
    for row in manifest[manifest["status"] == "ok"].itertuples(index=False):
        truth = image_truth(plans.get(str(row.sample_id), {}), json.loads(row.meta or "{}"))
        if truth is not None:
            truths[(str(row.model), str(row.sample_id))] = truth
    return truths


def _about(value: Any) -> list[str]:
    """A checklist's ``about`` cell (a JSON list) as a list; empty when missing or unreadable."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return []
        return [str(item) for item in parsed] if isinstance(parsed, list) else []
    return []


def _structured_fields(checklists: pd.DataFrame) -> pd.DataFrame:
    """sample_id, question_id, kind, polarity, about of each question (missing fields as None)."""
    fields = checklists[["sample_id", "question_id"]].copy()
    for column in ("kind", "polarity", "about"):
        fields[column] = checklists[column] if column in checklists.columns else None
    return fields.drop_duplicates(["sample_id", "question_id"])


def question_truth(
    verdicts: pd.DataFrame, checklists: pd.DataFrame, benchmark: pd.DataFrame, manifest: pd.DataFrame
) -> pd.DataFrame:
    """The verdicts of images with known truth, with ``question_kind``, ``polarity`` and ``violated``
    (True / False / None)."""
    truths = _image_truths(benchmark, manifest)
    keys = list(zip(verdicts["model"].astype(str), verdicts["sample_id"].astype(str), strict=True))
    # A Series, not a list: an empty list would select columns (none) rather than rows.
    known = pd.Series([key in truths for key in keys], index=verdicts.index, dtype=bool)
    rows = verdicts[known].drop(columns=["kind", "polarity", "about"], errors="ignore")
    rows = rows.merge(_structured_fields(checklists), on=["sample_id", "question_id"], how="left")
    rows["violated"] = [
        claim_violated(
            row.kind, row.polarity, _about(row.about), truths[(str(row.model), str(row.sample_id))]
        )
        for row in rows.itertuples(index=False)
    ]
    rows["question_kind"] = rows["kind"].where(rows["kind"].isin(KINDS), OTHER_KIND)
    rows["polarity"] = rows["polarity"].where(rows["polarity"].isin(POLARITIES), None)
    return rows


def _rate(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else float("nan")


def _agreement(faulty: pd.Series, said_no: pd.Series) -> dict[str, float]:
    """On judged questions: the share of "no" answers whose claim is violated (precision of "no"), and
    Cohen's kappa between the verdicts and the truth (agreement beyond chance; NaN with one class only)."""
    from sklearn.metrics import cohen_kappa_score, precision_score

    if faulty.empty:
        return {"no_precision": float("nan"), "cohen_kappa": float("nan")}
    precision = precision_score(faulty, said_no, zero_division=np.nan)
    both_classes = faulty.nunique() > 1 or said_no.nunique() > 1
    kappa = cohen_kappa_score(faulty, said_no) if both_classes else float("nan")
    return {"no_precision": float(precision), "cohen_kappa": float(kappa)}


def _validation_row(judge: str, kind: str, polarity: str, rows: pd.DataFrame) -> dict[str, Any]:
    """Counts and rates of one judge on one kind and polarity of question."""
    known = rows[rows["violated"].notna()]
    judged = known["status"] == "judged"
    said_no = judged & (known["verdict"] == "no")
    faulty = known["violated"].astype(bool)
    counts = {
        "n_questions": len(known),
        "n_faulty": int(faulty.sum()),
        "n_faulty_judged": int((faulty & judged).sum()),
        "n_detected": int((faulty & said_no).sum()),
        "n_correct": int((~faulty).sum()),
        "n_correct_judged": int((~faulty & judged).sum()),
        "n_false_alarms": int((~faulty & said_no).sum()),
        "n_unjudged": int((~judged).sum()),
        "n_without_truth": len(rows) - len(known),
    }
    return (
        {"judge": judge, "question_kind": kind, "polarity": polarity}
        | counts
        | {
            "detection_rate": _rate(counts["n_detected"], counts["n_faulty_judged"]),
            "false_alarm_rate": _rate(counts["n_false_alarms"], counts["n_correct_judged"]),
            "abstention_rate": _rate(counts["n_unjudged"], counts["n_questions"]),
        }
        | _agreement(faulty[judged], said_no[judged])
    )


def validation_table(truth: pd.DataFrame, judge: str) -> pd.DataFrame:
    """For ``judge``, one row per question kind (text, entity, relation, law) and polarity (all, positive,
    negative), and one over every kind (``all``, ``all``)."""
    rows = []
    for kind in KINDS:
        of_kind = truth[truth["question_kind"] == kind]
        rows.append(_validation_row(judge, kind, ALL, of_kind))
        rows.extend(
            _validation_row(judge, kind, polarity, of_kind[of_kind["polarity"] == polarity])
            for polarity in POLARITIES
        )
    rows.append(_validation_row(judge, ALL, ALL, truth[truth["question_kind"].isin(KINDS)]))
    return pd.DataFrame(rows, columns=list(VALIDATION_COLUMNS))


def known_content_validation(
    verdicts: pd.DataFrame,
    checklists: pd.DataFrame,
    benchmark: pd.DataFrame,
    manifest: pd.DataFrame,
    judge: str,
    no_truth_setting: str | None = None,
) -> pd.DataFrame:
    """The ``judge_validation`` table of ``judge`` on the images whose content is known, also logged.
    ``no_truth_setting`` names the setting (``images_dir``, ``verdicts_file``) whose images the generation
    manifest does not describe: then no image has ground truth."""
    if no_truth_setting:
        logger.info(
            "%s is set: the generation manifest does not describe those images; no ground truth",
            no_truth_setting,
        )
        manifest = manifest.iloc[0:0]
    truth = question_truth(verdicts, checklists, benchmark, manifest)
    table = validation_table(truth, judge)
    logger.info(
        "judge validation on %d images with known content:\n%s",
        truth[["model", "sample_id"]].drop_duplicates().shape[0],
        table.to_string(index=False),
    )
    return table


def validation_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``judge_validation.<kind>[.<polarity>].<rate>`` and the counts behind them, as metrics (the
    polarity is left out of the name for the row over both)."""
    metrics: dict[str, float] = {}
    for row in table.to_dict("records"):
        polarity = "" if row["polarity"] == ALL else f".{row['polarity']}"
        prefix = f"judge_validation.{row['question_kind']}{polarity}"
        metrics |= {
            f"{prefix}.{name}": float(row[name])
            for name in (
                "detection_rate",
                "false_alarm_rate",
                "abstention_rate",
                "no_precision",
                "cohen_kappa",
                "n_faulty",
                "n_correct",
            )
        }
    return metrics
