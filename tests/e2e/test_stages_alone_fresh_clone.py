"""Each pipeline alone from its documented file inputs, in one fresh clone where no other pipeline has run:
human_corr from a ratings file and a metric-scores file (TIFA's published release when ../shared/external
is present), generate from a benchmark file (then evaluate judging what it drew), finetune from a folder of
image + caption pairs. Each test writes its own inputs and runs its own ``kedro run --pipelines X``; none
reads another's outputs. generate with generators of one's own (a served images API: the loopback images
server) runs in a clone of its own, whose conf/local is its own. (evaluate from a benchmark file and an
images folder: test_own_benchmark_fresh_clone.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image, ImageDraw
from scipy import stats

from sciir.testing.fake_images_server import FakeImagesServer
from sciir.user_files.rating_files import tifa_metric_scores, tifa_ratings

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TIFA = REPO / ".." / "shared" / "external" / "human_ratings" / "tifa" / "human_annotations_with_scores.json"
# The documented command (docs/human_corr.md): both inputs from files, every metric of the scores file.
HUMAN_CORR_FILES = (
    "human_corr.ratings.source=file,human_corr.ratings.path=ratings.csv,"
    "human_corr.metric_scores.source=file,human_corr.metric_scores.path=metric_scores.csv,human_corr.metrics=null"
)
# TIFA's notebook over all 800 images (../shared/external/README.md): Pearson, Spearman, Kendall tau-b.
TIFA_PUBLISHED = {
    "tifa_mplug-large": (0.5967, 0.5922, 0.4717),
    "clipscore_vitb32": (0.3318, 0.3198, 0.2314),
}


@pytest.fixture(scope="module")
def fresh(make_clone) -> Path:
    return make_clone("stages_alone")


def _said(result: subprocess.CompletedProcess) -> str:
    """The run's output without the console's line breaks (it wraps long lines anywhere)."""
    return "".join((result.stdout + result.stderr).split())


def _written_by_no_stage(root: Path, *paths: str) -> None:
    for path in paths:
        assert not (root / path).exists(), f"{path} exists: the test would not show the stage runs alone"


def test_human_corr_alone_names_the_input_it_lacks_and_the_parameter_that_gives_it(fresh, kedro):
    _written_by_no_stage(fresh, "data/08_reporting/sample_scores.parquet", "data/03_primary/curated.parquet")
    pd.DataFrame({"image_id": ["m/a"], "rater_id": ["r"], "score": [3]}).to_csv(
        fresh / "ratings.csv", index=False
    )
    params = "human_corr.ratings.source=file,human_corr.ratings.path=ratings.csv"
    result = kedro(fresh, "--pipelines", "human_corr", "--params", params)
    assert result.returncode != 0
    expected = (
        f"human_corr: no metric scores: {fresh}/data/08_reporting/sample_scores.parquet does not exist (written by "
        "`kedro run --pipelines evaluate`); or give a file with "
        "human_corr.metric_scores.source=file,human_corr.metric_scores.path=FILE"
    )
    assert "".join(expected.split()) in _said(result)


@pytest.mark.skipif(not TIFA.is_file(), reason="../shared/external/human_ratings/tifa not present")
def test_human_corr_alone_reproduces_tifas_published_correlations_from_its_files(fresh, kedro, run_names):
    # TIFA's release in the documented layouts, written by the project's readers of that release.
    tifa_ratings(TIFA).to_csv(fresh / "ratings.csv", index=False)
    tifa_metric_scores(TIFA, list(TIFA_PUBLISHED)).to_csv(fresh / "metric_scores.csv", index=False)
    result = kedro(fresh, "--pipelines", "human_corr", "--params", HUMAN_CORR_FILES)
    assert result.returncode == 0, result.stderr[-6000:]
    table = pd.read_csv(fresh / "data" / "08_reporting" / "correlations.csv").set_index("metric")
    assert sorted(table.index) == sorted(TIFA_PUBLISHED)
    for metric, (pearson, spearman, kendall) in TIFA_PUBLISHED.items():
        row = table.loc[metric]
        assert row.n == 800
        assert (row.pearson_r, row.spearman_rho, row.kendall_tau_b) == pytest.approx(
            (pearson, spearman, kendall), abs=0.0015
        )
    agreement = pd.read_csv(fresh / "data" / "08_reporting" / "rater_agreement.csv").set_index("statistic")
    assert agreement.loc["krippendorff_alpha", "n_raters"] == 2
    assert run_names(fresh)[-1] == "human_corr on ratings.csv and metric_scores.csv"
    _written_by_no_stage(fresh, "data/08_reporting/sample_scores.parquet", "data/03_primary/curated.parquet")


def test_human_corr_alone_from_small_files_of_ones_own(fresh, kedro):
    scores = {"mine/a": 0.9, "mine/b": 0.1, "mine/c": 0.6, "mine/d": 0.3, "theirs/a": 0.7}
    ratings = {"mine/a": (5, 4), "mine/b": (1, 2), "mine/c": (4, 4), "mine/d": (3, 2), "theirs/a": (4, 5)}
    pd.DataFrame(
        [{"image_id": image, "metric": "my_judge", "score": score} for image, score in scores.items()]
    ).to_csv(fresh / "metric_scores.csv", index=False)
    pd.DataFrame(
        [
            {"image_id": image, "rater_id": rater, "score": score}
            for image, pair in ratings.items()
            for rater, score in zip(("ann", "bo"), pair, strict=True)
        ]
    ).to_csv(fresh / "ratings.csv", index=False)
    result = kedro(fresh, "--pipelines", "human_corr", "--params", HUMAN_CORR_FILES)
    assert result.returncode == 0, result.stderr[-6000:]
    row = (
        pd.read_csv(fresh / "data" / "08_reporting" / "correlations.csv").set_index("metric").loc["my_judge"]
    )
    mean_rating = [sum(ratings[image]) / 2 for image in scores]
    assert row.n == 5
    assert row.pearson_r == pytest.approx(stats.pearsonr(list(scores.values()), mean_rating).statistic)


# A benchmark file (docs/bring_your_own_benchmark.md's format) whose prompts quote labels, which the
# programmatic baseline draws; the second setting of "lever" quotes none.
BENCHMARK = [
    {
        "sample_id": "circuit",
        "group": "electricity",
        "prompt": 'Draw a battery feeding a resistor labelled "Resistor".',
        "questions": [{"id": "q1", "text": 'Is "Resistor" spelled exactly?', "expected_text": "Resistor"}],
    },
    {
        "sample_id": "lever",
        "prompts": {"plain": 'A lever: "Effort" -> "Fulcrum" -> "Load".', "reasoning": "Draw a lever."},
        "questions": [{"id": "q1", "text": 'Is "Effort" spelled exactly?', "expected_text": "Effort"}],
    },
]


def test_generate_alone_draws_a_benchmark_file_that_evaluate_then_judges(fresh, kedro, run_names):
    _written_by_no_stage(fresh, "data/05_model_input/benchmark.parquet", "data/06_models/lora")
    (fresh / "physics.jsonl").write_text("".join(json.dumps(sample) + "\n" for sample in BENCHMARK))
    # The documented command (docs/bring_your_own_benchmark.md), as written.
    result = kedro(fresh, "--pipelines", "generate", "--params", "generate.benchmark=physics.jsonl")
    assert result.returncode == 0, result.stderr[-6000:]
    drawn = fresh / "data" / "07_model_output" / "benchmarks" / "physics"
    manifest = pd.read_parquet(drawn / "generation_manifest.parquet")
    items = ["lever__plain", "lever__reasoning", "circuit"]
    assert set(manifest["model"]) == {
        "programmatic",
        "programmatic_faulty",
        "tiny_diffusers_lora",
        "tiny_diffusers_base",  # drawn beside its adapter (generate.adapter_bases)
    }
    assert set(manifest["sample_id"]) == set(items) and set(manifest["role"]) == {"contestant"}
    # the finetuned generator has no adapter in a fresh clone: its samples fail saying what writes it
    tuned = manifest[manifest["model"] == "tiny_diffusers_lora"]
    assert set(tuned["status"]) == {"failed"}
    assert "`kedro run --pipelines finetune` writes it" in tuned["reason"].iloc[0]
    written = sorted(path.relative_to(drawn / "generations").as_posix() for path in drawn.rglob("*.png"))
    assert written == [
        f"{model}/{item}.png"
        for model in ("programmatic", "programmatic_faulty")
        for item in ("circuit", "lever__plain")
    ]
    assert Image.open(drawn / "generations" / "programmatic" / "circuit.png").size == (1024, 1024)
    said = _said(result)
    assert "reference(s)reference_renderer,reference_renderer_faultyskipped:thebenchmarkfile" in said
    assert "AIBenchgenerationskipped:generate.benchmarkisset" in said
    # the default run's outputs are untouched: no image folder, and the tracked metrics as committed
    _written_by_no_stage(
        fresh, "data/07_model_output/generations", "data/07_model_output/generation_manifest.parquet"
    )
    for name in ("generate.json", "generate_aibench.json"):
        tracked = fresh / "data" / "08_reporting" / "metrics" / name
        assert tracked.read_bytes() == (REPO / tracked.relative_to(fresh)).read_bytes(), name
    metrics = json.loads((fresh / "data/08_reporting/benchmarks/physics/generate.json").read_text())
    assert (metrics["programmatic.ok"], metrics["tiny_diffusers_lora.failed"]) == (2, 3)
    assert metrics["tiny_diffusers_base.failed"] == 3  # nor its base pipeline, which finetune builds
    assert run_names(fresh)[-1] == "generate physics"

    judged = kedro(fresh, "--pipelines", "evaluate", "--params", "evaluate.benchmark=physics.jsonl")
    assert judged.returncode == 0, judged.stderr[-6000:]
    results = fresh / "data" / "08_reporting" / "benchmarks" / "physics"
    board = pd.read_csv(results / "leaderboard.csv").set_index("model")
    assert {"programmatic", "programmatic_faulty"} <= set(board.index)
    missing = pd.read_csv(results / "missing_images.csv")
    assert set(missing[missing["model"] == "tiny_diffusers_lora"]["sample_id"]) == set(items)
    verdicts = pd.read_parquet(results / "verdicts.parquet").set_index(["model", "sample_id", "question_id"])
    # the baseline writes the labels its prompt quotes: "Resistor" is read back by the offline judge
    assert verdicts.loc[("programmatic", "circuit", "q1"), "verdict"] == "yes"
    assert run_names(fresh)[-1] == "evaluate physics"


# docs/bring_your_own_benchmark.md's generators of one's own, with the loopback images server's address.
OWN_GENERATORS = """generators:
  type: sciir.catalog.backend_dataset.BackendSetDataset
  kind: generator
  cache_path: data/cache/responses.sqlite
  members:
    my_model:
      backend: openai_images
      base_url: {base_url}
      model: my-image-model
    programmatic:
      backend: programmatic
