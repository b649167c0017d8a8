"""The generate pipeline: every generator on every sample, failures recorded, images keyed by model,
roles in the manifest."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import mlflow
import pandas as pd
import pytest
import yaml
from kedro.config import OmegaConfigLoader
from kedro.io import AbstractDataset, DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.partitions import PartitionedDataset
from PIL import Image

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator
from sciir.backends.cache import CachedGenerator, ResponseCache
from sciir.backends.plan_reference import PlanReferenceRenderer
from sciir.backends.programmatic import ProgrammaticGenerator
from sciir.catalog.optional_dataset import MissingInput, is_missing_input
from sciir.generation.manifest import MANIFEST_COLUMNS, TIMING_COLUMNS
from sciir.pipelines.generate import create_pipeline
from sciir.pipelines.generate.aibench_nodes import generate_aibench_images
from sciir.pipelines.generate.nodes import generate_images
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.tasks.prompts import prompt_template
from sciir.user_files.benchmark_file import BenchmarkFileError

REPO = Path(__file__).resolve().parents[2]
PARAMS = {"seed": 7, "width": 256, "height": 256, "models": None}
FINETUNE_SUMMARY = {"adapter_path": "data/06_models/lora", "steps": 8, "final_loss": 0.5, "skipped": []}


class GreySquares(ImageGenerator):
    """A real generator of flat grey squares; fails on ``fail_on``, returns junk bytes for ``corrupt_on``."""

    def __init__(self, *, fail_on: Sequence[str] = (), corrupt_on: Sequence[str] = (), **config) -> None:
        super().__init__(fail_on=list(fail_on), corrupt_on=list(corrupt_on), **config)
        self.fail_on, self.corrupt_on = set(fail_on), set(corrupt_on)
        self.seen: list[GenerationRequest] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        self.seen.extend(requests)
        return [self._one(request) for request in requests]

    def _one(self, request: GenerationRequest) -> GenerationResult:
        if request.sample_id in self.fail_on:
            return GenerationResult(
                sample_id=request.sample_id, failure=f"refused sample {request.sample_id}"
            )
        if request.sample_id in self.corrupt_on:
            return GenerationResult(sample_id=request.sample_id, image=b"not a png")
        buffer = io.BytesIO()
        Image.new("RGB", (request.width, request.height), (128, 128, 128)).save(buffer, format="PNG")
        return GenerationResult(
            sample_id=request.sample_id, image=buffer.getvalue(), meta={"seed": request.seed}
        )


class Crashing(ImageGenerator):
    """A generator whose model library raises on every call."""

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        raise MemoryError("out of device memory")


def catalog_entries(runtime_params: dict | None = None) -> dict:
    """The project's catalog entries as ``kedro run --params`` resolves them (the project's resolvers)."""
    loader = OmegaConfigLoader(
        conf_source=str(REPO / "conf"), runtime_params=runtime_params or {}, **CONFIG_LOADER_ARGS
    )
    return loader["catalog"]


def plan(labels: list[str], edges: list[list[str]]) -> str:
    return json.dumps({"labels": labels, "edges": edges})


@pytest.fixture
def benchmark() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "sample_id": ["s-a-p0", "s-b-p0", "s-c-p0"],
            "group": ["All_Three", "Entity_Law", "Law_Process"],
            "setting": ["instruction_following", "intrinsic_reasoning", "instruction_following"],
            "term_count": [2, 1, 2],
            "prompt": ['"Heat" -> "Sink".', 'A diagram of a "Cell".', '"Input" leads to "Output".'],
            "plan": [
                plan(["Heat", "Sink"], [["Heat", "Sink"]]),
                plan(["Cell"], []),
                plan(["Input", "Output"], [["Input", "Output"]]),
            ],
        }
    )


def manifest_by_key(manifest: pd.DataFrame) -> dict[str, dict]:
    return {f"{row['model']}/{row['sample_id']}": row for row in manifest.to_dict("records")}


def test_two_generators_give_images_manifest_and_metrics(benchmark: pd.DataFrame) -> None:
    grey = GreySquares(fail_on=["s-b-p0"])
    generators = {"programmatic": ProgrammaticGenerator(), "grey": grey}
    images, _plans, manifest, timings, metrics = generate_images(
        benchmark, FINETUNE_SUMMARY, generators, PARAMS
    )

    assert list(manifest.columns) == [
        "model",
        "sample_id",
        "backend",
        "role",
        "seed",
        "status",
        "reason",
        "meta",
    ]
    assert list(manifest["model"]) == ["programmatic"] * 3 + ["grey"] * 3
    assert list(manifest["sample_id"]) == list(benchmark["sample_id"]) * 2
    assert set(manifest["seed"]) == {7} and {r.seed for r in grey.seen} == {7}

    rows = manifest_by_key(manifest)
    failed = rows["grey/s-b-p0"]
    assert (failed["status"], failed["reason"]) == ("failed", "refused sample s-b-p0")
    assert sorted(images) == sorted(key for key, row in rows.items() if row["status"] == "ok")
    assert len(images) == 5 and "grey/s-b-p0" not in images
    assert all(load().size == (256, 256) for load in images.values())

    drawn = rows["programmatic/s-a-p0"]
    assert drawn["backend"] == "programmatic" and pd.isna(drawn["reason"])
    meta = json.loads(drawn["meta"])
    assert meta["drawn_labels"] == ["Heat", "Sink"] and meta["drawn_edges"] == [["Heat", "Sink"]]
    assert rows["grey/s-a-p0"]["backend"] == "GreySquares"
    assert set(manifest["role"]) == {"contestant"}

    assert metrics["programmatic.ok"] == 3 and metrics["programmatic.failed"] == 0
    assert metrics["grey.ok"] == 2 and metrics["grey.failed"] == 1
    # The wall seconds the generator took: at least its slowest image's, from sending to image.
    assert metrics["grey.seconds"] >= timings[timings["model"] == "grey"]["seconds"].max() > 0


def test_the_seconds_of_each_image_are_a_table_of_their_own(benchmark: pd.DataFrame) -> None:
    # timings differ on every run: kept out of the DVC-tracked manifest, one row per manifest row
    generators = {"programmatic": ProgrammaticGenerator(), "grey": GreySquares(fail_on=["s-b-p0"])}
    _, _plans, manifest, timings, _ = generate_images(benchmark, {}, generators, PARAMS)
    assert "seconds" not in manifest.columns and list(timings.columns) == TIMING_COLUMNS
    assert timings[["model", "sample_id"]].equals(manifest[["model", "sample_id"]])
    assert (timings["seconds"] >= 0).all()
    _, aibench_manifest, aibench_timings, _ = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, {}, generators, PARAMS
    )
    assert aibench_timings[["model", "sample_id"]].equals(aibench_manifest[["model", "sample_id"]])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["generation_timings", "aibench_generation_timings"])
def test_the_timings_are_an_mlflow_artifact_and_no_dvc_out(name: str, tmp_path: Path, mlflow_store) -> None:
    entry = catalog_entries()[name]
    configured = entry["dataset"]["filepath"]
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    outs = {str(out) for stage in stages.values() for out in stage.get("outs", [])}
    assert not any(configured.startswith(out) for out in outs)
    entry["dataset"]["filepath"] = str(tmp_path / configured)
    catalog = DataCatalog.from_config({name: entry})
    timings = pd.DataFrame({"model": ["grey"], "sample_id": ["s-a-p0"], "seconds": [0.25]})
    experiment = mlflow.create_experiment("generate", artifact_location=(tmp_path / "artifacts").as_uri())
    with mlflow.start_run(experiment_id=experiment) as active:
        catalog.save(name, timings)
    logged = {item.path for item in mlflow_store.list_artifacts(active.info.run_id, "timings")}
    assert logged == {f"timings/{Path(configured).name}"}


def test_models_select_generators_and_unknown_names_list_the_available(benchmark: pd.DataFrame) -> None:
    generators = {"programmatic": ProgrammaticGenerator(), "grey": GreySquares()}
    images, _plans, manifest, _timings, metrics = generate_images(
        benchmark, {}, generators, {**PARAMS, "models": ["grey"]}
    )
    assert set(manifest["model"]) == {"grey"} and len(images) == 3
    assert sorted(metrics) == ["grey.failed", "grey.ok", "grey.seconds"]

    with pytest.raises(
        ValueError, match=r"unknown generator\(s\) \['dalle'\]; available: \['grey', 'programmatic'\]"
    ):
        generate_images(benchmark, {}, generators, {**PARAMS, "models": ["dalle"]})


def test_unreadable_plans_corrupt_images_and_crashes_become_failed_rows(benchmark: pd.DataFrame) -> None:
    benchmark.loc[1, "plan"] = "{labels: [Cell"
    generators = {
        "grey": GreySquares(corrupt_on=["s-c-p0"]),
        "crashing": Crashing(),
        "reference": PlanReferenceRenderer(),
    }
    images, _plans, manifest, timings, _ = generate_images(benchmark, {}, generators, PARAMS)

    rows = manifest_by_key(manifest)
    seconds = manifest_by_key(timings)
    assert len(rows) == 9
    assert sorted(images) == ["grey/s-a-p0", "grey/s-b-p0", "reference/s-a-p0", "reference/s-c-p0"]
    assert rows["grey/s-c-p0"]["status"] == "failed"
    assert rows["grey/s-c-p0"]["reason"].startswith("image bytes for sample s-c-p0 are not a readable image")
    # A contestant never reads the plan, so only the reference fails on an unreadable one.
    assert rows["grey/s-b-p0"]["status"] == "ok"
    unreadable = rows["reference/s-b-p0"]
    assert (unreadable["status"], unreadable["role"], seconds["reference/s-b-p0"]["seconds"]) == (
        "failed",
        "reference",
        0.0,
    )
    assert unreadable["reason"].startswith("benchmark plan for sample s-b-p0 is not valid JSON")
    crashed = rows["crashing/s-a-p0"]
    assert crashed["status"] == "failed" and crashed["backend"] == "Crashing"
    assert (
        crashed["reason"]
        == "generator crashing raised on the window with sample s-a-p0: MemoryError('out of device memory')"
    )


def test_adapter_of_the_finetune_run_is_recorded_for_generators_that_load_it(
    benchmark: pd.DataFrame, tmp_path: Path
) -> None:
    adapter = tmp_path / "lora"
    adapter.mkdir()
    generators = {"tuned": GreySquares(lora_path=str(adapter)), "grey": GreySquares()}
    summary = FINETUNE_SUMMARY | {"adapter_path": str(adapter)}
    _, _plans, manifest, _, _ = generate_images(benchmark, summary, generators, PARAMS)
    metas = {row["model"]: json.loads(row["meta"]) for _, row in manifest.iterrows()}
    assert metas["tuned"]["adapter"] == {
        "lora_path": str(adapter),
        "adapter_path": str(adapter),
        "steps": 8,
        "final_loss": 0.5,
    }
    assert "adapter" not in metas["grey"]


def test_without_its_adapter_a_finetuned_generator_fails_each_sample_naming_finetune(
    benchmark: pd.DataFrame, tmp_path: Path
) -> None:
    tuned = GreySquares(lora_path=str(tmp_path / "lora"))
    never_run = MissingInput(location="data/06_models/finetune_summary.json", written_by="finetune")
    images, _plans, manifest, _, metrics = generate_images(
        benchmark, never_run, {"tuned": tuned, "grey": GreySquares()}, PARAMS
    )
    assert tuned.seen == [] and sorted(images) == [
        f"grey/{sample}" for sample in sorted(benchmark["sample_id"])
    ]
    failed = manifest[manifest["model"] == "tuned"]
    assert list(failed["status"]) == ["failed"] * 3 and list(failed["sample_id"]) == list(
        benchmark["sample_id"]
    )
    assert set(failed["reason"]) == {
        f"generator tuned loads the LoRA adapter {tmp_path / 'lora'}, which does not exist: `kedro run "
        "--pipelines finetune` writes it (to finetune.adapter_path), or leave tuned out with generate.models"
    }
    assert (metrics["tuned.failed"], metrics["grey.ok"]) == (3, 3)


BENCHMARK_FILE = [
    {"sample_id": "lever", "prompts": {"plain": 'Draw "Effort" -> "Load".', "reasoning": "Draw a lever."},
     "questions": [{"id": "q1", "text": "Is Effort written?", "expected_text": "Effort"}]},
    {"sample_id": "circuit", "prompt": 'A "Battery" feeding a "Resistor".',
     "questions": [{"id": "q1", "text": "Is Resistor written?", "expected_text": "Resistor"}]},
]  # fmt: skip


def test_a_benchmark_file_is_drawn_by_the_contestants_with_nothing_else_run(tmp_path: Path, caplog) -> None:
    path = tmp_path / "physics.jsonl"
    path.write_text("".join(json.dumps(sample) + "\n" for sample in BENCHMARK_FILE))
    grey = GreySquares()
    generators = {"grey": grey, "programmatic": ProgrammaticGenerator(), "reference": PlanReferenceRenderer()}
    never_run = MissingInput(location="data/05_model_input/benchmark.parquet", written_by="bench_select")
    with caplog.at_level("INFO"):
        images, _plans, manifest, _, _ = generate_images(
            never_run, {}, generators, PARAMS | {"benchmark": str(path)}
        )
    items = ["lever__plain", "lever__reasoning", "circuit"]
    assert [request.sample_id for request in grey.seen] == items
    assert [request.prompt for request in grey.seen] == [
        'Draw "Effort" -> "Load".',
        "Draw a lever.",
        BENCHMARK_FILE[1]["prompt"],
    ]
    assert set(manifest["model"]) == {"grey", "programmatic"} and set(manifest["role"]) == {"contestant"}
    assert json.loads(manifest.set_index(["model", "sample_id"]).loc[("programmatic", "circuit"), "meta"])[
        "drawn_labels"
    ] == ["Battery", "Resistor"]
    assert set(images) == {f"{model}/{item}" for model in ("grey", "programmatic") for item in items} - {
        "programmatic/lever__reasoning"  # quotes no label: the baseline draws nothing, and says so
    }
    said = " ".join(caplog.text.split())
    assert f"reference(s) reference skipped: the benchmark file {path} has no plans, which they draw" in said


def test_generate_without_a_benchmark_names_bench_select_and_the_benchmark_file_parameter(
    tmp_path: Path,
) -> None:
    never_run = MissingInput(location="data/05_model_input/benchmark.parquet", written_by="bench_select")
    with pytest.raises(
        Exception,
        match=r"generate: no benchmark: data/05_model_input/benchmark.parquet does not "
        r"exist \(written by `kedro run --pipelines bench_select`\); or give a benchmark file "
        r"with generate.benchmark=FILE",
    ):
        generate_images(never_run, {}, {"grey": GreySquares()}, PARAMS)
    with pytest.raises(BenchmarkFileError, match=r"nope.jsonl does not exist \(generate.benchmark\)"):
        generate_images(
            never_run, {}, {"grey": GreySquares()}, PARAMS | {"benchmark": str(tmp_path / "nope.jsonl")}
        )


def test_a_benchmark_files_images_go_to_its_own_folder_where_evaluate_finds_them() -> None:
    default = catalog_entries()
    drawn = catalog_entries({"generate": {"benchmark": "physics.jsonl"}})
    judged = catalog_entries({"evaluate": {"benchmark": "benchmarks/physics.jsonl"}})
    locations = {
        "generations": ("dataset", "path"),
        "generation_manifest": ("dataset", "filepath"),
        "generate_metrics": ("filepath",),
        "aibench_generation_manifest": ("dataset", "filepath"),
    }

    def where(entries: dict, name: str) -> str:
        entry = entries[name]
        for key in locations[name]:
            entry = entry[key]
        return entry

    assert where(default, "generations") == "data/07_model_output/generations"
    assert where(drawn, "generations") == "data/07_model_output/benchmarks/physics/generations"
    assert (
        where(drawn, "generation_manifest")
        == "data/07_model_output/benchmarks/physics/generation_manifest.parquet"
    )
    assert where(drawn, "generate_metrics") == "data/08_reporting/benchmarks/physics/generate.json"
    assert where(drawn, "aibench_generation_manifest").startswith("data/07_model_output/benchmarks/physics/")
    # evaluate on that benchmark file reads what generate drew, with its manifest
    for name in ("generations", "generation_manifest"):
        assert where(judged, name) == where(drawn, name)
    assert where(judged, "generate_metrics") == where(default, "generate_metrics")  # evaluate writes none
    with pytest.raises(Exception, match="name different benchmarks"):
        catalog_entries({"generate": {"benchmark": "physics.jsonl"}, "evaluate": {"benchmark": "chem.jsonl"}})


def test_pipeline_runs_in_kedro_and_saves_png_partitions(benchmark: pd.DataFrame, tmp_path: Path) -> None:
    catalog = DataCatalog(
        datasets={
            "generations": PartitionedDataset(
                path=str(tmp_path), dataset={"type": "pillow.ImageDataset"}, filename_suffix=".png"
            ),
            "aibench_generations": PartitionedDataset(
                path=str(tmp_path / "aibench"),
                dataset={"type": "pillow.ImageDataset"},
                filename_suffix=".png",
            ),
            "benchmark": MemoryDataset(benchmark),
            "aibench_set": MemoryDataset(AIBENCH_SET),
            "aibench_graphs": MemoryDataset(AIBENCH_GRAPHS),
            "finetune_summary": MemoryDataset(FINETUNE_SUMMARY),
            "generators": MemoryDataset({"programmatic": ProgrammaticGenerator()}, copy_mode="assign"),
            "params:generate": MemoryDataset(PARAMS),
        }
    )
    SequentialRunner().run(create_pipeline(), catalog)
    assert sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.glob("programmatic/*.png")) == [
        f"programmatic/{sample_id}.png" for sample_id in benchmark["sample_id"]
    ]
    # the AIBench illustrations in their own folder: only the paper whose method text quotes labels
    assert [path.name for path in (tmp_path / "aibench").rglob("*.png")] == ["quoted.png"]
    assert list(catalog["aibench_generation_manifest"].load()["status"]) == ["ok", "failed", "failed"]
    assert Image.open(tmp_path / "programmatic" / "s-b-p0.png").size == (256, 256)
    assert list(catalog["generation_manifest"].load()["status"]) == ["ok"] * 3
    assert catalog["generate_metrics"].load()["programmatic.ok"] == 3


# ---- the AIBench set, drawn from each paper's method text

AIBENCH_SET = pd.DataFrame(
    {
        "sample_id": ["quoted", "prose", "empty"],
        "methods_text": [
            'Reads pass "Trimming" -> "Alignment" before "Calling".',
            "Trimming is followed by alignment.",
            "  ",
        ],
        "venue": ["V1", "V2", "V1"],
    }
)


# annotate's logic graphs of the set: a graph with phases, a failed graph, a graph whose paper has no text
AIBENCH_GRAPHS = pd.DataFrame(
    {
        "sample_id": ["quoted", "prose", "empty"],
        "nodes": [json.dumps(["Trimming", "Alignment", "Calling"]), None, json.dumps(["Reads"])],
        "edges": [json.dumps([["Trimming", "Alignment"], ["Alignment", "Calling"]]), None, json.dumps([])],
        "phases": [json.dumps([["Trimming"], ["Alignment", "Calling"]]), None, json.dumps([])],
        "n_questions": [9, 0, 1],
        "status": ["ok", "failed", "ok"],
        "reason": [None, "aibench_graph reply broke its schema", None],
    }
)


def test_contestants_draw_the_aibench_set_from_the_method_text(tmp_path: Path) -> None:
    grey = GreySquares()
    generators = {"programmatic": ProgrammaticGenerator(), "grey": grey}
    images, manifest, _timings, metrics = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, FINETUNE_SUMMARY, generators, PARAMS
    )
    # the prompt: the task's instruction around the method text, nothing else (no caption, no graph)
    template = prompt_template("aibench_illustration")
    assert [request.prompt for request in grey.seen] == [
        template.render(methods_text=text.strip()) for text in AIBENCH_SET["methods_text"][:2]
    ]
    assert all(type(request) is GenerationRequest for request in grey.seen)  # never a plan
    assert {(r.seed, r.width, r.height) for r in grey.seen} == {(7, 256, 256)}
    rows = manifest.set_index(["model", "sample_id"])
    assert list(manifest["sample_id"]) == ["quoted", "prose", "empty"] * 2  # the set's order per model
    # the code-based baseline draws the quoted labels and stated arrows; plain prose quotes none
    assert rows.loc[("programmatic", "quoted"), "status"] == "ok"
    assert "quotes no label" in rows.loc[("programmatic", "prose"), "reason"]
    for model in ("programmatic", "grey"):  # a paper without method text is never sent, and says why
        assert rows.loc[(model, "empty"), "reason"] == "AIBench sample empty has no method text to draw from"
    assert set(images) == {"programmatic/quoted", "grey/quoted", "grey/prose"}
    sent = manifest[manifest["sample_id"] != "empty"]  # each row of a prompt sent names its version
    assert {json.loads(meta)["prompt_version"] for meta in sent["meta"]} == {template.version}
    assert (metrics["programmatic.ok"], metrics["programmatic.failed"]) == (1.0, 2.0)
    assert (metrics["grey.ok"], metrics["grey.failed"]) == (2.0, 1.0)


def test_references_draw_the_logic_graph_of_each_aibench_paper() -> None:
    exact = PlanReferenceRenderer()
    faulty = PlanReferenceRenderer(faults={"misspell_labels": 1, "reverse_edges": 1, "drop_nodes": 1})
    generators = {"grey": GreySquares(), "exact": exact, "faulty": faulty}
    images, manifest, _timings, metrics = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, FINETUNE_SUMMARY, generators, PARAMS
    )
    rows = manifest.set_index(["model", "sample_id"])
    assert set(manifest[manifest["model"] != "grey"]["role"]) == {"reference"}
    drawn = json.loads(rows.loc[("exact", "quoted"), "meta"])
    # components as boxes, flows as arrows, phases as groups titled in order
    assert drawn["drawn_labels"] == ["Trimming", "Alignment", "Calling"]
    assert drawn["drawn_edges"] == [["Trimming", "Alignment"], ["Alignment", "Calling"]]
    assert drawn["drawn_groups"] == [["Stage 1", ["Trimming"]], ["Stage 2", ["Alignment", "Calling"]]]
    assert images["exact/quoted"]().size == (256, 256)
    # the faulty reference plants its faults in the graph (groups included), and records them
    faulty_meta = json.loads(rows.loc[("faulty", "quoted"), "meta"])
    planted = {fault["kind"]: fault for fault in faulty_meta["planted_faults"]}
    assert {"drop_node", "misspell"} <= set(planted)
    grouped = [label for _, members in faulty_meta["drawn_groups"] for label in members]
    assert planted["drop_node"]["label"] not in faulty_meta["drawn_labels"] + grouped
    assert (
        planted["misspell"]["drawn"] in faulty_meta["drawn_labels"]
        and planted["misspell"]["drawn"] in grouped
    )
    # a paper whose graph failed fails for the references with annotate's reason, not for contestants
    reason = rows.loc[("exact", "prose"), "reason"]
    assert "has no logic graph (failed: aibench_graph reply broke its schema)" in reason
    assert rows.loc[("grey", "prose"), "status"] == "ok"
    assert rows.loc[("exact", "empty"), "reason"] == "AIBench sample empty has no method text to draw from"
    assert (metrics["exact.ok"], metrics["exact.failed"]) == (1.0, 2.0)


def test_the_aibench_generation_is_configurable() -> None:
    generators = {"grey": GreySquares(), "other": GreySquares(), "reference": PlanReferenceRenderer()}
    only = PARAMS | {"aibench": {"models": ["other", "reference"]}}
    _, manifest, _, _ = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, FINETUNE_SUMMARY, generators, only
    )
    assert set(manifest["model"]) == {"other", "reference"}
    off = PARAMS | {"aibench": {"enabled": False}}
    images, manifest, _timings, metrics = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, FINETUNE_SUMMARY, generators, off
    )
    assert images == {} and manifest.empty and metrics == {}
    missing = MissingInput(location="aibench_set.parquet", written_by="bench_select")
    assert generate_aibench_images(missing, AIBENCH_GRAPHS, FINETUNE_SUMMARY, generators, PARAMS)[1].empty
    with pytest.raises(
        ValueError, match=r"params:generate.aibench.models names unknown generator\(s\) \['nope'\]"
    ):
        generate_aibench_images(
            AIBENCH_SET,
            AIBENCH_GRAPHS,
            FINETUNE_SUMMARY,
            generators,
            PARAMS | {"aibench": {"models": ["nope"]}},
        )


def test_a_rerun_of_the_aibench_generation_draws_nothing_again(tmp_path: Path) -> None:
    grey = GreySquares()
    cache = ResponseCache(tmp_path / "responses.sqlite")
    first = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, {}, {"grey": CachedGenerator(grey, cache)}, PARAMS
    )
    again = generate_aibench_images(
        AIBENCH_SET, AIBENCH_GRAPHS, {}, {"grey": CachedGenerator(grey, cache)}, PARAMS
    )
    assert len(grey.seen) == 2  # the two papers with method text, drawn once
    assert again[3]["grey.cache_hits"] == 2.0 and again[3]["grey.cache_misses"] == 0.0
    assert set(again[0]) == set(first[0])


def _catalog_entry(name: str, tmp_path: Path) -> tuple[str, AbstractDataset]:
    """The conf/base catalog's dataset ``name`` with its data/ path moved under ``tmp_path``; and that path."""
    entry = catalog_entries()[name]
    inner = entry["dataset"]
    key = "path" if "path" in inner else "filepath"
    configured = inner[key]
    inner[key] = str(tmp_path / configured)
    entry.pop("metadata", None)
    return configured, AbstractDataset.from_config(name, entry)


