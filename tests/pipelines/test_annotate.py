"""The annotate pipeline on sample figures, with the offline annotator behind a real response cache."""

from __future__ import annotations

import io
import json
import random
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import ParquetDataset
from PIL import Image

from sciir.annotation.tables import ANNOTATION_COLUMNS
from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.offline import OfflineVLM
from sciir.pipelines.annotate import create_pipeline
from sciir.pipelines.annotate.nodes import annotate
from sciir.sample.law_topics import LAW_TOPICS
from sciir.sample.panel_kinds import render_panel
from sciir.sample.process_topics import PROCESS_TOPICS
from sciir.sample.prose import PanelProse, methods_text
from sciir.tasks.annotation import CHECKLIST_COLUMNS
from sciir.tasks.laws import compact
from sciir.tasks.registry import rule_book

PARAMS = {"tau": 7, "window": 2, "max_methods_chars": 4000}
PROCESS = next(topic for topic in PROCESS_TOPICS if topic.title == "Glucose metabolism")
LAW = LAW_TOPICS[0]


def _curated_row(sample_id: str, caption: str, methods_text: str, status: str = "kept") -> dict:
    return {
        "sample_id": sample_id,
        "caption": caption,
        "methods_text": methods_text,
        "status": status,
        "reason": None if status == "kept" else "panel smaller than 128 px",
    }


def _unreadable() -> Image.Image:
    return Image.open(io.BytesIO(b"these bytes are not an image"))


@pytest.fixture(scope="module")
def sample() -> dict:
    """Two drawn panels with the sample's prose, a text-free caption, a missing and an unreadable image."""
    rng = random.Random(0)
    process, law = render_panel("process", PROCESS, rng), render_panel("plot", LAW, rng)
    truth = process.truth
    curated = pd.DataFrame(
        [
            _curated_row(
                "process-p0",
                f"{process.description} {PROCESS.facts['law']}",
                methods_text(
                    [[PanelProse("process", PROCESS.title, truth.required_text, truth.relations)]], rng
                ),
            ),
            _curated_row("law-p0", f"{law.description} {LAW.facts['entity']}", "Measured at 20 C."),
            _curated_row("plain-p0", "Panel of the same plot.", ""),
            _curated_row("missing-p0", "Workflow of a missing panel.", ""),
            _curated_row("unreadable-p0", "Workflow of a broken panel.", ""),
            _curated_row("rejected-p0", "Workflow of a tiny icon.", "", status="rejected"),
        ]
    )
    images = {
        "process-p0": lambda: process.image,
        "law-p0": lambda: law.image,
        "plain-p0": lambda: law.image,
        "unreadable-p0": _unreadable,
    }
    return {"curated": curated, "images": images, "process_truth": process.truth}


@pytest.fixture(scope="module")
def first_run(sample: dict, tmp_path_factory) -> dict:
    cache_path = tmp_path_factory.mktemp("annotate") / "responses.sqlite"
    annotator = CachedVLM(OfflineVLM(rule_book("offline")), ResponseCache(cache_path))
    annotations, checklists, metrics = annotate(sample["curated"], sample["images"], annotator, PARAMS)
    return {
        "annotations": annotations,
        "checklists": checklists,
        "metrics": metrics,
        "cache_path": cache_path,
    }


@pytest.mark.slow
def test_every_kept_sample_gets_a_row(first_run: dict) -> None:
    annotations = first_run["annotations"].set_index("sample_id")
    assert tuple(first_run["annotations"].columns) == ANNOTATION_COLUMNS
    assert sorted(annotations.index) == ["law-p0", "missing-p0", "plain-p0", "process-p0", "unreadable-p0"]
    assert annotations.loc["missing-p0", "reason"] == "sample missing-p0: no image in curated_images"
    assert annotations.loc["unreadable-p0", "reason"].startswith(
        "sample unreadable-p0: image could not be read"
    )
    assert set(annotations.loc[["missing-p0", "unreadable-p0"], "status"]) == {"failed"}
    assert annotations.loc[["missing-p0", "unreadable-p0"], "score_process"].isna().all()


def test_process_panel_is_annotated_from_what_it_shows(first_run: dict, sample: dict) -> None:
    row = first_run["annotations"].set_index("sample_id").loc["process-p0"]
    truth = sample["process_truth"]
    assert row["status"] == "ok" and pd.isna(row["reason"])
    assert bool(row["label_process"]) and bool(row["label_law"]) and not bool(row["label_entity"])
    assert pd.read_json(io.StringIO(row["required_text"]), typ="series").tolist() == truth.required_text
    assert pd.read_json(io.StringIO(row["relations"]), typ="series").tolist() == truth.relations
    assert row["sci_rcot"].startswith("Style: flow diagram")
    assert row["abstract_prompt"].startswith("A flow diagram")


def test_checklists_follow_the_labels(first_run: dict, sample: dict) -> None:
    checklists = first_run["checklists"]
    assert tuple(checklists.columns) == CHECKLIST_COLUMNS
    process = checklists[checklists["sample_id"] == "process-p0"]
    text = process[process["layer"] == 1]
    assert text["expected_text"].tolist() == sample["process_truth"].required_text
    arrows = process[process["track"] == "process"]["question"]
    assert 'Is there an arrow from "Pyruvate" to "Fermentation"?' in arrows.tolist()
    assert set(process["track"]) == {"text", "process", "law"}  # labelled process and law, not entity
    # The law is stated by the caption only (not written in the panel): one positive, one negative question.
    law = process[process["track"] == "law"]
    assert law["about"].tolist() == [f'["{PROCESS.facts["law"]}"]'] * 2
    assert law["polarity"].tolist() == ["positive", "negative"] and set(law["kind"]) == {"law"}
    relations = process[process["kind"] == "relation"]
    assert set(relations["polarity"]) == {"positive", "negative"} and len(relations) == 2 * len(
        sample["process_truth"].relations
    )
    assert set(checklists["sample_id"]) <= {"process-p0", "law-p0"}


