"""Aggregation rules that turn per-question verdicts into one score per prompt and per system.

A verdict table needs the columns ``sample_id`` (the prompt / image), ``question_id`` and ``verdict``
(``"yes"`` / ``"no"`` / null); ``status`` is optional (without it a question is judged exactly when its
verdict is yes or no), ``model`` is optional (one system when absent) and ``parent_ids`` (a list or a
JSON list of question ids of the same sample) is needed by the dependency-aware rule only.

Correctness of one question is 1.0 for "yes", 0.0 for "no" and, for an unjudged question (abstained,
failed, no image), NaN under the ``exclude`` policy (left out of every mean) or 0.0 under ``fail``.

Rules, each a per-prompt value with a weight, so a system's score is the weighted mean over prompts:

- ``tifa`` (Hu et al., TIFA): the mean of per-prompt means of question correctness; weight 1 per prompt.
- ``question_mean``: all counted questions pooled (AIBench's question-level average): per-prompt mean
  weighted by the prompt's number of counted questions.
- ``dsg`` (Cho et al., Davidsonian Scene Graph): as ``tifa``, after DSG's dependency filtering: a
  question one of whose **direct** parents was itself answered "no" counts as failed, whatever its own
  answer; nothing propagates further (as the reference implementation, which reads the parents' own
  answers).
- ``sciir_veto`` (SciIR appendix D.3): a prompt passes (1.0) only when every question is judged and
  answered "yes"; it fails (0.0) when one is answered "no" (or, under ``fail``, left unjudged); under
  ``exclude`` a prompt with an unjudged question and no "no" is itself unjudged (no score, weight 0).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

logger = logging.getLogger(__name__)

AggregationRule = Literal["sciir_veto", "tifa", "question_mean", "dsg"]
UnjudgedPolicy = Literal["exclude", "fail"]


def judged_mask(verdicts: pd.DataFrame) -> pd.Series:
    """Whether each question has a yes/no answer (and, when a ``status`` column exists, is ``judged``)."""
    answered = verdicts["verdict"].isin(["yes", "no"])
    if "status" in verdicts.columns:
        answered &= verdicts["status"] == "judged"
    return answered


def question_correctness(verdicts: pd.DataFrame, policy: UnjudgedPolicy = "exclude") -> pd.Series:
    """1.0 for "yes", 0.0 for "no", and for an unjudged question NaN (``exclude``) or 0.0 (``fail``)."""
    judged = judged_mask(verdicts)
    correct = pd.Series(np.where(verdicts["verdict"] == "yes", 1.0, 0.0), index=verdicts.index)
    return correct.where(judged, 0.0 if policy == "fail" else np.nan)


def parse_parent_ids(value: Any) -> list[str]:
    """Parent question ids from a list or a JSON list string; none for an empty or missing value."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list):
        raise ValueError(f"parent_ids must be a list of question ids, got {value!r}")
    return [str(parent) for parent in value]


def _filter_by_parents(
    correct: Mapping[str, float], parents: Mapping[str, list[str]], context: str
) -> dict[str, float]:
    """Correctness after DSG's filtering within one prompt: 0.0 when a direct parent was answered "no".

    As DSG's reference implementation: each question looks at its direct parents' own answers only
    (nothing propagates further, so a grandparent answered "no" does not fail a grandchild whose parent
    was answered "yes"); an unjudged parent (NaN) does not fail its children. An unknown parent id is
    logged and ignored.
    """
    filtered: dict[str, float] = {}
    for question, value in correct.items():
        for parent in parents.get(question, []):
            if parent not in correct:
                logger.warning("%s: question %s names unknown parent %s: ignored", context, question, parent)
            elif correct[parent] == 0.0:
                value = 0.0
        filtered[question] = value
    return filtered


def dependency_correctness(verdicts: pd.DataFrame, policy: UnjudgedPolicy = "exclude") -> pd.Series:
    """Question correctness under DSG: a question whose direct parent was answered "no" counts as failed.

    Filtering runs within each prompt (and model, when the table has one) along ``parent_ids``.
    """
    if "parent_ids" not in verdicts.columns:
        raise ValueError(
            "the dsg rule needs a parent_ids column (JSON lists of question ids) in the verdicts"
        )
    correct = question_correctness(verdicts, policy)
    keys = _unit_keys(verdicts)
    result = pd.Series(np.nan, index=verdicts.index)
    for unit, rows in verdicts.groupby(keys, sort=False):
        qids = rows["question_id"].astype(str)
        parents = dict(zip(qids, (parse_parent_ids(value) for value in rows["parent_ids"]), strict=True))
        filtered = _filter_by_parents(
            dict(zip(qids, correct.loc[rows.index], strict=True)), parents, str(unit)
        )
        # pandas-stubs takes no list for the values of .loc[labels] (pandas does)
        result.loc[rows.index] = [filtered[qid] for qid in qids]  # type: ignore[call-overload]
    return result


