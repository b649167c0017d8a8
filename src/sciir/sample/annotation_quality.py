"""Annotation quality against the embedded sample's ground truth: precision and recall per field.

The truth of a sample (one panel of a figure, joined by ``sample_id``) is its panel's truth file entry
(``<figure>.truth.json`` beside the image): ``required_text`` (the labels the panel draws that name its
content) for terms and required text, ``relations`` (the arrows it draws, directed) for relations, the
figure's ``tracks`` for track labels, and the panel's ``shows`` (the tracks its drawing itself shows)
for the per-track visualisations: a track counts as shown by the annotation when its ``terms_<track>``
and ``visualizations_<track>`` are both non-empty (the rule bench_select groups by). Strings are
compared ignoring case and runs of whitespace.

Counts are summed over samples (micro): a term, relation or track label is a true positive when the
annotation and the truth both hold it, a false positive when only the annotation does, a false
negative when only the truth does. A reversed relation is one false positive and one false negative.
Only samples annotated ``ok`` are counted; ``coverage`` says how many of the truth's samples that is.
A curated panel whose box does not overlap its truth box (IoU below ``MIN_BOX_IOU``) was split
differently from the drawing: its truth is not its content, so it is left out and counted as misjoined.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from sciir.figures.ids import sample_id
from sciir.tasks.annotation import TRACKS

MIN_BOX_IOU = 0.5
MEASURE_COLUMNS = ["measure", "tp", "fp", "fn", "precision", "recall"]
MEASURES = (
    "terms",
    "required_text",
    "relations",
    *(f"label_{track}" for track in TRACKS),
    "labels_micro",
    *(f"shown_{track}" for track in TRACKS),
    "shown_micro",
)


@dataclass(frozen=True)
class Counts:
    """True positives, false positives and false negatives of one measure."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float | None:
        """Share of the annotated items that are true; None when nothing was annotated."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """Share of the true items annotated; None when the truth holds none."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def normalised(text: str) -> str:
    """A string compared ignoring case and runs of whitespace."""
    return " ".join(text.casefold().split())


def set_counts(truth: Iterable[Any], predicted: Iterable[Any]) -> Counts:
    """Counts of two sets of hashable items."""
    truth_set, predicted_set = set(truth), set(predicted)
    return Counts(
        len(truth_set & predicted_set), len(predicted_set - truth_set), len(truth_set - predicted_set)
    )


def term_counts(truth: Iterable[str], predicted: Iterable[str]) -> Counts:
    """Counts of two lists of strings (terms, required text)."""
    return set_counts(map(normalised, truth), map(normalised, predicted))


def directed_pairs(items: Iterable[Sequence[str]]) -> set[tuple[str, str]]:
    """Pairs [source, target] as comparable tuples: (A, B) and (B, A) are different pairs."""
    return {(normalised(source), normalised(target)) for source, target in items}


def relation_counts(truth: Iterable[Sequence[str]], predicted: Iterable[Sequence[str]]) -> Counts:
    """Counts of two lists of directed pairs [source, target]."""
    return set_counts(directed_pairs(truth), directed_pairs(predicted))


def track_counts(truth_tracks: Iterable[str], labels: Mapping[str, bool | None], track: str) -> Counts:
    """Counts of one track label (or one track shown): the annotation's (a missing one is not set)
    against the truth."""
    expected, labelled = track in set(truth_tracks), bool(labels.get(track))
    return Counts(int(expected and labelled), int(labelled and not expected), int(expected and not labelled))


