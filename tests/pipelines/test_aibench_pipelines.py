"""AIBench end to end in memory: annotations -> logic graphs and questions -> solver, aesthetics, scores.

Four contestants drew the two papers of the AIBench set ("flow", a three-step process, and "mol", one
molecule) from their method text (``aibench_generations`` and its manifest):
always_yes/*: white images; the scripted solver answers "yes" to everything and rates 4 on each criterion.
cautious/flow: black image; the solver says "no" on level 1, abstains elsewhere, invents an id.
cautious/mol: its generation failed (the manifest says why).
down/flow: red image; every request about it fails.     down/mol: no manifest row, no image.
blind/*: every generation failed, so it has no image at all; it is examined all the same (coverage 0).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.offline import OfflineVLM
from sciir.backends.rule_based import Sight
from sciir.catalog.optional_dataset import MissingInput
from sciir.evaluation.baseline_metrics import BASELINE_COLUMNS, CLIP_SKIPPED, VQASCORE_SKIPPED, vqascore_rows
from sciir.evaluation.generated_images import expected_images
from sciir.pipelines.annotate.aibench_nodes import create_aibench_pipeline as annotate_aibench
from sciir.pipelines.evaluate.aibench_nodes import baseline_metrics, examine_images
from sciir.pipelines.evaluate.aibench_nodes import create_aibench_pipeline as evaluate_aibench
from sciir.tasks.aesthetics import AESTHETICS_RUBRIC
from sciir.tasks.aibench_questions import answer_by_rules as write_questions
from sciir.tasks.registry import rule_book

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
STEPS = ["Mixing", "Heating", "Cooling"]
PARAMS = {"questions": {"seed": 0, "distractors": 2, "non_adjacent": 1, "max_pairs": 2}, "window": 2}


def _annotation(sample_id: str, terms, relations, status: str = "ok", reason: str | None = None) -> dict:
    return {
        "sample_id": sample_id,
        "terms": None if terms is None else json.dumps(terms),
        "required_text": None if terms is None else json.dumps(terms),
        "relations": None if relations is None else json.dumps(relations),
        "sci_rcot": "Style: flow diagram." if terms else None,
        "abstract_prompt": None,
        "status": status,
        "reason": reason,
    }


ANNOTATIONS = pd.DataFrame(
    [
        _annotation("flow", STEPS, [["Mixing", "Heating"], ["Heating", "Cooling"]]),
        _annotation("mol", ["Benzene"], []),
        _annotation("broken", None, None, "failed", "sample broken: reasoning failed: timeout"),
        _annotation("bare", [], []),
        _annotation("garbled", ["Stirring"], []),
    ]
)
# The article texts the graphs are read from ("bare" has no method text); "flow" and "garbled" are figures
# of one article.
CURATED = pd.DataFrame(
    {
        "sample_id": ["flow", "mol", "broken", "bare", "garbled"],
        "doi": ["10.1/batch", "10.1/ring", "10.1/other", None, "10.1/batch"],
        "url": [
            "https://doi.org/10.1/batch",
            "https://doi.org/10.1/ring",
            "",
            "https://example.org/bare",
            "",
        ],
        "caption": ["Batch process.", "Benzene.", "", "A sketch.", "Stirring."],
        "methods_text": [
            "The batch is prepared by Mixing, then Heating; the product is finished by Cooling.",
            "Benzene is drawn as a ring.",
            "Unused.",
            "",
            "Stirring goes on for an hour.",
        ],
    }
)
# What a model reads from each method text; "garbled" names a component it does not list.
GRAPH_REPLIES = {
    "Batch process.": {
        "components": [{"name": step, "kind": "module"} for step in STEPS],
        "flows": [{"source": "Mixing", "target": "Heating"}, {"source": "Heating", "target": "Cooling"}],
        "phases": [
            {"name": "preparation", "components": ["Mixing"]},
            {"name": "reaction", "components": ["Heating"]},
            {"name": "finishing", "components": ["Cooling"]},
        ],
    },
    "Benzene.": {"components": [{"name": "Benzene", "kind": "data"}], "flows": [], "phases": []},
    "Stirring.": {
        "components": [{"name": "Stirring", "kind": "module"}],
        "flows": [{"source": "Stirring", "target": "Settling"}],
        "phases": [],
    },
}


class ScriptedAnnotator(VisionLanguageModel):
    """Graphs as a model would read them (``GRAPH_REPLIES``, by caption); questions by the rule writer."""

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [
            VLMResult(output=GRAPH_REPLIES[r.context["caption"]])
            if r.task == "aibench_graph"
            else write_questions(r, Sight(read=_no_reading))
            for r in requests
        ]


def _no_reading(png: bytes):
    raise AssertionError("writing questions reads no image")


BENCHMARK = pd.DataFrame(
    {"sample_id": ["flow", "mol"], "prompt": ["SECRET flow prompt", "SECRET molecule prompt"]}
)
AIBENCH_SET = pd.DataFrame(
    {"sample_id": ["flow", "mol"], "methods_text": ["SECRET flow method.", "SECRET molecule method."]}
)
NO_LABEL = "prompt for sample {} quotes no label to draw"


def _manifest(rows: list[tuple[str, str, str | None]]) -> pd.DataFrame:
    """Generation manifest rows (model, sample, failure reason or None)."""
    return pd.DataFrame(
        [
            {"model": model, "sample_id": sample, "status": "failed" if reason else "ok", "reason": reason}
            for model, sample, reason in rows
        ]
    )


MANIFEST = _manifest(
    [
        ("always_yes", "flow", None),
        ("always_yes", "mol", None),
        ("blind", "flow", NO_LABEL.format("flow")),
        ("blind", "mol", NO_LABEL.format("mol")),
        ("cautious", "flow", None),
        ("cautious", "mol", NO_LABEL.format("mol")),
        ("down", "flow", None),
    ]
)


def _canvas(colour: str):
    return lambda: Image.new("RGB", (64, 64), colour)


GENERATIONS = {
    "always_yes/flow": _canvas("white"),
    "always_yes/mol": _canvas("white"),
    "cautious/flow": _canvas("black"),
    "down/flow": _canvas("red"),
}


class ScriptedSolver(VisionLanguageModel):
    """Answers by the image's colour (see the module docstring) and keeps every request it receives."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[VLMRequest] = []

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.requests += requests
        return [self._answer(request) for request in requests]

    def _answer(self, request: VLMRequest) -> VLMResult:
        colour = Image.open(io.BytesIO(request.images[0])).convert("RGB").getpixel((0, 0))
        if colour == (255, 0, 0):
            return VLMResult.failed("scripted outage")
        white = colour == (255, 255, 255)
        if request.task == "aesthetics":
            return VLMResult(
                output={**dict.fromkeys(AESTHETICS_RUBRIC, 4 if white else None), "rationale": "."}
            )
        answers = [
            {"id": q["id"], "answer": "yes" if white else "no" if q["level"] == 1 else None}
            for q in request.context["questions"]
        ]
        return VLMResult(
            output={"answers": answers + ([] if white else [{"id": "invented", "answer": "yes"}])}
        )