"""


def test_generate_alone_draws_a_benchmark_file_with_generators_of_ones_own(make_clone, kedro, run_names):
    root = make_clone("own_generators")
    (root / "physics.jsonl").write_text("".join(json.dumps(sample) + "\n" for sample in BENCHMARK))
    with FakeImagesServer() as server:
        (root / "conf" / "local" / "backends.yml").write_text(OWN_GENERATORS.format(base_url=server.base_url))
        result = kedro(root, "--pipelines", "generate", "--params", "generate.benchmark=physics.jsonl")
        received = server.requests
    assert result.returncode == 0, result.stderr[-6000:]
    drawn = root / "data" / "07_model_output" / "benchmarks" / "physics"
    manifest = pd.read_parquet(drawn / "generation_manifest.parquet")
    items = {"lever__plain", "lever__reasoning", "circuit"}
    status = manifest.set_index(["model", "sample_id"])["status"]
    # only the configured generators draw; the served one draws every item, the baseline what it can
    assert set(manifest["model"]) == {"my_model", "programmatic"}
    assert {
        sample for (model, sample), state in status.items() if model == "my_model" and state == "ok"
    } == items
    assert status[("programmatic", "lever__reasoning")] == "failed"
    # the served model was asked once per item, with the item's prompt alone and the configured size
    assert sorted(request.body["prompt"] for request in received) == sorted(
        [BENCHMARK[0]["prompt"], *BENCHMARK[1]["prompts"].values()]
    )
    assert {request.body["model"] for request in received} == {"my-image-model"}
    assert {request.body["size"] for request in received} == {"1024x1024"}
    assert {path.stem for path in (drawn / "generations" / "my_model").glob("*.png")} == items
    assert Image.open(drawn / "generations" / "my_model" / "circuit.png").size == (1024, 1024)
    assert run_names(root)[-1] == "generate physics"


def _write_pairs(folder: Path) -> None:
    """Three image + caption pairs, <name>.png beside <name>.txt, at 64 px."""
    folder.mkdir()
    for index, label in enumerate(("Cell", "Lever", "Circuit")):
        image = Image.new("RGB", (64, 64), "white")
        ImageDraw.Draw(image).rectangle((8 + 8 * index, 16, 40 + 8 * index, 48), outline="black", width=3)
        image.save(folder / f"pair{index}.png")
        (folder / f"pair{index}.txt").write_text(f'A box labelled "{label}".\n')


def test_finetune_alone_trains_on_a_folder_of_image_caption_pairs(fresh, kedro, run_names):
    _written_by_no_stage(fresh, "data/05_model_input/train_split.parquet", "data/03_primary/images")
    _write_pairs(fresh / "my_pairs")
    # The documented command (docs/finetune.md), as written.
    params = "finetune.train_data.source=folder,finetune.train_data.path=my_pairs"
    result = kedro(fresh, "--pipelines", "finetune", "--params", params)
    assert result.returncode == 0, result.stderr[-6000:]
    summary = json.loads((fresh / "data" / "06_models" / "finetune_summary.json").read_text())
    assert (summary["n_train"], summary["n_skipped"], summary["steps"]) == (3, 0, 8)
    assert (fresh / "data" / "06_models" / "lora" / "pytorch_lora_weights.safetensors").is_file()
    assert run_names(fresh)[-1] == "finetune on my_pairs"

    without = kedro(fresh, "--pipelines", "finetune")  # no folder, and bench_select never ran
    assert without.returncode != 0
    expected = (
        f"finetune: no training data: {fresh}/data/05_model_input/train_split.parquet does not exist (written by "
        "`kedro run --pipelines bench_select`); or give a release folder or a folder of image + caption "
        "pairs with finetune.train_data.source=release (or folder),finetune.train_data.path=FOLDER"
    )
    assert "".join(expected.split()) in _said(without)
