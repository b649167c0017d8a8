"""The evaluate pipeline end to end with a scripted judge.

good/s1: white image, every check passes.      good/s2: the judge request fails.
bad/s1: black image, layer-2 checks fail and the reply invents an id.   bad/s2: generation failed.
retired/s1: an image file with no manifest rows: judged like any other.   retired/s2: no file.
good and bad record what they drew (manifest meta), so the judge is validated on them.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from lxml import html
from matplotlib.figure import Figure
from PIL import Image

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.catalog.report_dataset import ReportFolderDataset
from sciir.evaluation.params import EvaluateParams
from sciir.evaluation.plots import figure_png
from sciir.pipelines.evaluate import create_pipeline
from sciir.pipelines.evaluate.nodes import judge_generations, plot_tracks, validate_judge
from sciir.pipelines.evaluate.pipeline import sciir_evaluation_pipeline
from sciir.testing.scripted import LastToFirst

# The blank baseline is tested in tests/pipelines/test_sanity_baselines.py; here the models are the ones drawn.
NO_BLANK = {"blank": {"enabled": False}}
PARAMS = {
    "unjudged_policy": "exclude",
    "window": 2,
    "thumbnail_px": 64,
    "bootstrap": {"n_boot": 100},
} | NO_BLANK
JUDGE_INPUTS = ("benchmark", "checklists", "generations", "generation_manifest", "judge", "params:evaluate")
# The review app's judge audit (the catalog's review_audit): nobody audited in these runs.
NO_AUDIT = pd.DataFrame(
    columns=["model", "sample_id", "question_id", "question_kind", "judge_verdict", "rater_id", "answer"]
)
SAVED = {
    "verdicts": lambda folder: ParquetDataset(filepath=str(folder / "verdicts.parquet")),
    "sample_scores": lambda folder: ParquetDataset(filepath=str(folder / "sample_scores.parquet")),
    "report": lambda folder: ReportFolderDataset(path=str(folder / "report")),
} | {
    name: lambda folder, name=name: CSVDataset(
        filepath=str(folder / f"{name}.csv"), save_args={"index": False}
    )
    for name in ("leaderboard", "pairwise", "evaluate_scores", "missing_images", "judge_validation")
}
WHITE, BLACK = (lambda: Image.new("RGB", (96, 96), "white")), (lambda: Image.new("RGB", (96, 96), "black"))


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


def drawn(labels: list[str], edges: list[list[str]], faults: list[dict]) -> str:
    return json.dumps({"drawn_labels": labels, "drawn_edges": edges, "planted_faults": faults})


def inputs(tmp_path: Path) -> dict:
    benchmark = pd.DataFrame(
        {
            "sample_id": ["s1", "s2"],
            "group": ["All_Three", "Entity_Process"],
            "setting": ["instruction_following", "intrinsic_reasoning"],
            "term_count": [4, 5],
            "prompt": ["Draw the ATP cycle.", "Draw the outage diagram."],
            "plan": [
                json.dumps({"labels": ["ATP", "Enzyme", "ADP"], "edges": [["ADP", "ATP"]]}),
                json.dumps({"labels": ["Grid"], "edges": []}),
            ],
        }
    )
    checklists = pd.DataFrame(
        {
            "sample_id": ["s1", "s1", "s1", "s2", "s2"],
            "question_id": ["t1", "e1", "p1", "t1", "e1"],
            "layer": [1, 2, 2, 1, 2],
            "track": ["text", "entity", "process", "text", "entity"],
            "kind": ["text", "entity", "relation", "text", "entity"],
            "polarity": ["positive"] * 5,
            "about": ['["ATP"]', '["Enzyme"]', '["ADP", "ATP"]', '["Grid"]', '["Grid"]'],
            "question": [
                'Is the text "ATP" rendered with exactly this spelling?',
                'Is "Enzyme" drawn as a distinct, identifiable component?',
                'Is there an arrow from "ADP" to "ATP"?',
                'Is the text "Grid" rendered with exactly this spelling?',
                'Is "Grid" drawn as a distinct, identifiable component?',
            ],
            "expected_text": ["ATP", None, None, "Grid", None],
            "parent_ids": ["[]", "[]", '["e1"]', "[]", "[]"],
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
            "meta": [
                drawn(["ATP", "Enzyme", "ADP"], [["ADP", "ATP"]], []),
                drawn(["Grid"], [], []),
                drawn(
                    ["ATP", "ADP"],
                    [["ATP", "ADP"]],
                    [
                        {"kind": "drop_node", "label": "Enzyme"},
                        {"kind": "reverse_edge", "edge": ["ADP", "ATP"]},
                    ],
                ),
                "{}",
            ],
        }
    )
    generations = {"good/s1": WHITE, "good/s2": WHITE, "bad/s1": BLACK, "retired/s1": WHITE}
    judge = CachedVLM(ScriptedJudge(), ResponseCache(tmp_path / "responses.sqlite"))
    return {
        "benchmark": benchmark,
        "checklists": checklists,
        "generations": generations,
        "generation_manifest": manifest,
        "judge": judge,
        "params:evaluate": PARAMS,
        "aibench_qa": pd.DataFrame(columns=["sample_id", "question_id"]),  # used by the AIBench half only
        "aibench_set": pd.DataFrame(columns=["sample_id"]),
        "review_audit": NO_AUDIT,
    }


def run_pipeline(folder: Path, params: dict = PARAMS) -> dict:
    """Run the pipeline with the catalog's file formats for the tables, so they must be saveable."""
    data = inputs(folder) | {"params:evaluate": params}
    datasets = {name: MemoryDataset(value) for name, value in data.items()}
    datasets["judge"] = MemoryDataset(data["judge"], copy_mode="assign")
    datasets |= {name: make(folder) for name, make in SAVED.items()}
    catalog = DataCatalog(datasets)
    free = SequentialRunner().run(sciir_evaluation_pipeline(), catalog)
    saved = {name: catalog.load(name) for name in SAVED}
    return {name: free[name].load() for name in free} | saved | {"judge": data["judge"]}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict:
    return run_pipeline(tmp_path_factory.mktemp("eval"))


