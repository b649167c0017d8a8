"""Annotation quality metrics on small hand-built truth and annotations."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from sciir.figures.ids import sample_id
from sciir.sample import write_embedded_sample
from sciir.sample.annotation_quality import (
    Counts,
    annotation_quality,
    box_iou,
    relation_counts,
    relation_errors,
    sample_truth,
    term_counts,
    track_counts,
)

STEPS = ["Cell lysis", "Centrifugation", "Elution"]
EDGES = [["Cell lysis", "Centrifugation"], ["Centrifugation", "Elution"]]


def test_terms_ignore_case_and_spacing_and_a_missing_term_lowers_recall() -> None:
    assert term_counts(STEPS, ["cell  lysis", "CENTRIFUGATION", "Elution"]) == Counts(3, 0, 0)
    missing = term_counts(STEPS, ["Cell lysis", "Elution"])
    assert missing == Counts(2, 0, 1) and missing.recall == pytest.approx(2 / 3) and missing.precision == 1.0


def test_a_reversed_relation_is_a_false_positive_and_a_false_negative() -> None:
    assert relation_counts(EDGES, EDGES) == Counts(2, 0, 0)
    swapped = relation_counts(EDGES, [["Cell lysis", "Centrifugation"], ["Elution", "Centrifugation"]])
    assert swapped == Counts(1, 1, 1) and swapped.precision == 0.5 and swapped.recall == 0.5


def test_nothing_annotated_or_nothing_true_leaves_the_ratio_undefined() -> None:
    assert relation_counts([], []).precision is None and relation_counts([], []).recall is None
    assert relation_counts(EDGES, []).precision is None and relation_counts(EDGES, []).recall == 0.0


@pytest.mark.parametrize(
    ("truth", "label", "expected"),
    [(["process"], True, Counts(1, 0, 0)), (["process"], None, Counts(0, 0, 1)),
     (["law"], True, Counts(0, 1, 0)), (["law"], False, Counts(0, 0, 0))],
)  # fmt: skip
def test_track_label_counts(truth: list[str], label: bool | None, expected: Counts) -> None:
    assert track_counts(truth, {"process": label}, "process") == expected


def test_box_iou() -> None:
    assert box_iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert box_iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert box_iou([0, 0, 10, 10], [20, 20, 30, 30]) == 0.0


def _annotation(sid: str, terms: list[str], relations: list[list[str]], labels: dict[str, bool | None],
                status: str = "ok", shown: dict[str, tuple[list[str], list[str]]] | None = None) -> dict:  # fmt: skip
    """An annotations row; ``shown`` maps a track to its (terms, visualizations), other tracks get none."""
    shown = shown or {}
    tracks = ("entity", "process", "law")
    evidence = {f"{part}_{track}": json.dumps(shown.get(track, ([], []))[index])
                for track in tracks for index, part in enumerate(("terms", "visualizations"))}  # fmt: skip
    return {"sample_id": sid, "terms": json.dumps(terms), "required_text": json.dumps(terms),
            "relations": json.dumps(relations), "status": status, **evidence,
            **{f"label_{track}": labels.get(track) for track in tracks}}  # fmt: skip


def test_quality_joins_by_sample_id_counts_ok_samples_and_leaves_out_misjoined_panels() -> None:
    truth = pd.DataFrame(
        [
            {"sample_id": "a", "required_text": STEPS, "relations": EDGES, "tracks": ["entity", "process"],
             "shows": ["law", "process"], "bbox": [0, 0, 100, 100]},
            {"sample_id": "b", "required_text": ["R1"], "relations": [], "tracks": ["law"], "shows": ["entity"],
             "bbox": [0, 0, 50, 50]},
            {"sample_id": "c", "required_text": ["Vin"], "relations": [], "tracks": ["law"], "shows": ["entity"],
             "bbox": [0, 0, 50, 50]},
            {"sample_id": "d", "required_text": ["C1"], "relations": [], "tracks": ["law"], "shows": ["entity"],
             "bbox": [0, 0, 50, 50]},
        ]
    )  # fmt: skip
    annotations = pd.DataFrame(
        [
            _annotation(
                "a",
                [*STEPS, "Tube"],
                [EDGES[0], ["Elution", "Centrifugation"]],
                {"process": True},
                shown={
                    "process": (STEPS, ["arrow from Cell lysis to Centrifugation"]),
                    "entity": (["Tube"], ["structural drawing labelled Tube"]),
                    "law": (["Elution"], []),
                },
            ),  # law terms without a visualisation: not shown
            _annotation("b", ["R1"], [], {"law": True}, status="failed"),
            _annotation("c", ["Vin"], [], {"law": True}),  # split differently by curate: left out
            _annotation("z", ["Noise"], [["X", "Y"]], {"entity": True}),  # not in the truth
        ]
    )
    curated = pd.DataFrame(
        {"sample_id": ["a", "b", "c", "d"], "status": ["kept", "kept", "kept", "review"],
         "x0": [0, 0, 60, None], "y0": [0, 0, 60, None], "x1": [100, 50, 110, None], "y1": [100, 50, 110, None]}
    )  # fmt: skip
    table, summary = annotation_quality(truth, annotations, curated)
    measures = table.set_index("measure")
    assert measures.loc["terms", ["tp", "fp", "fn"]].tolist() == [3, 1, 0]
    assert measures.loc["relations", ["tp", "fp", "fn"]].tolist() == [1, 1, 1]
    assert measures.loc["label_entity", ["tp", "fp", "fn"]].tolist() == [0, 0, 1]
    assert measures.loc["labels_micro", ["tp", "fp", "fn"]].tolist() == [1, 0, 1]
    # tracks the drawing shows: process found, entity added, law missed
    assert measures.loc["shown_process", ["tp", "fp", "fn"]].tolist() == [1, 0, 0]
    assert measures.loc["shown_entity", ["tp", "fp", "fn"]].tolist() == [0, 1, 0]
    assert measures.loc["shown_law", ["tp", "fp", "fn"]].tolist() == [0, 0, 1]
    assert measures.loc["shown_micro", ["precision", "recall"]].tolist() == [0.5, 0.5]
    errors = relation_errors(truth, annotations)
    assert errors.to_dict("records") == [
        {
            "sample_id": "a",
            "missed": [("centrifugation", "elution")],
            "added": [("elution", "centrifugation")],
        }
    ]
    assert summary == {"samples_truth": 4, "samples_annotated": 3, "samples_counted": 1, "misjoined": 1,
                       "coverage": 0.25, "not_annotated": {"review": 1}}  # fmt: skip


@pytest.mark.slow
def test_sample_truth_has_one_row_per_panel_of_every_kept_figure(tmp_path) -> None:
    manifest = write_embedded_sample(tmp_path, seed=7)
    truth = sample_truth(tmp_path)
    kept = [figure for figure in manifest["figures"] if figure["expected"] == "kept"]
    assert len(truth) == sum(figure["n_panels"] for figure in kept) and truth["sample_id"].is_unique
    doi = {article["article_id"]: article["doi"] for article in manifest["articles"]}
    first = kept[0]
    assert sample_id(doi[first["article_id"]], first["figure_id"], 0) in set(truth["sample_id"])
    assert all(len(relation) == 2 for relations in truth["relations"] for relation in relations)
    # every panel's drawing shows a track; the combined panels show two or three
    assert all(truth["shows"].map(len) >= 1)
    assert (truth["shows"].map(len) >= 2).sum() >= 16