def test_a_disabled_aibench_generation_still_writes_its_dvc_outs(
    benchmark: pd.DataFrame, tmp_path: Path
) -> None:
    # dvc repro fails when a stage leaves one of its outs unwritten: generate's AIBench folder and
    # manifest must exist (empty) when generate.aibench.enabled is false
    folder_path, folder = _catalog_entry("aibench_generations", tmp_path)
    manifest_path, manifest = _catalog_entry("aibench_generation_manifest", tmp_path)
    generate_outs = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]["generate"]["outs"]
    assert {folder_path, manifest_path} <= set(generate_outs)
    catalog = DataCatalog(
        datasets={
            "generations": PartitionedDataset(
                path=str(tmp_path / "sciir"), dataset={"type": "pillow.ImageDataset"}, filename_suffix=".png"
            ),
            "aibench_generations": folder,
            "aibench_generation_manifest": manifest,
            "benchmark": MemoryDataset(benchmark),
            "aibench_set": MemoryDataset(AIBENCH_SET),
            "aibench_graphs": MemoryDataset(AIBENCH_GRAPHS),
            "finetune_summary": MemoryDataset(FINETUNE_SUMMARY),
            "generators": MemoryDataset({"programmatic": ProgrammaticGenerator()}, copy_mode="assign"),
            "params:generate": MemoryDataset(PARAMS | {"aibench": {"enabled": False}}),
        }
    )
    SequentialRunner().run(create_pipeline(), catalog)
    assert (tmp_path / folder_path).is_dir() and not any((tmp_path / folder_path).iterdir())
    written = pd.read_parquet(tmp_path / manifest_path)
    assert written.empty and list(written.columns) == MANIFEST_COLUMNS
    assert is_missing_input(folder.load())  # an empty folder reads as no images: evaluate examines nothing