def test_pipeline_matches_the_contract():
    pipeline = sciir_evaluation_pipeline()
    assert set(pipeline.nodes) <= set(create_pipeline().nodes)  # part of the registered evaluate pipeline
    assert pipeline.inputs() == {*JUDGE_INPUTS, "aibench_qa", "aibench_set", "review_audit"}
    inner = {
        "evaluate_judge_summary",
        *(f"evaluation_{name}" for name in ("benchmark", "checklists", "source")),
    }
    assert pipeline.all_outputs() - inner - {"evaluation_aibench_qa", "evaluation_aibench_set"} == {
        "verdicts", "sample_scores", "evaluate_scores", "leaderboard", "pairwise", "finetune_effect",
        "missing_images", "judge_validation", "judge_audit", "report", "evaluate_plot_tracks",
        "evaluate_plot_groups", "evaluate_model_runs", "evaluate_metrics",
    }  # fmt: skip


@pytest.mark.slow
def test_verdicts_record_every_question_with_reasons(outputs):
    verdicts = outputs["verdicts"].set_index(["model", "sample_id", "question_id"]).sort_index()
    assert len(verdicts) == 15
    assert set(outputs["verdicts"].model) == {"good", "bad", "retired"}
    assert verdicts.loc[("good", "s1", "p1"), ["verdict", "parent_ids"]].tolist() == ["yes", '["e1"]']
    assert verdicts.loc[("bad", "s1", "e1"), ["verdict", "status"]].tolist() == ["no", "judged"]
    assert verdicts.loc[("bad", "s1", "t1"), "verdict"] == "yes"
    failed_request = verdicts.loc[("good", "s2")]
    assert set(failed_request.status) == {"failed"} and failed_request.verdict.isna().all()
    assert set(failed_request.reason) == {"judge request for good/s2 failed: scripted outage"}
    missing = verdicts.loc[("bad", "s2")]
    assert set(missing.status) == {"failed"}
    assert set(missing.reason) == {"no image from model bad for sample s2: CUDA out of memory"}
    assert set(verdicts.loc[("retired", "s1")].verdict) == {"yes"}  # an image without manifest rows counts
    assert set(verdicts.loc[("retired", "s2")].reason) == {
        "no image from model retired for sample s2: no image file"
    }
    assert "invented" not in outputs["verdicts"].question_id.tolist()


