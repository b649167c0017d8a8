"""The evaluate pipeline end to end on 2 models x 2 samples with a scripted judge.

good/s1: white image, every check passes.      good/s2: the judge request fails.
bad/s1: black image, layer-2 checks fail and the reply invents an id.   bad/s2: generation failed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from kedro_datasets.text import TextDataset
from lxml import html
from matplotlib.figure import Figure
from PIL import Image

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.pipelines.evaluate import create_pipeline
from sciir.pipelines.evaluate.nodes import judge_generations

PARAMS = {"unjudged_policy": "exclude", "batch_size": 2, "thumbnail_px": 64}
JUDGE_INPUTS = ("benchmark", "checklists", "generations", "generation_manifest", "judge", "params:evaluate")


class ScriptedJudge(VisionLanguageModel):
    """A judge that looks at the image: on white every check passes; on black only text checks pass
    and the reply also answers a question that does not exist. A prompt mentioning an outage fails."""

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: VLMRequest) -> VLMResult:
        if "outage" in request.context["prompt"]:
            return VLMResult.failed("scripted outage")
        white = Image.open(io.BytesIO(request.images[0])).convert("L").getpixel((0, 0)) == 255
        answers = [
            {
                "id": question["id"],
                "verdict": "yes" if white or question["layer"] == 1 else "no",
                "evidence": "white canvas" if white else "black canvas",
                "reasoning": "Scripted.",
            }
            for question in request.context["checklist"]
        ]
        if not white:
            answers.append({"id": "invented", "verdict": "yes", "evidence": "", "reasoning": ""})
        return VLMResult(output={"answers": answers})


def inputs(tmp_path) -> dict:
    benchmark = pd.DataFrame(
        {
            "sample_id": ["s1", "s2"],
            "group": ["All_Three", "Entity_Process"],
            "setting": ["instruction_following", "intrinsic_reasoning"],
            "term_count": [4, 5],
            "prompt": ["Draw the ATP cycle.", "Draw the outage diagram."],
            "plan": [json.dumps({"labels": ["ATP"], "edges": []})] * 2,
        }
    )
    checklists = pd.DataFrame(
        {
            "sample_id": ["s1", "s1", "s1", "s2", "s2"],
            "question_id": ["t1", "e1", "p1", "t1", "e1"],
            "layer": [1, 2, 2, 1, 2],
            "track": ["text", "entity", "process", "text", "entity"],
            "question": ["ATP spelled?", "Enzyme shown?", "ADP to ATP?", "Grid spelled?", "Grid shown?"],
            "expected_text": ["ATP", None, None, "Grid", None],
            "parent_ids": ["[]"] * 5,
        }
    )
    manifest = pd.DataFrame(
        {
            "model": ["good", "good", "bad", "bad"],
            "sample_id": ["s1", "s2", "s1", "s2"],
            "backend": ["programmatic"] * 4,
            "seed": [0] * 4,
            "status": ["ok", "ok", "ok", "failed"],
            "reason": [None, None, None, "CUDA out of memory"],
            "seconds": [0.1] * 4,
            "meta": ["{}"] * 4,
        }
    )
    generations = {
        "good/s1": lambda: Image.new("RGB", (96, 96), "white"),
        "good/s2": lambda: Image.new("RGB", (96, 96), "white"),
        "bad/s1": lambda: Image.new("RGB", (96, 96), "black"),
        "retired/s1": lambda: Image.new("RGB", (96, 96), "white"),  # stale: not in the manifest
    }
    judge = CachedVLM(ScriptedJudge(), ResponseCache(tmp_path / "responses.sqlite"))
    return {
        "benchmark": benchmark,
        "checklists": checklists,
        "generations": generations,
        "generation_manifest": manifest,
        "judge": judge,
        "params:evaluate": PARAMS,
    }


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict:
    """Run the pipeline with the catalog's file formats for the tables, so they must be saveable."""
    folder = tmp_path_factory.mktemp("eval")
    datasets = {name: MemoryDataset(data) for name, data in inputs(folder).items()}
    datasets["judge"] = MemoryDataset(datasets["judge"].load(), copy_mode="assign")
    datasets |= {
        "verdicts": ParquetDataset(filepath=str(folder / "verdicts.parquet")),
        "sample_scores": ParquetDataset(filepath=str(folder / "sample_scores.parquet")),
        "leaderboard": CSVDataset(filepath=str(folder / "leaderboard.csv"), save_args={"index": False}),
        "report": TextDataset(filepath=str(folder / "report.html")),
    }
    catalog = DataCatalog(datasets)
    free = SequentialRunner().run(create_pipeline(), catalog)
    saved = {name: catalog.load(name) for name in ("verdicts", "sample_scores", "leaderboard", "report")}
    return {name: free[name].load() for name in free} | saved


