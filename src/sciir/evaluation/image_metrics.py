"""Per-image metrics of evaluate's ``sample_scores``: the checklist metrics human_corr compares with
ratings (docs/human_corr.md)."""

from __future__ import annotations

import pandas as pd

from sciir.evaluation.scoring import rules_in
from sciir.evaluation.tracks import FINAL

# Columns of ``image_metrics`` that describe an image; every other column is a metric.
IMAGE_COLUMNS = ("image_id", "model", "sample_id", "group", "setting")


def image_metrics(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """Per image (``<model>/<sample_id>``): the checklist metrics that are compared with ratings.

    - ``checklist_pass_rate``: judged questions answered "yes" / judged questions (NaN when none judged);
    - ``text_pass``: the text category's veto result as 1.0 / 0.0 (NaN when unjudged or absent);
    - ``final_pass``: the sample's final veto result as 1.0 / 0.0 (NaN when unjudged);
    - ``<rule>.<track>``: the image's score under every aggregation rule evaluate computed, for
      ``final`` and each category (e.g. ``tifa.final``, ``dsg.process``; NaN when it has no result).
    """
    primary = sample_scores[sample_scores["aggregation"] == rules_in(sample_scores)[0]]
    keys = ["model", "sample_id"]
    finals = primary[primary["track"] == FINAL].set_index(keys)
    texts = primary[primary["track"] == "text"].set_index(keys)
    table = finals[["group", "setting"]].copy()
    table["checklist_pass_rate"] = finals["n_yes"].div(finals["n_judged"].where(finals["n_judged"] > 0))
    table["text_pass"] = texts["passed"].astype("Float64").reindex(finals.index).astype(float)
    table["final_pass"] = finals["passed"].astype("Float64").astype(float)
    named = sample_scores.assign(metric=sample_scores["aggregation"] + "." + sample_scores["track"])
    per_rule = named.pivot_table(index=keys, columns="metric", values="score", aggfunc="first", dropna=False)
    table = table.join(per_rule.reindex(finals.index)).reset_index()
    table.insert(0, "image_id", table["model"] + "/" + table["sample_id"])
    return table


def evaluate_metric_scores(sample_scores: pd.DataFrame) -> pd.DataFrame:
    """Evaluate's per-image metrics as metric scores (image_id, metric, score, model, sample_id, group,
    setting): checklist_pass_rate, text_pass, final_pass and ``<rule>.<track>`` for every aggregation
    rule evaluate computed (``image_metrics``)."""
    table = image_metrics(sample_scores)
    described = list(IMAGE_COLUMNS)
    metrics = [column for column in table.columns if column not in IMAGE_COLUMNS]
    scores = table.melt(id_vars=described, value_vars=metrics, var_name="metric", value_name="score")
    return scores[["image_id", "metric", "score", *[c for c in described if c != "image_id"]]]