def _examination(illustrations, manifest, judge, qa, **overrides) -> dict:
    """The evaluate-side AIBench pipeline's inputs as MemoryDatasets (``overrides`` replace values)."""
    values = {
        "aibench_generations": illustrations,
        "aibench_generation_manifest": manifest,
        "generation_manifest": MissingInput(location="generation_manifest.parquet", written_by="generate"),
        "evaluation_aibench_set": AIBENCH_SET,
        "evaluation_aibench_qa": qa,
        "generations": GENERATIONS,
        "evaluation_benchmark": BENCHMARK,
        "judge": judge,
        "params:aibench": PARAMS,
        # The blank baseline is tested in tests/pipelines/test_sanity_baselines.py.
        "params:evaluate": {"blank": {"enabled": False}},
        "params:evaluate.verdicts_file": None,
        "params:evaluate.images_dir": None,
    } | overrides
    assign = {"aibench_generations", "generations", "judge"}
    return {
        name: MemoryDataset(value, copy_mode="assign") if name in assign else MemoryDataset(value)
        for name, value in values.items()
    }


def _run(pipeline, datasets: dict) -> dict:
    catalog = DataCatalog(datasets)
    free = SequentialRunner().run(pipeline, catalog)
    return {name: dataset.load() for name, dataset in free.items()}