def test_pipeline_matches_the_contract():
    pipeline = create_pipeline()
    assert pipeline.inputs() == set(JUDGE_INPUTS)
    assert pipeline.all_outputs() - {"evaluate_judge_summary"} == {
        "verdicts", "sample_scores", "leaderboard", "report", "evaluate_plot_tracks", "evaluate_metrics"
    }  # fmt: skip


def test_verdicts_record_every_question_with_reasons(outputs):
    verdicts = outputs["verdicts"].set_index(["model", "sample_id", "question_id"]).sort_index()
    assert len(verdicts) == 10
    assert set(outputs["verdicts"].model) == {"good", "bad"}
    assert verdicts.loc[("good", "s1", "p1"), "verdict"] == "yes"
    assert verdicts.loc[("bad", "s1", "e1"), ["verdict", "status"]].tolist() == ["no", "judged"]
    assert verdicts.loc[("bad", "s1", "t1"), "verdict"] == "yes"
    failed_request = verdicts.loc[("good", "s2")]
    assert set(failed_request.status) == {"failed"} and failed_request.verdict.isna().all()
    assert set(failed_request.reason) == {"judge request for good/s2 failed: scripted outage"}
    missing = verdicts.loc[("bad", "s2")]
    assert set(missing.status) == {"failed"}
    assert set(missing.reason) == {"no image from model bad for sample s2: CUDA out of memory"}
    assert "invented" not in outputs["verdicts"].question_id.tolist()


def test_scores_and_leaderboard(outputs):
    board = outputs["leaderboard"].set_index("model")
    assert list(outputs["leaderboard"].model) == ["good", "bad"]
    assert board.loc["good", "final"] == 1.0 and board.loc["good", "coverage"] == pytest.approx(3 / 5)
    assert board.loc["bad", "final"] == 0.0 and board.loc["bad", "text"] == 1.0
    assert board.loc["bad", "entity"] == 0.0 and board.loc["bad", "coverage"] == pytest.approx(3 / 5)
    assert board.loc["good", "n_samples"] == 2
    scores = outputs["sample_scores"]
    unjudged = scores[(scores.model == "good") & (scores.sample_id == "s2")]
    assert unjudged.passed.isna().all() and (unjudged.n_judged == 0).all()


def test_metrics_report_and_plot(outputs):
    metrics = outputs["evaluate_metrics"]
    assert metrics["good.final"] == 1.0 and metrics["bad.coverage"] == pytest.approx(0.6)
    assert metrics["bad.missing_images"] == 1.0 and metrics["good.missing_images"] == 0.0
    assert metrics["judge_failed_requests"] == 1.0 and metrics["judge_ignored_answers"] == 1.0
    assert metrics["judge_cache_misses"] == 3.0 and metrics["judge_cache_hits"] == 0.0
    assert metrics["good.coverage.process"] == 1.0 and metrics["bad.group.All_Three"] == 0.0
    assert isinstance(outputs["evaluate_plot_tracks"], Figure)
    doc = html.fromstring(outputs["report"])
    failed = doc.xpath('//section[@id="bad/s1"]//tr[contains(concat(" ", @class, " "), " fail ")]')
    assert {row.get("data-question-id") for row in failed} == {"e1", "p1"}
    assert len(doc.xpath("//img")) == 3  # good/s2 is shown although its judge request failed
    assert "CUDA out of memory" in doc.xpath('//section[@id="bad/s2"]')[0].text_content()


def test_unreadable_image_file_is_recorded_not_judged(tmp_path):
    data = inputs(tmp_path)
    data["generations"]["good/s1"] = lambda: Image.open(io.BytesIO(b"not a png"))
    verdicts, summary = judge_generations(*(data[name] for name in JUDGE_INPUTS))
    rows = verdicts[(verdicts.model == "good") & (verdicts.sample_id == "s1")]
    assert set(rows.status) == {"failed"} and rows.verdict.isna().all()
    assert rows.reason.iloc[0].startswith(
        "no image from model good for sample s1: the image file could not be read"
    )
    assert summary["missing_images"] == {"bad": 1, "good": 1}
    assert summary["cache"]["misses"] == 2  # only good/s2 and bad/s1 reached the judge