def test_scores_and_leaderboard_with_intervals(outputs):
    board = outputs["leaderboard"].set_index("model")
    assert list(outputs["leaderboard"].model) == ["good", "retired", "bad"]
    assert board.loc["good", "final"] == 1.0 and board.loc["good", "coverage"] == pytest.approx(3 / 5)
    assert (board.loc["good", "final_lo"], board.loc["good", "final_hi"]) == (1.0, 1.0)
    assert board.loc["bad", "final"] == 0.0 and board.loc["bad", "text"] == 1.0
    assert board.loc["bad", "entity"] == 0.0 and board.loc["bad", "coverage"] == pytest.approx(3 / 5)
    assert board.loc["retired", "coverage_text"] == 0.5 and board.loc["good", "n_samples"] == 2
    assert set(board.aggregation) == {"sciir_veto"}
    scores = outputs["sample_scores"]
    unjudged = scores[(scores.model == "good") & (scores.sample_id == "s2")]
    assert unjudged.passed.isna().all() and (unjudged.n_judged == 0).all()
    groups = outputs["evaluate_scores"].query("breakdown == 'group'").set_index(["model", "value"])
    assert (
        groups.loc[("bad", "All_Three"), "score"] == 0.0 and groups.loc[("bad", "All_Three"), "n_scored"] == 1
    )


def test_pairs_of_contestants_compared_on_shared_samples_and_ranks_with_intervals(outputs):
    # good and retired pass s1, bad fails it; nobody has a final result on s2 (outage, missing images).
    pairwise = outputs["pairwise"]
    finals = pairwise[(pairwise.breakdown == "track") & (pairwise.value == "final")]
    pairs = list(zip(finals.model_a, finals.model_b, strict=True))
    assert pairs == [("good", "retired"), ("good", "bad"), ("retired", "bad")]
    assert set(pairwise.benchmark) == {"sciir_bench"}
    assert (finals.n_pairs == 1).all() and (finals.n_left_out == 1).all() and (finals.m_pairs == 3).all()
    good_bad = finals.set_index(["model_a", "model_b"]).loc[("good", "bad")]
    assert (good_bad.n_a_better, good_bad.difference, good_bad.p_value) == (1, 1.0, 1.0)
    assert set(finals.verdict) == {"no_detectable_difference"}  # one shared sample detects nothing
    board = outputs["leaderboard"].set_index("model")
    assert board.loc["bad", ["rank", "rank_lo", "rank_hi"]].tolist() == [3, 3, 3]
    assert board.loc["good", ["rank_lo", "rank_hi"]].tolist() == [1, 1]  # tied with retired: both first
    assert board.loc["good", "not_separated_from"] == "retired; bad"
    metrics = outputs["evaluate_metrics"]
    assert metrics["pairwise.good_vs_bad.final.difference"] == 1.0
    assert (
        metrics["pairwise.good_vs_bad.final.n_pairs"] == 1.0
        and metrics["pairwise.good_vs_bad.final.verdict"] == 0
    )
    summary = html.fromstring(outputs["report"].pages["index.html"])
    cells = summary.xpath("//table[@class='comparisons']//td[contains(@class, 'same')]")
    assert len(cells) == 6 and all("no detectable difference" in cell.text_content() for cell in cells)


def test_missing_images_listed_per_model(outputs):
    missing = outputs["missing_images"]
    assert missing.values.tolist() == [
        ["bad", "s2", "no image from model bad for sample s2: CUDA out of memory"],
        ["retired", "s2", "no image from model retired for sample s2: no image file"],
    ]