@pytest.fixture(scope="module")
def annotated() -> dict:
    return _run(
        annotate_aibench(),
        {
            "annotations": MemoryDataset(ANNOTATIONS),
            "curated": MemoryDataset(CURATED),
            "annotator": MemoryDataset(ScriptedAnnotator(), copy_mode="assign"),
            "params:aibench": MemoryDataset(PARAMS),
        },
    )


@pytest.fixture(scope="module")
def evaluated(annotated: dict, tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("aibench")
    solver = ScriptedSolver()
    judge = CachedVLM(solver, ResponseCache(folder / "responses.sqlite"))
    datasets = _examination(GENERATIONS, MANIFEST, judge, annotated["aibench_qa"]) | {
        # The catalog's file formats, so the tables must be saveable.
        "aibench_answers": ParquetDataset(filepath=str(folder / "answers.parquet")),
        "aesthetics_ratings": ParquetDataset(filepath=str(folder / "ratings.parquet")),
        "baseline_scores": ParquetDataset(filepath=str(folder / "baseline.parquet")),
        "aibench_scores": CSVDataset(filepath=str(folder / "scores.csv"), save_args={"index": False}),
        "aesthetics_scores": CSVDataset(filepath=str(folder / "aesthetics.csv"), save_args={"index": False}),
    }
    outputs = _run(evaluate_aibench(), datasets)
    saved = (
        "aibench_answers",
        "aesthetics_ratings",
        "baseline_scores",
        "aibench_scores",
        "aesthetics_scores",
    )
    return outputs | {name: datasets[name].load() for name in saved} | {"solver": solver}


def test_pipelines_match_the_contract() -> None:
    assert annotate_aibench().inputs() == {"annotations", "curated", "annotator", "params:aibench"}
    assert evaluate_aibench().inputs() == {
        "aibench_generations",  # the illustrations of the AIBench set: contestants' and references'
        "aibench_generation_manifest",  # also says which models are references (params:evaluate: roles)
        "evaluation_aibench_set",  # the catalog's AIBench set or a benchmark file's items (evaluation_inputs)
        "evaluation_aibench_qa",
        "generations",  # baseline metrics; a benchmark file's images (with generation_manifest)
        "generation_manifest",
        "evaluation_benchmark",  # the catalog's benchmark or a benchmark file (evaluation_inputs)
        "judge",
        "params:aibench",
        "params:evaluate",
        "params:evaluate.verdicts_file",
        "params:evaluate.images_dir",
    }
    assert evaluate_aibench().all_outputs() - {"aibench_run_summary"} == {
        "aibench_answers", "aibench_scores", "aesthetics_ratings", "aesthetics_scores", "baseline_scores",
        "aibench_metrics",
    }  # fmt: skip


def test_every_sample_gets_a_graph_from_its_method_text_or_a_reason(annotated: dict) -> None:
    graphs = annotated["aibench_graphs"].set_index("sample_id")
    assert json.loads(graphs.loc["flow", "phases"]) == [["Mixing"], ["Heating"], ["Cooling"]]
    assert graphs.loc["mol", "status"] == "ok" and json.loads(graphs.loc["mol", "edges"]) == []
    assert (
        graphs.loc["broken", "status"] == "skipped" and "reasoning failed" in graphs.loc["broken", "reason"]
    )
    assert graphs.loc["bare", "reason"] == "sample bare: its article has no method text"
    assert graphs.loc["garbled", "status"] == "failed" and pd.isna(graphs.loc["garbled", "nodes"])
    assert "flows or phases name ['Settling'], which are not components" in graphs.loc["garbled", "reason"]
    qa = annotated["aibench_qa"]
    assert set(qa.sample_id) == {"flow", "mol"}
    assert set(qa[qa.sample_id == "flow"].level) == {1, 2, 3, 4} and set(qa[qa.sample_id == "mol"].level) == {
        1
    }
    # Each sample's distractors are terms read off other articles' figures: "Stirring" is a term of the
    # flow's own article, so the flow is asked about the molecule's "Benzene" only.
    distractors = (
        qa[qa.kind == "distractor"].groupby("sample_id")["nodes"].agg(lambda n: {json.loads(x)[0] for x in n})
    )
    assert distractors["flow"] == {"Benzene"}
    assert len(distractors["mol"]) == 2 and distractors["mol"] <= {*STEPS, "Stirring"}
    assert graphs.loc["flow", "n_questions"] == (qa.sample_id == "flow").sum()
    metrics = annotated["aibench_qa_metrics"]
    assert (metrics["graphs"], metrics["skipped"], metrics["failed"]) == (2.0, 2.0, 1.0)
    assert metrics["graphs_with_phases"] == 1.0 and metrics["questions"] == len(qa)


class WindowedAnnotator(ScriptedAnnotator):
    """The scripted annotator answering four requests at a time, keeping the order they were sent in."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    @property
    def stream_window(self) -> int:
        return 4

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        self.sent += [(r.task, r.context.get("sample_id") or r.context["methods_text"]) for r in requests]
        return super().generate(requests)


def test_a_samples_questions_go_as_soon_as_its_graph_arrives_not_after_every_graph() -> None:
    copies = 12
    annotations = pd.DataFrame([_annotation(f"flow{k}", STEPS, []) for k in range(copies)])
    curated = pd.DataFrame(
        {
            "sample_id": [f"flow{k}" for k in range(copies)],
            "doi": [f"10.1/batch{k}" for k in range(copies)],
            "caption": ["Batch process."] * copies,
            "methods_text": [f"Article {k}: Mixing, then Heating, then Cooling." for k in range(copies)],
        }
    )
    annotator = WindowedAnnotator()
    out = _run(
        annotate_aibench(),
        {
            "annotations": MemoryDataset(annotations),
            "curated": MemoryDataset(curated),
            "annotator": MemoryDataset(annotator, copy_mode="assign"),
            "params:aibench": MemoryDataset(PARAMS),
        },
    )
    tasks = [task for task, _ in annotator.sent]
    assert tasks.count("aibench_graph") == tasks.count("aibench_questions") == copies
    # The first window's questions are asked before the later samples' graphs: no barrier between tasks.
    assert tasks.index("aibench_questions") < len(tasks) - 1 - tasks[::-1].index("aibench_graph")
    assert set(out["aibench_graphs"]["status"]) == {"ok"} and set(out["aibench_qa"]["sample_id"]) == set(
        curated["sample_id"]
    )


def test_the_solver_gets_one_request_per_image_and_never_the_prompt(evaluated: dict) -> None:
    solver_requests = [r for r in evaluated["solver"].requests if r.task == "aibench_qa"]
    assert len(solver_requests) == 4  # always_yes x 2, cautious/flow, down/flow: images that exist
    assert not any("SECRET" in r.prompt or "SECRET" in json.dumps(r.context) for r in solver_requests)
    assert all(len(r.images) == 1 for r in solver_requests)


def test_answers_record_every_question_with_reasons(evaluated: dict, annotated: dict) -> None:
    answers = evaluated["aibench_answers"]
    n_questions = len(annotated["aibench_qa"])
    assert len(answers) == 4 * n_questions  # every model x every question, answered or not
    cautious = answers[answers.model == "cautious"].set_index("sample_id")
    assert set(cautious.loc["mol", "reason"]) == {
        f"no image from model cautious for sample mol: {NO_LABEL.format('mol')}"
    }
    down = answers[(answers.model == "down") & (answers.sample_id == "flow")]
    assert set(down.reason) == {"solver request for down/flow failed: scripted outage"}
    down_mol = answers[(answers.model == "down") & (answers.sample_id == "mol")]
    assert set(down_mol.reason) == {"no image from model down for sample mol: no image file"}
    blind = answers[answers.model == "blind"]
    assert len(blind) == n_questions and set(blind.status) == {"failed"}
    assert {reason.split(": ", 1)[1] for reason in blind.reason} == {
        NO_LABEL.format(s) for s in ("flow", "mol")
    }
    assert answers.loc[answers.status != "answered", "correct"].isna().all()
    assert "invented" not in set(answers.question_id)


def test_scores_are_accuracies_over_answered_questions_with_coverage(
    evaluated: dict, annotated: dict
) -> None:
    qa = annotated["aibench_qa"]
    scores = evaluated["aibench_scores"].set_index("model")
    gold_yes = qa.gold_answer == "yes"
    assert scores.loc["always_yes", "overall"] == pytest.approx(gold_yes.mean())
    for level in (1, 2, 3, 4):
        assert scores.loc["always_yes", f"level{level}"] == pytest.approx(gold_yes[qa.level == level].mean())
    assert scores.loc["always_yes", "coverage"] == 1.0
    flow_l1 = qa[(qa.sample_id == "flow") & (qa.level == 1)]
    assert scores.loc["cautious", "level1"] == pytest.approx((flow_l1.gold_answer == "no").mean())
    assert scores.loc["cautious", "coverage"] == pytest.approx(len(flow_l1) / len(qa))
    assert pd.isna(scores.loc["cautious", "level2"]) and scores.loc["cautious", "coverage_level2"] == 0.0
    assert pd.isna(scores.loc["down", "overall"]) and scores.loc["down", "coverage"] == 0.0
    # a contestant that could draw nothing is scored with coverage 0, never left out
    assert pd.isna(scores.loc["blind", "overall"]) and scores.loc["blind", "coverage"] == 0.0
    assert scores.loc["blind", "n_questions"] == len(qa) and scores.loc["blind", "n_answered"] == 0


def test_aesthetics_baseline_and_metrics(evaluated: dict, annotated: dict) -> None:
    aesthetics = evaluated["aesthetics_scores"].set_index("model")
    assert aesthetics.loc["always_yes", "overall"] == 4.0 and aesthetics.loc["always_yes", "coverage"] == 1.0
    assert pd.isna(aesthetics.loc["cautious", "overall"]) and aesthetics.loc["cautious", "coverage"] == 0.0
    ratings = evaluated["aesthetics_ratings"].set_index(["model", "sample_id"])
    assert ratings.loc[("down", "flow"), "status"] == "failed"
    assert ratings.loc[("cautious", "flow"), "status"] == "abstained"
    assert list(evaluated["baseline_scores"].columns) == list(BASELINE_COLUMNS)
    assert evaluated["baseline_scores"].empty  # nothing configured: no rows, never made-up numbers
    metrics = evaluated["aibench_metrics"]
    assert metrics["always_yes.overall"] == pytest.approx(
        (annotated["aibench_qa"].gold_answer == "yes").mean()
    )
    assert metrics["cautious.missing_images"] == 1.0 and metrics["down.missing_images"] == 1.0
    assert metrics["blind.missing_images"] == 2.0
    assert metrics["aibench_qa_failed_requests"] == 1.0 and metrics["aesthetics_failed_requests"] == 1.0
    assert metrics["aibench_qa_ignored_answers"] == 1.0
    # 4 images that exist x (questions, aesthetics); always_yes's two white images ask the same aesthetics question.
    assert metrics["judge_cache_misses"] == 7.0 and metrics["judge_cache_hits"] == 1.0
    assert metrics["always_yes.aesthetics.overall"] == 4.0


def test_unconfigured_baselines_say_so(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        scores = baseline_metrics(GENERATIONS, BENCHMARK, PARAMS)
    assert scores.empty and list(scores.columns) == list(BASELINE_COLUMNS)
    assert CLIP_SKIPPED in caplog.messages and VQASCORE_SKIPPED in caplog.messages


def test_vqascore_from_a_backend_without_logprobs_is_a_failed_row() -> None:
    params = PARAMS | {"baseline_metrics": {"vqascore": {"backend": "offline"}}}
    scores = baseline_metrics({"m/flow": _canvas("white")}, BENCHMARK, params)
    rows = scores.set_index("sample_id")
    assert set(scores.status) == {"failed"} and scores.score.isna().all()
    assert "offline backend has no rules for task 'vqascore'" in rows.loc["flow", "reason"]
    assert rows.loc["mol", "reason"] == "no image from model m for sample mol"


class LogprobModel(VisionLanguageModel):
    """Says "Yes" with probability 0.8 to a question about a white image, "No" otherwise."""

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: VLMRequest) -> VLMResult:
        white = Image.open(io.BytesIO(request.images[0])).convert("L").getpixel((0, 0)) == 255
        top = [{"token": "Yes", "logprob": -0.2231435513}, {"token": "No", "logprob": -1.609437912}]
        return VLMResult(
            output={"answer": "Yes" if white else "No", "top_logprobs": top if white else top[1:]}
        )


def test_vqascore_rows_read_p_yes_from_the_logprobs() -> None:
    from sciir.aibench.params import VQAScoreSettings

    generations = {"m/flow": _canvas("white"), "m/mol": _canvas("black")}
    jobs = expected_images(generations, ["flow", "mol"])
    prompts = dict(zip(BENCHMARK.sample_id, BENCHMARK.prompt, strict=True))
    rows = {
        row["sample_id"]: row
        for row in vqascore_rows(jobs, generations, prompts, LogprobModel(), VQAScoreSettings())
    }
    assert rows["flow"]["score"] == pytest.approx(0.8) and rows["flow"]["status"] == "ok"
    assert rows["mol"]["score"] == 0.0 and "P(yes) < 0.2" in rows["mol"]["reason"]


def _flow_png() -> Image.Image:
    image = Image.new("RGB", (768, 256), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(FONT), 30)
    for index, step in enumerate(STEPS):
        draw.text((40 + 250 * index, 110), step, fill="black", font=font)
    return image


def test_the_offline_judge_answers_component_existence_only(annotated: dict) -> None:
    datasets = _examination(
        {"drawn/flow": _flow_png},
        _manifest([("drawn", "flow", None)]),
        OfflineVLM(rule_book("offline")),
        annotated["aibench_qa"],
        evaluation_aibench_set=AIBENCH_SET.iloc[:1],
    )
    outputs = _run(evaluate_aibench(), datasets)
    scores = outputs["aibench_metrics"]
    assert scores["drawn.level1"] == 1.0 and scores["drawn.coverage_level1"] == 1.0
    assert all(scores[f"drawn.coverage_level{level}"] == 0.0 for level in (2, 3, 4))
    assert scores["drawn.aesthetics.coverage"] == 0.0


def test_image_branches_are_skipped_with_one_line_without_images(caplog) -> None:
    missing = MissingInput(location="data/07_model_output/generations", written_by="generate")
    datasets = _examination(
        MissingInput(location="data/07_model_output/aibench_generations", written_by="generate"),
        MissingInput(location="aibench_generation_manifest.parquet", written_by="generate"),
        OfflineVLM(rule_book("offline")),
        MissingInput(location="aibench_qa.parquet", written_by="annotate"),
        generations=missing,
    )
    with caplog.at_level(logging.INFO):
        outputs = _run(evaluate_aibench(), datasets)
    assert not [key for key in outputs["aibench_metrics"] if key.startswith("drawn.")]
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert any(
        "AIBench examination skipped" in m
        and "aibench_generation_manifest (aibench_generation_manifest.parquet)" in m
        and "aibench_qa (aibench_qa.parquet) not found" in m
        for m in skipped
    )
    assert any("baseline metrics skipped" in m for m in skipped)
    drawn = {"drawn/flow": _flow_png}
    # with a verdicts file nothing looks at images, even when every input exists
    datasets = _examination(
        drawn, _manifest([("drawn", "flow", None)]), RefusingJudge(), pd.DataFrame(), generations=drawn
    )
    datasets["params:evaluate.verdicts_file"] = MemoryDataset("answers.csv")
    datasets["params:evaluate"] = MemoryDataset({"verdicts_file": "answers.csv"})
    caplog.clear()
    with caplog.at_level(logging.INFO):
        _run(evaluate_aibench(), datasets)
    assert "evaluate.verdicts_file is set (answers.csv)" in caplog.text
    # a folder of the user's SciIR-Bench images holds no AIBench illustration: the examination says so
    manifest = _manifest([("drawn", "flow", None)])
    caplog.clear()
    with caplog.at_level(logging.INFO):
        answers, ratings, _ = examine_images(
            drawn, manifest, {}, pd.DataFrame(), AIBENCH_SET, pd.DataFrame(), RefusingJudge(), PARAMS,
            {"images_dir": "my_images"},
        )  # fmt: skip
    assert answers.empty and ratings.empty and "evaluate.images_dir is set (my_images)" in caplog.text


class RefusingJudge(VisionLanguageModel):
    """Any request is a test failure: a branch that should be skipped asked a model."""

    def generate(self, requests):  # type: ignore[override]
        raise AssertionError(f"{len(requests)} requests sent by a skipped branch")