@pytest.mark.slow
def test_a_run_whose_every_image_failed_completes_writes_every_reason_and_says_so(
    benchmark: pd.DataFrame, tmp_path: Path, project_catalog, mlflow_run, caplog
) -> None:
    """generate with the project's catalog when every generator fails every sample: it completes, the
    manifest holds each failure with its reason, the image folder is written empty (read by evaluate as
    no image) and one warning says that no image was drawn."""
    generators = {"crashing": Crashing(), "grey": GreySquares(fail_on=list(benchmark["sample_id"]))}
    pipeline = create_pipeline()
    catalog = project_catalog(
        pipeline, {"benchmark": benchmark, "generators": generators, "params:generate": PARAMS}
    )
    with caplog.at_level("WARNING"):
        SequentialRunner().run(pipeline, catalog)

    manifest = catalog.load("generation_manifest")
    assert list(manifest["status"]) == ["failed"] * 6
    crashed = (
        "generator crashing raised on the window with sample s-a-p0: MemoryError('out of device memory')"
    )
    assert manifest["reason"].iloc[0] == crashed
    assert list(manifest["reason"].iloc[3:]) == [
        f"refused sample {sample}" for sample in benchmark["sample_id"]
    ]
    folder = tmp_path / "data" / "07_model_output" / "generations"
    assert folder.is_dir() and not any(folder.iterdir())
    assert is_missing_input(catalog.load("generations"))  # evaluate reads it as no image
    metrics = catalog.load("generate_metrics")
    assert [metrics[f"{model}.{status}"] for model in generators for status in ("ok", "failed")] == [
        0,
        3,
        0,
        3,
    ]
    assert (
        "generate drew no image: all 6 requests of 2 generators failed; each reason is in the generation "
        f"manifest, e.g. {crashed}"
    ) in caplog.messages