def test_metrics_report_and_plots(outputs):
    metrics = outputs["evaluate_metrics"]
    assert metrics["good.final"] == 1.0 and metrics["bad.coverage"] == pytest.approx(0.6)
    assert metrics["good.final.ci_low"] == 1.0 and metrics["good.setting.instruction_following"] == 1.0
    assert metrics["bad.missing_images"] == 1.0 and metrics["good.missing_images"] == 0.0
    assert metrics["retired.missing_images"] == 1.0 and metrics["unused_images"] == 0.0
    assert metrics["judge_failed_requests"] == 1.0 and metrics["judge_ignored_answers"] == 1.0
    # retired/s1 is the same white image with the same prompt and checklist as good/s1: served from the cache.
    assert metrics["judge_cache_misses"] == 3.0 and metrics["judge_cache_hits"] == 1.0
    assert metrics["good.coverage.process"] == 1.0 and metrics["bad.group.All_Three"] == 0.0
    kinds = [type(container).__name__ for container in outputs["evaluate_plot_tracks"].axes[0].containers]
    assert kinds.count("BarContainer") == 5 and kinds.count("ErrorbarContainer") == 5  # whiskers per track
    heat = outputs["evaluate_plot_groups"]
    assert isinstance(heat, Figure) and heat.axes[0].images[0].get_array().shape == (3, 2)  # models x groups
    pages = {path: html.fromstring(text) for path, text in outputs["report"].pages.items()}
    assert set(pages) == {"index.html", "models/bad.html", "models/good.html", "models/retired.html"}
    summary = pages["index.html"]
    assert "1 missing" in summary.xpath('//li[@id="missing-retired"]')[0].text_content()
    assert len(summary.xpath("//table[@class='heatmap']//td[@class='cell']")) == 6  # 3 models x 2 groups
    assert "1.000 [1.000, 1.000]" in summary.xpath("//table[@class='summary']")[0].text_content()
    assert [link.get("href") for link in summary.xpath("//a[@class='model-page']")] == [
        "models/bad.html", "models/good.html", "models/retired.html"
    ]  # fmt: skip
    # The run's two plots beside their tables, drawn exactly as the catalog's PNG files of the run.
    assert summary.xpath("//figure[@class='plot']/img/@src") == [
        "plots/track_pass_rates.png", "plots/group_heatmap.png"
    ]  # fmt: skip
    assert outputs["report"].plots == {
        "plots/track_pass_rates.png": figure_png(outputs["evaluate_plot_tracks"]),
        "plots/group_heatmap.png": figure_png(heat),
    }
    bad = pages["models/bad.html"]
    failed = bad.xpath('//section[@id="bad/s1"]//tr[contains(concat(" ", @class, " "), " fail ")]')
    assert {row.get("data-question-id") for row in failed} == {"e1", "p1"}
    assert "CUDA out of memory" in bad.xpath('//section[@id="bad/s2"]')[0].text_content()
    # good/s2 is shown although its judge request failed; good/s1, good/s2 and retired/s1 are the same
    # white image, so the three share one thumbnail file and bad/s1 (black) has its own.
    sources = {
        page: [img.get("src") for img in doc.xpath("//img[@loading='lazy']")] for page, doc in pages.items()
    }
    assert [
        len(sources[page]) for page in ("models/bad.html", "models/good.html", "models/retired.html")
    ] == [1, 2, 1]
    assert len({*sources["models/good.html"], *sources["models/retired.html"]}) == 1
    files = {f"../{path}": make() for path, make in outputs["report"].thumbnails.items()}
    assert set(files) == {*sources["models/bad.html"], *sources["models/good.html"]}
    assert all(Image.open(io.BytesIO(png)).size == (64, 64) for png in files.values())  # thumbnail_px


def test_judge_validated_on_the_images_whose_content_is_known(outputs):
    table = outputs["judge_validation"].query("polarity == 'all'").set_index("question_kind")
    assert set(table.judge) == {"ScriptedJudge"}
    # entity e1: holds on good/s1 (yes), dropped on bad/s1 (no: detected); good/s2 e1 unjudged (outage).
    entity = table.loc["entity"]
    assert (entity.n_questions, entity.n_faulty, entity.n_detected, entity.n_unjudged) == (3, 1, 1, 1)
    assert entity.detection_rate == 1.0 and entity.false_alarm_rate == 0.0
    # process p1: holds on good/s1, reversed on bad/s1 (detected).
    assert table.loc["relation", "detection_rate"] == 1.0 and table.loc["relation", "n_correct"] == 1
    assert outputs["evaluate_metrics"]["judge_validation.all.detection_rate"] == 1.0