def rule_correctness(verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy) -> pd.Series:
    """The per-question correctness a rule averages: parent-filtered for ``dsg``, else plain."""
    if rule == "dsg":
        return dependency_correctness(verdicts, policy)
    return question_correctness(verdicts, policy)


def unit_score(
    n_questions: int, n_counted: int, n_correct: float, rule: AggregationRule
) -> tuple[float, float]:
    """(score, weight) of one prompt from its questions, counted questions and their summed correctness.

    The score is NaN and the weight 0 when the prompt has no result, so it drops out of means: no
    question was counted, or (``sciir_veto``) a question was left out as unjudged and none failed: the
    strict veto passes a prompt only when every one of its questions is judged "yes".
    """
    if rule == "sciir_veto":
        if n_correct < n_counted:
            return 0.0, 1.0
        if n_counted == 0 or n_counted < n_questions:
            return float("nan"), 0.0
        return 1.0, 1.0
    if n_counted == 0:
        return float("nan"), 0.0
    weight = float(n_counted) if rule == "question_mean" else 1.0
    return n_correct / n_counted, weight


def with_unit_scores(table: pd.DataFrame, rule: AggregationRule) -> pd.DataFrame:
    """``table`` (one row per unit with ``n_questions``, ``n_counted`` and ``n_correct``) plus each unit's
    score and weight."""
    # Each row's fields are typed by the table (pandas-stubs types each as any scalar).
    rows: Iterable[Any] = table.itertuples()
    pairs = [unit_score(int(row.n_questions), int(row.n_counted), float(row.n_correct), rule) for row in rows]
    return table.assign(score=[score for score, _ in pairs], weight=[weight for _, weight in pairs])


def _unit_keys(verdicts: pd.DataFrame) -> list[str]:
    """The columns that identify one scored unit: (model,) sample_id."""
    return ["model", "sample_id"] if "model" in verdicts.columns else ["sample_id"]


def prompt_scores(
    verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy = "exclude"
) -> pd.DataFrame:
    """Per prompt (and model): n_questions, n_counted, n_correct, score and weight under ``rule``."""
    keys = _unit_keys(verdicts)
    frame = verdicts[keys].assign(correct=rule_correctness(verdicts, rule, policy))
    table = (
        frame.groupby(keys, sort=True)
        .agg(n_questions=("correct", "size"), n_counted=("correct", "count"), n_correct=("correct", "sum"))
        .reset_index()
    )
    return with_unit_scores(table, rule)


def weighted_mean(scores: npt.ArrayLike, weights: npt.ArrayLike) -> float:
    """Sum of score x weight over the sum of weights (NaN when nothing carries weight)."""
    scores, weights = np.asarray(scores, dtype=float), np.asarray(weights, dtype=float)
    total = weights.sum()
    return float(np.nansum(scores * weights) / total) if total > 0 else float("nan")


def aggregate(verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy = "exclude") -> float:
    """One system's score under ``rule`` (a table with several models is refused: use ``aggregate_by_model``)."""
    if "model" in verdicts.columns and verdicts["model"].nunique() > 1:
        raise ValueError("the verdict table holds several models; use aggregate_by_model")
    table = prompt_scores(verdicts, rule, policy)
    return weighted_mean(table["score"], table["weight"])


def aggregate_by_model(
    verdicts: pd.DataFrame, rule: AggregationRule, policy: UnjudgedPolicy = "exclude"
) -> pd.DataFrame:
    """Per model: the score under ``rule`` and the number of prompts that carried weight."""
    table = prompt_scores(verdicts, rule, policy)
    rows = [
        {
            "model": model,
            "score": weighted_mean(group["score"], group["weight"]),
            "n_scored": int((group["weight"] > 0).sum()),
        }
        for model, group in table.groupby("model", sort=True)
    ]
    return pd.DataFrame(rows, columns=["model", "score", "n_scored"])


def tifa_score(verdicts: pd.DataFrame, policy: UnjudgedPolicy = "exclude") -> float:
    """TIFA: the mean over prompts of each prompt's mean question correctness."""
    return aggregate(verdicts, "tifa", policy)


def question_mean_score(verdicts: pd.DataFrame, policy: UnjudgedPolicy = "exclude") -> float:
    """Question-level mean: correct questions over all counted questions, prompts pooled."""
    return aggregate(verdicts, "question_mean", policy)


def dsg_score(verdicts: pd.DataFrame, policy: UnjudgedPolicy = "exclude") -> float:
    """Davidsonian Scene Graph: per-prompt mean after direct-parent filtering, averaged over prompts."""
    return aggregate(verdicts, "dsg", policy)


def veto_score(verdicts: pd.DataFrame, policy: UnjudgedPolicy = "exclude") -> float:
    """SciIR strict veto: the share of prompts whose every counted question is "yes"."""
    return aggregate(verdicts, "sciir_veto", policy)