def test_a_plot_that_writes_its_law_gets_law_questions_about_the_written_equation(first_run: dict) -> None:
    checklists = first_run["checklists"]
    law = checklists[(checklists["sample_id"] == "law-p0") & (checklists["track"] == "law")]
    assert law["kind"].tolist() == ["law", "law"] and law["polarity"].tolist() == ["positive", "negative"]
    # About the equation as read (Tesseract may drop the spaces of "V = I R").
    abouts = [json.loads(about) for about in law["about"]]
    assert [[compact(statement) for statement in about] for about in abouts] == [["v=ir"], ["v=ir"]]
    annotations = first_run["annotations"].set_index("sample_id")
    assert json.loads(annotations.loc["law-p0", "laws"]) == abouts[0]


def test_text_without_track_vocabulary_is_low_reasoning(first_run: dict) -> None:
    row = first_run["annotations"].set_index("sample_id").loc["plain-p0"]
    assert row["status"] == "ok"
    assert not any(bool(row[f"label_{t}"]) for t in ("entity", "process", "law"))
    assert "low reasoning content" in row["reason"]
    assert pd.isna(row["abstract_prompt"])


def test_metrics_count_outcomes_and_cache(first_run: dict) -> None:
    metrics = first_run["metrics"]
    assert metrics["samples"] == 5
    assert metrics["annotated_ok"] == 3 and metrics["failed"] == 2 and metrics["low_reasoning"] == 1
    assert metrics["label_process"] == 1 and metrics["label_law"] == 2
    assert (
        metrics["cache_hits"] == 0 and metrics["cache_misses"] == 10
    )  # 3 x 2 figure tasks + 2 x 2 text tasks
    assert all(isinstance(value, float) for value in metrics.values())


def test_a_rerun_is_served_from_the_cache(first_run: dict, sample: dict) -> None:
    annotator = CachedVLM(OfflineVLM(rule_book("offline")), ResponseCache(first_run["cache_path"]))
    annotations, _, metrics = annotate(sample["curated"], sample["images"], annotator, PARAMS)
    assert metrics["cache_hits"] == 10 and metrics["cache_misses"] == 0
    # Reasons quote the image loader's error, which names an in-memory object here; compare the rest.
    pd.testing.assert_frame_equal(
        annotations.drop(columns="reason"), first_run["annotations"].drop(columns="reason")
    )


class _UnusableReasoningVLM(VisionLanguageModel):
    """Answers track scores properly and reasoning with a relation between labels it never listed."""

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        answers = {
            "track_scores": {"entity": 8, "process": 8, "law": 2, "rationale": "boxes and arrows"},
            "reasoning": {"terms": ["A"], "required_text": ["A"], "relations": [["A", "B"]], "sci_rcot": "s"},
        }
        return [VLMResult(output=answers[r.task]) for r in requests]


def test_an_unusable_answer_fails_its_sample_with_the_task_named(sample: dict) -> None:
    annotations, checklists, metrics = annotate(
        sample["curated"].iloc[:1], sample["images"], _UnusableReasoningVLM(), PARAMS
    )
    row = annotations.iloc[0]
    assert row["status"] == "failed"
    assert row["reason"].startswith("sample process-p0: reasoning answer does not match its schema")
    assert row["score_entity"] == 8  # the answers that were usable are kept
    assert checklists.empty and "cache_hits" not in metrics


def test_pipeline_runs_and_saves_parquet(sample: dict, tmp_path: Path) -> None:
    catalog = DataCatalog(
        {
            "curated": MemoryDataset(sample["curated"].iloc[:2]),
            "curated_images": MemoryDataset(sample["images"], copy_mode="assign"),
            "annotator": MemoryDataset(OfflineVLM(rule_book("offline")), copy_mode="assign"),
            "params:annotate": MemoryDataset(PARAMS),
            "params:aibench": MemoryDataset({}),
            "annotations": ParquetDataset(filepath=str(tmp_path / "annotations.parquet")),
            "checklists": ParquetDataset(filepath=str(tmp_path / "checklists.parquet")),
        }
    )
    pipeline = create_pipeline()
    inputs = {"curated", "curated_images", "annotator", "params:annotate", "params:aibench"}  # + AIBench
    assert pipeline.inputs() == inputs
    free = SequentialRunner().run(pipeline, catalog)
    saved = catalog.load("annotations")
    assert list(saved["sample_id"]) == ["process-p0", "law-p0"]
    assert str(saved["label_law"].dtype) == "boolean" and saved["label_law"].all()
    assert len(catalog.load("checklists")) > 0
    assert free["annotate_metrics"].load()["annotated_ok"] == 2
    # AIBench graphs come from the method text: the law panel's ("Measured at 20 C.") names no component.
    graphs = free["aibench_graphs"].load().set_index("sample_id")
    assert graphs.loc["law-p0", "reason"] == "sample law-p0: the method text names no component of the figure"
    assert set(free["aibench_qa"].load()["sample_id"]) == {"process-p0"}