def _figure_rows(sample_dir: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    """(DOI, figure truth) for every figure of the sample that has a truth file."""
    manifest = json.loads((sample_dir / "MANIFEST.json").read_text(encoding="utf-8"))
    dois = {article["article_id"]: article["doi"] for article in manifest["articles"]}
    for figure in manifest["figures"]:
        if figure["truth"] and figure["expected"] == "kept":
            truth = json.loads((sample_dir / figure["truth"]).read_text(encoding="utf-8"))
            yield dois[figure["article_id"]], truth


def sample_truth(sample_dir: Path) -> pd.DataFrame:
    """One row per panel of every figure the sample expects kept: sample_id, required_text, relations,
    tracks, the tracks the panel's drawing shows and the panel's box in the figure."""
    rows = [
        {
            "sample_id": sample_id(doi, truth["figure_id"], panel["panel_index"]),
            "required_text": panel["required_text"],
            "relations": panel["relations"],
            "tracks": truth["tracks"],
            "shows": sorted(panel.get("shows", {})),
            "bbox": panel["bbox"],
        }
        for doi, truth in _figure_rows(sample_dir)
        for panel in truth["panels"]
    ]
    return pd.DataFrame(rows, columns=["sample_id", "required_text", "relations", "tracks", "shows", "bbox"])


def box_iou(first: Sequence[float], second: Sequence[float]) -> float:
    """Intersection over union of two boxes (x0, y0, x1, y1)."""
    width = min(first[2], second[2]) - max(first[0], second[0])
    height = min(first[3], second[3]) - max(first[1], second[1])
    inter = max(0.0, width) * max(0.0, height)
    areas = [(box[2] - box[0]) * (box[3] - box[1]) for box in (first, second)]
    union = sum(areas) - inter
    return inter / union if union > 0 else 0.0


def misjoined(truth: pd.DataFrame, curated: pd.DataFrame) -> set[str]:
    """Sample ids whose curated panel box does not overlap the truth's box of the same panel index."""
    boxes = curated.dropna(subset=["x0"]).set_index("sample_id")[["x0", "y0", "x1", "y1"]]
    # Each row's fields are typed by the table (pandas-stubs types each as any scalar).
    rows: Iterable[Any] = truth.itertuples(index=False)
    return {
        row.sample_id
        for row in rows
        if row.sample_id in boxes.index and box_iou(boxes.loc[row.sample_id].tolist(), row.bbox) < MIN_BOX_IOU
    }


def _json_list(value: Any) -> list[Any]:
    """An annotation cell holding a JSON list (null when the task was not answered)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


def _labels(row: Mapping[Hashable, Any]) -> dict[str, bool | None]:
    return {
        track: None if pd.isna(row[f"label_{track}"]) else bool(row[f"label_{track}"]) for track in TRACKS
    }


def _shown(row: Mapping[Hashable, Any]) -> dict[str, bool]:
    """Per track, whether the annotation gives it terms and visualisations (columns missing: not shown)."""
    return {
        track: bool(_json_list(row.get(f"terms_{track}")))
        and bool(_json_list(row.get(f"visualizations_{track}")))
        for track in TRACKS
    }


def _joined(truth: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """Truth rows with the ``ok`` annotation of the same sample_id (truth columns suffixed ``_truth``)."""
    return truth.merge(annotations[annotations["status"] == "ok"], on="sample_id", suffixes=("_truth", ""))


def relation_errors(truth: pd.DataFrame, annotations: pd.DataFrame) -> pd.DataFrame:
    """Per sample annotated ok with a wrong relation: the true pairs it missed and the pairs it added."""
    rows = []
    for row in _joined(truth, annotations).to_dict("records"):
        expected, found = directed_pairs(row["relations_truth"]), directed_pairs(_json_list(row["relations"]))
        if expected != found:
            rows.append({"sample_id": row["sample_id"], "missed": sorted(expected - found),
                         "added": sorted(found - expected)})  # fmt: skip
    return pd.DataFrame(rows, columns=["sample_id", "missed", "added"])


def quality_counts(truth: pd.DataFrame, annotations: pd.DataFrame) -> dict[str, Counts]:
    """Counts per measure over the samples both annotated ``ok`` and in the truth (joined by sample_id)."""
    joined = _joined(truth, annotations)
    totals = {measure: Counts() for measure in MEASURES}

    def add(measure: str, counts: Counts) -> None:
        totals[measure] += counts

    for row in joined.to_dict("records"):
        add("terms", term_counts(row["required_text_truth"], _json_list(row["terms"])))
        add("required_text", term_counts(row["required_text_truth"], _json_list(row["required_text"])))
        add("relations", relation_counts(row["relations_truth"], _json_list(row["relations"])))
        for track in TRACKS:
            add(f"label_{track}", track_counts(row["tracks"], _labels(row), track))
            add(f"shown_{track}", track_counts(row["shows"], _shown(row), track))
    totals["labels_micro"] = sum((totals[f"label_{track}"] for track in TRACKS), Counts())
    totals["shown_micro"] = sum((totals[f"shown_{track}"] for track in TRACKS), Counts())
    return totals


def measures_table(counts: Mapping[str, Counts]) -> pd.DataFrame:
    """One row per measure: tp, fp, fn, precision and recall (NaN where undefined)."""
    rows = [
        {"measure": name, "tp": c.tp, "fp": c.fp, "fn": c.fn, "precision": c.precision, "recall": c.recall}
        for name, c in counts.items()
    ]
    return pd.DataFrame(rows, columns=MEASURE_COLUMNS)


def coverage_summary(
    truth: pd.DataFrame, annotations: pd.DataFrame, curated: pd.DataFrame, left_out: set[str]
) -> dict[str, Any]:
    """How many truth samples were annotated ok (and so counted), of all the truth holds; those never
    annotated by their curated status (``review``: awaiting a person; ``missing``: not in curated)."""
    ok = set(annotations.loc[annotations["status"] == "ok", "sample_id"])
    truth_ids = set(truth["sample_id"])
    counted = (ok & truth_ids) - left_out
    status = dict(zip(curated["sample_id"], curated["status"], strict=True))
    unannotated = sorted(status.get(sid, "missing") for sid in truth_ids - set(annotations["sample_id"]))
    return {
        "samples_truth": len(truth_ids),
        "samples_annotated": len(truth_ids & set(annotations["sample_id"])),
        "samples_counted": len(counted),
        "misjoined": len(left_out & truth_ids),
        "coverage": len(counted) / len(truth_ids) if truth_ids else None,
        "not_annotated": {name: unannotated.count(name) for name in dict.fromkeys(unannotated)},
    }


def annotation_quality(
    truth: pd.DataFrame, annotations: pd.DataFrame, curated: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The measures table and the coverage summary of one annotate run on the sample."""
    left_out = misjoined(truth, curated)
    kept_truth = truth[~truth["sample_id"].isin(left_out)]
    table = measures_table(quality_counts(kept_truth, annotations))
    return table, coverage_summary(truth, annotations, curated, left_out)