def test_unreadable_image_file_is_recorded_not_judged(tmp_path):
    data = inputs(tmp_path)
    data["generations"]["good/s1"] = lambda: Image.open(io.BytesIO(b"not a png"))
    verdicts, summary = judge_generations(*(data[name] for name in JUDGE_INPUTS))
    rows = verdicts[(verdicts.model == "good") & (verdicts.sample_id == "s1")]
    assert set(rows.status) == {"failed"} and rows.verdict.isna().all()
    assert rows.reason.iloc[0].startswith(
        "no image from model good for sample s1: the image file could not be read"
    )
    assert summary["missing_images"] == {"bad": 1, "good": 1, "retired": 1}
    assert summary["cache"]["misses"] == 3  # only good/s2, bad/s1 and retired/s1 reached the judge


def test_a_failed_generation_is_not_judged_from_a_leftover_file(tmp_path):
    data = inputs(tmp_path)
    data["generations"]["bad/s2"] = WHITE
    verdicts, summary = judge_generations(*(data[name] for name in JUDGE_INPUTS))
    assert (
        "CUDA out of memory (the image file there is from an earlier run" in summary["unavailable"]["bad/s2"]
    )


def test_a_folder_of_own_images_needs_no_manifest(tmp_path):
    folder = tmp_path / "mine"
    for name, colour in (("alpha/s1.png", "white"), ("alpha/s2.jpg", "white"), ("beta/s1.png", "black")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (80, 80), colour).save(folder / name)
    Image.new("RGB", (80, 80), "white").save(folder / "beta" / "s9.png")  # not a benchmark sample
    (folder / "beta" / "notes.txt").write_text("not an image")
    data = inputs(tmp_path)
    data["params:evaluate"] = PARAMS | {"images_dir": str(folder)}
    verdicts, summary = judge_generations(*(data[name] for name in JUDGE_INPUTS))
    assert set(verdicts.model) == {"alpha", "beta"}  # the manifest's models are about another folder
    assert summary["missing_images"] == {"alpha": 0, "beta": 1}
    assert summary["unavailable"] == {"beta/s2": "no image from model beta for sample s2: no image file"}
    assert summary["unused_images"] == ["beta/s9"]
    judged = verdicts[verdicts.status == "judged"].groupby("model").size().to_dict()
    assert judged == {"alpha": 3, "beta": 3}  # alpha/s2 fails on the scripted outage, not on its JPEG
    table = validate_judge(
        verdicts,
        data["checklists"],
        data["benchmark"],
        data["generation_manifest"],
        summary,
        data["params:evaluate"],
    )
    assert table.n_questions.sum() == 0  # no ground truth for a user's own images


@pytest.mark.slow
def test_a_verdicts_file_is_reaggregated_without_the_judge(tmp_path):
    # Another system's answers on sample s1: the entity check fails, so under DSG its child p1 fails too.
    answers = pd.DataFrame(
        {
            "model": ["other"] * 3,
            "sample_id": ["s1"] * 3,
            "question_id": ["t1", "e1", "p1"],
            "parent_ids": ["[]", "[]", '["e1"]'],
            "verdict": ["yes", "no", "yes"],
        }
    )
    answers.to_csv(tmp_path / "answers.csv", index=False)
    params = PARAMS | {"verdicts_file": str(tmp_path / "answers.csv")}
    results = {
        rule: run_pipeline(tmp_path / rule, params | {"aggregation": rule}) for rule in ("tifa", "dsg")
    }
    for rule, expected in (("tifa", 2 / 3), ("dsg", 1 / 3)):
        board = results[rule]["leaderboard"].set_index("model")
        assert list(board.index) == ["other"] and board.loc["other", "final"] == pytest.approx(expected)
    assert results["dsg"]["judge"].stats["misses"] == 0 and results["dsg"]["judge"].stats["hits"] == 0
    assert (
        "verdicts_file:answers.csv"
        in html.fromstring(results["dsg"]["report"].pages["index.html"]).text_content()
    )


