"""Checkpoints scored while training, through the finetune pipeline on the project's catalog: the tiny model
trained 4 steps, its adapter of steps 2 and 4 drawn on a seeded subset of held-out samples by the diffusers
generator and judged by a scripted judge through evaluate's judging and scoring; the pass rates read back
from the MLflow store as step series, the best step's adapter delivered and registered, tagged with its step
and score."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import pytest
from kedro.runner import SequentialRunner
from PIL import Image

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.diffusers_gen import DiffusersGenerator
from sciir.evaluation.checkpoint_scores import seeded_subset, validation_items
from sciir.pipelines.finetune import create_pipeline
from sciir.pipelines.finetune.checkpoint_scoring import scoring_subset
from sciir.tasks.annotation import CHECKLIST_COLUMNS
from sciir.training.finetune_params import FinetuneParams
from sciir.training.lora_adapter import ADAPTER_FILE


class ScriptedJudge(VisionLanguageModel):
    """Answers every question of its n-th request with ``verdicts[n]`` (then "no"), as a judge's JSON."""

    def __init__(self, verdicts: Sequence[str]) -> None:
        super().__init__(script="per request")
        self.verdicts = list(verdicts)
        self.served = 0

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: VLMRequest) -> VLMResult:
        verdict = self.verdicts[self.served] if self.served < len(self.verdicts) else "no"
        self.served += 1
        ids = (request.json_schema or {})["properties"]["answers"]["items"]["properties"]["id"]["enum"]
        answers = [{"id": qid, "evidence": "", "reasoning": "scripted", "verdict": verdict} for qid in ids]
        return VLMResult(output={"answers": answers})


def train_rows(tmp_path: Path, n: int) -> pd.DataFrame:
    rows = []
    for index in range(n):
        path = tmp_path / "images" / f"s{index}.png"
        path.parent.mkdir(exist_ok=True)
        Image.new("RGB", (64, 64), (40 * index, 255 - 40 * index, 128)).save(path)
        rows.append(
            {"sample_id": f"s{index}", "prompt": f'a box labelled "B{index}"', "image_path": str(path)}
        )
    return pd.DataFrame(rows)


def checklists(sample_ids: Sequence[str]) -> pd.DataFrame:
    """One text question per sample."""
    rows = [
        dict.fromkeys(CHECKLIST_COLUMNS)
        | {
            "sample_id": sample_id,
            "question_id": f"{sample_id}_q1",
            "layer": 1,
            "track": "text",
            "kind": "text",
            "polarity": "positive",
            "question": f'Is "{sample_id}" written?',
            "expected_text": sample_id,
            "parent_ids": "[]",
        }
        for sample_id in sample_ids
    ]
    return pd.DataFrame(rows, columns=list(CHECKLIST_COLUMNS))


@pytest.fixture
def params(tmp_path, finetune_defaults):
    return finetune_defaults | {
        "tiny_model_path": str(tmp_path / "tiny_base"),
        "encoding_cache": None,
        "adapter_path": str(tmp_path / "lora"),
        "resolution": 32,
        "steps": 4,
        "eval_every": 2,
        "max_train_samples": 3,
        "checkpoint_scoring": finetune_defaults["checkpoint_scoring"]
        | {"generator": "tiny_lora", "n_samples": 2},
    }


def test_the_subset_is_seeded_and_held_out_of_training(params, tmp_path):
    rows = train_rows(tmp_path, 8)
    config = FinetuneParams.model_validate(params)
    empty = rows.iloc[0:0]
    items, questions, source = scoring_subset(config, rows, empty, checklists(rows["sample_id"]))
    # The validation split is empty: the rows after the first max_train_samples, never trained on.
    assert source.startswith("training rows not trained on (after the first 3")
    assert len(items) == 2 and set(items["sample_id"]) <= {"s3", "s4", "s5", "s6", "s7"}
    assert set(questions["sample_id"]) == set(items["sample_id"])
    # The same samples from any row order; more samples sorting after them change nothing.
    held_out = validation_items(rows.iloc[3:], None)
    again = seeded_subset(held_out.iloc[::-1], 2, config.checkpoint_scoring.seed)
    assert list(again["sample_id"]) == list(items["sample_id"])
    validation = rows.iloc[:2]
    items, _, source = scoring_subset(config, rows, validation, checklists(["s0"]))
    assert source == "validation split" and list(items["sample_id"]) == ["s0"]


@pytest.mark.slow
def test_finetune_scores_its_checkpoints_logs_the_series_and_registers_the_best(
    params, tmp_path, project_catalog, mlflow_run, mlflow_store
):
    rows = train_rows(tmp_path, 6)
    generator = DiffusersGenerator(
        pipeline_path=params["tiny_model_path"], lora_path=params["adapter_path"], steps=2, resolution=32
    )
    # Step 2: one of the two samples passes; step 4 (the last): none.
    judge = ScriptedJudge(["yes", "no", "no", "no"])
    catalog = project_catalog(
        create_pipeline(),
        {
            "train_split": rows,
            "validation_split": rows.iloc[0:0],
            "checklists": checklists(rows["sample_id"]),
            "judge": judge,
            "generators": {"tiny_lora": generator},
            "params:finetune": params,
        },
    )
    SequentialRunner().run(create_pipeline(), catalog)
    run_id = mlflow_run.info.run_id

    series = mlflow_store.get_metric_history(run_id, "finetune.checkpoint.final_pass_rate")
    assert [(point.step, point.value) for point in sorted(series, key=lambda p: p.step)] == [
        (2, 0.5),
        (4, 0.0),
    ]
    coverage = mlflow_store.get_metric_history(run_id, "finetune.checkpoint.coverage")
    assert [point.value for point in coverage] == [1.0, 1.0]
    assert judge.served == 4  # two samples, one request each, per scored adapter

    summary = catalog.load("finetune_summary")
    scoring = summary["checkpoint_scoring"]
    assert summary["adapter_step"] == scoring["adapter_step"] == 2 and summary["steps"] == 4
    assert [record["step"] for record in scoring["scores"]] == [2, 4]
    assert scoring["adapter_score"]["final_pass_rate"] == 0.5 and len(scoring["sample_ids"]) == 2
    # The best step's adapter is the one delivered, the last step's kept beside it.
    lora = Path(params["adapter_path"])
    best = lora / "scored" / "step-000002" / ADAPTER_FILE
    assert (lora / ADAPTER_FILE).read_bytes() == best.read_bytes()
    assert best.read_bytes() != (lora / "scored" / "step-000004" / ADAPTER_FILE).read_bytes()

    best_point = max(series, key=lambda point: (point.value, point.step))
    (version,) = mlflow_store.search_model_versions("name = 'sciir-lora'")
    assert version.run_id == run_id
    assert version.tags["checkpoint.step"] == str(best_point.step)
    assert float(version.tags["checkpoint.final_pass_rate"]) == best_point.value
    assert version.tags["adapter_sha256"] == hashlib.sha256(best.read_bytes()).hexdigest()
    assert json.loads((tmp_path / "data" / "06_models" / "finetune_summary.json").read_text()) == summary