@pytest.mark.slow
def test_each_model_gets_a_nested_mlflow_run(tmp_path, mlflow_store):
    with mlflow.start_run(run_name="evaluate") as parent:
        outputs = run_pipeline(tmp_path)
    runs = outputs["evaluate_model_runs"]
    assert set(runs) == {"good", "bad", "retired"}
    for model, run_id in runs.items():
        run = mlflow_store.get_run(run_id)
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.data.tags["mlflow.runName"] == model
        artifacts = {item.path for item in mlflow_store.list_artifacts(run_id)}
        assert {"verdicts.csv", "missing_images.csv"} <= artifacts
    good = mlflow_store.get_run(runs["good"]).data.metrics
    assert good["final"] == 1.0 and good["final.ci_low"] == 1.0 and good["coverage"] == pytest.approx(0.6)
    assert "law" not in good  # nothing judged: NaN is not logged
    assert mlflow_store.get_run(runs["bad"]).data.metrics["missing_images"] == 1.0


@pytest.mark.slow
def test_the_project_catalog_logs_pairwise_csv_and_the_per_pair_metrics(
    tmp_path, project_catalog, mlflow_run
):
    catalog = project_catalog(sciir_evaluation_pipeline(), inputs(tmp_path))
    SequentialRunner().run(sciir_evaluation_pipeline(), catalog)
    client = mlflow.MlflowClient()
    artifacts = {item.path for item in client.list_artifacts(mlflow_run.info.run_id)}
    assert {"pairwise.csv", "leaderboard.csv"} <= artifacts
    logged = pd.read_csv(client.download_artifacts(mlflow_run.info.run_id, "pairwise.csv", str(tmp_path)))
    assert len(logged) and set(logged.model_a) <= {"good", "retired"}
    metrics = client.get_run(mlflow_run.info.run_id).data.metrics
    assert metrics["evaluate.pairwise.good_vs_bad.final.n_pairs"] == 1.0
    assert metrics["evaluate.pairwise.good_vs_bad.final.p_holm"] == 1.0
    assert (tmp_path / "data/08_reporting/pairwise.csv").exists()


def test_one_question_per_request_gives_the_same_verdicts(tmp_path):
    whole = inputs(tmp_path / "whole")
    split = inputs(tmp_path / "split") | {"params:evaluate": PARAMS | {"questions_per_request": 1}}
    together, together_summary = judge_generations(*(whole[name] for name in JUDGE_INPUTS))
    apart, apart_summary = judge_generations(*(split[name] for name in JUDGE_INPUTS))
    columns = ["model", "sample_id", "question_id", "verdict", "status"]
    key = ["model", "sample_id", "question_id"]
    pd.testing.assert_frame_equal(
        together[columns].sort_values(key).reset_index(drop=True),
        apart[columns].sort_values(key).reset_index(drop=True),
    )
    # Requests sent: good/s1 (3 questions), good/s2 (2), bad/s1 (3); retired/s1 is the same white image
    # with the same prompt and checklist as good/s1, so its requests are identical and sent once.
    assert together_summary["cache"]["misses"] == 3 and apart_summary["cache"]["misses"] == 3 + 2 + 3


@pytest.mark.slow
def test_several_aggregation_rules_in_one_run_side_by_side(tmp_path):
    rules = ["sciir_veto", "tifa", "dsg"]
    outputs = run_pipeline(tmp_path, PARAMS | {"aggregation": rules})
    board = outputs["leaderboard"]
    assert list(pd.unique(board["aggregation"])) == rules
    assert board.groupby("aggregation")["model"].apply(sorted).map(tuple).nunique() == 1
    scores = outputs["sample_scores"]
    assert list(pd.unique(scores["aggregation"])) == rules
    veto = scores[scores["aggregation"] == "sciir_veto"].reset_index(drop=True)
    tifa = scores[scores["aggregation"] == "tifa"].reset_index(drop=True)
    assert veto["passed"].equals(tifa["passed"])  # the veto result does not depend on the rule
    metrics = outputs["evaluate_metrics"]
    assert {"good.final", "good.tifa.final", "good.dsg.final", "good.tifa.final.n_samples"} <= set(metrics)
    report = html.fromstring(outputs["report"].pages["index.html"]).text_content()
    assert "TIFA score" in report and "DSG score" in report and "pass rate (strict veto)" in report


def test_an_aggregation_rule_listed_twice_is_refused(tmp_path):
    with pytest.raises(ValueError, match="each rule once"):
        run_pipeline(tmp_path, PARAMS | {"aggregation": ["tifa", "tifa"]})


def test_references_are_named_so_in_the_track_plot(outputs):
    board = outputs["leaderboard"].assign(
        role=lambda b: b["model"].map({"bad": "reference"}).fillna("contestant")
    )
    figure = plot_tracks(board, PARAMS)
    ticks = [label.get_text() for label in figure.axes[0].get_xticklabels()]
    assert "bad (reference)" in ticks and "good" in ticks and "good (reference)" not in ticks


class OutOfOrderJudge(LastToFirst, ScriptedJudge):
    """The scripted judge, reporting each window's replies last to first, as a slow first reply would."""


def test_streamed_verdicts_do_not_depend_on_the_window_or_on_reply_order(tmp_path, caplog):
    one_by_one = inputs(tmp_path / "one") | {"params:evaluate": PARAMS | {"window": 1}}
    reordered = inputs(tmp_path / "all") | {"params:evaluate": PARAMS | {"window": 16}}
    reordered["judge"] = CachedVLM(OutOfOrderJudge(), ResponseCache(tmp_path / "all.sqlite"))
    first, first_summary = judge_generations(*(one_by_one[name] for name in JUDGE_INPUTS))
    with caplog.at_level("INFO", logger="sciir.runs.progress"):
        second, second_summary = judge_generations(*(reordered[name] for name in JUDGE_INPUTS))
    pd.testing.assert_frame_equal(first, second)
    assert first_summary["ignored_answers"] == second_summary["ignored_answers"] != []
    # good/s1, good/s2 (fails), bad/s1, retired/s1 (identical to good/s1: answered with it, a cache hit).
    line = [r.getMessage() for r in caplog.records if r.name == "sciir.runs.progress"][-1]
    assert line.startswith("judge_generations: 4/4 requests in ")
    assert line.endswith(", 1 failed, 1 from the cache")


def test_the_former_batch_size_key_is_read_as_the_window():
    assert EvaluateParams.model_validate(PARAMS | {"window": None, "batch_size": 8}).window == 8
    assert EvaluateParams.model_validate(PARAMS).window == 2


@pytest.mark.slow
def test_a_run_that_finds_no_image_completes_lists_every_pair_missing_and_says_so(
    tmp_path: Path, project_catalog, mlflow_run, caplog
) -> None:
    """evaluate with the project's catalog after a generate whose every image failed (its manifest of
    failures and its empty generations folder, written through the catalog as generate writes them): it
    completes, every pair is a failed verdict listed in missing_images with the manifest's reason, no
    model gets a score, one warning says that no image was found, and the image branches say the folder is
    empty."""
    data = inputs(tmp_path)
    pipeline = create_pipeline()
    catalog = project_catalog(
        pipeline, {name: data[name] for name in ("benchmark", "checklists", "judge", "params:evaluate")}
    )
    catalog.save(
        "generation_manifest", data["generation_manifest"].assign(status="failed", reason="CUDA OOM")
    )
    catalog.save("generations", {})
    with caplog.at_level("INFO"):
        SequentialRunner().run(pipeline, catalog)

    pairs = [("bad", "s1"), ("bad", "s2"), ("good", "s1"), ("good", "s2")]
    missing = catalog.load("missing_images")
    assert list(zip(missing["model"], missing["sample_id"], strict=True)) == pairs
    assert list(missing["reason"]) == [f"no image from model {m} for sample {s}: CUDA OOM" for m, s in pairs]
    verdicts = catalog.load("verdicts")
    assert len(verdicts) == 10 and set(verdicts["status"]) == {"failed"}
    board = catalog.load("leaderboard").set_index("model")
    assert list(board["coverage"]) == [0.0, 0.0] and board["final"].isna().all()  # never a score
    folder = tmp_path / "data" / "07_model_output" / "generations"
    assert (
        f"evaluate found no image in {folder}: none of the 2 models of the generation manifest (bad, good) "
        "has one; each of their samples is listed with its reason in missing_images and left unjudged "
        "(coverage 0), never scored"
    ) in caplog.messages
    # The folder is there and empty: said so, not "not found".
    assert f"baseline metrics skipped: generations ({folder}) is empty" in caplog.messages
