"""The README's `make run` (set-up, then `kedro run`) end to end on the embedded sample, in the session's fresh
clone: the ``default_run`` fixture of tests/e2e/conftest.py, run once per session.

The documented commands (tests/e2e/test_documented_commands.py) go on from this run in the same clone: the
README's second `kedro run` makes no model calls, `kedro registry list` names every pipeline, and DVC (`dvc
repro`, `status`, `metrics show`, `push`), as docs/release.md shows it, runs every stage alone (`kedro run
--pipelines <stage>`)."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from mlflow import MlflowClient

from sciir.sample.annotation_quality import box_iou

# One xdist worker runs every module that shares the session's project clone (tests/e2e/conftest.py).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e_project")]


@pytest.fixture(scope="module")
def first_run(default_run: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """The clone's `make run` (tests/e2e/conftest.py), which must have succeeded."""
    assert default_run.returncode == 0, (
        f"{default_run.args[-1]} failed:\n{default_run.stdout[-4000:]}\n{default_run.stderr[-8000:]}"
    )
    return default_run


def _leaderboard(project: Path) -> pd.DataFrame:
    return pd.read_csv(project / "data" / "08_reporting" / "leaderboard.csv").set_index("model")


def test_run_ends_with_the_leaderboard_and_the_report(first_run, project):
    out = first_run.stdout
    assert "SciIR leaderboard" in out and "programmatic_faulty" in out
    report = project / "data" / "08_reporting" / "report"
    assert f"Report: {report / 'index.html'}" in out
    assert (report / "index.html").stat().st_size > 5_000
    assert list((report / "models").glob("*.html")) and list((report / "thumbnails").glob("*.png"))
    # The summary shows the run's two plots from its own folder, the same files as the run's PNGs.
    summary = (report / "index.html").read_text()
    for name in ("track_pass_rates.png", "group_heatmap.png"):
        assert f'src="plots/{name}"' in summary
        assert (report / "plots" / name).read_bytes() == (report.parent / name).read_bytes()
    # Every model page links back to both plots, each a figure of the summary page.
    for page in (report / "models").glob("*.html"):
        anchors = re.findall(r'class="plot-link" href="\.\./index\.html#([^"]+)"', page.read_text())
        assert len(anchors) == 2, page.name
        for anchor in anchors:
            figure = rf'<figure class="plot" id="{re.escape(anchor)}">\s*<img class="plot" src="plots/[a-z_]+\.png"'
            assert re.search(figure, summary), (page.name, anchor)


def test_programmatic_beats_its_faulty_variant_and_noise_scores_near_zero(first_run, project):
    board = _leaderboard(project)
    assert board.loc["programmatic", "text"] >= 0.8
    assert board.loc["programmatic", "text"] - board.loc["programmatic_faulty", "text"] >= 0.5
    # Noise passes no text check; where the reader cannot trust itself on noise it abstains (n/a).
    assert not board.loc["tiny_diffusers_lora", "text"] > 0.05
    # the blank baseline (white images) is scored beside them, never ranked, and the offline judge passes none
    assert board.loc["blank", "role"] == "reference" and pd.isna(board.loc["blank", "rank"])
    assert not board.loc["blank", "final"] > 0.0


def test_the_contestants_are_compared_pairwise_with_rank_intervals_and_the_detectable_difference(
    first_run, project
):
    out = first_run.stdout
    assert "Paired comparisons of final (exact McNemar test" in out
    assert "programmatic vs programmatic_faulty: " in out and "Smallest difference of final pass rate" in out
    pairwise = pd.read_csv(project / "data" / "08_reporting" / "pairwise.csv")
    contestants = {"programmatic", "programmatic_faulty", "tiny_diffusers_lora", "tiny_diffusers_base"}
    assert set(pairwise.model_a) | set(pairwise.model_b) == contestants  # never blank or a reference
    finals = pairwise[(pairwise.breakdown == "track") & (pairwise.value == "final")]
    assert len(finals) == 6 and (finals.n_pairs + finals.n_left_out == finals.n_items).all()
    board = _leaderboard(project)
    assert board.loc["programmatic", "rank_lo"] >= 1 and pd.isna(board.loc["blank", "rank_lo"])
    summary = (project / "data" / "08_reporting" / "report" / "index.html").read_text()
    assert '<table class="comparisons">' in summary and "What the benchmark can detect" in summary


def test_the_adapter_is_compared_with_its_base_drawn_with_the_same_prompts_and_seeds(first_run, project):
    manifest = pd.read_parquet(project / "data" / "07_model_output" / "generation_manifest.parquet")
    drawn = {
        model: list(zip(rows["sample_id"], rows["seed"], strict=True))
        for model, rows in manifest.groupby("model")
    }
    assert drawn["tiny_diffusers_base"] == drawn["tiny_diffusers_lora"]
    tuned = manifest[manifest["model"] == "tiny_diffusers_lora"]
    assert {json.loads(meta)["adapter"]["base"] for meta in tuned["meta"]} == {"tiny_diffusers_base"}
    effect = pd.read_csv(project / "data" / "08_reporting" / "finetune_effect.csv")
    final = effect[effect.track == "final"].set_index("adapter").loc["tiny_diffusers_lora"]
    assert final.base == "tiny_diffusers_base" and final.n_pairs + final.n_left_out == final.n_items == 12
    # Noise is judged on nothing the judge can read: no sample scored for both, and the run says so.
    assert "Fine-tuning effect on final" in first_run.stdout
    assert "tiny_diffusers_lora against tiny_diffusers_base: " in first_run.stdout
    summary = (project / "data" / "08_reporting" / "report" / "index.html").read_text()
    assert "Fine-tuning effect, pass rate (strict veto)" in summary
    assert any(path.name == "finetune_effect.csv" for path in (project / "mlruns" / "artifacts").rglob("*"))


def test_finetune_scores_its_checkpoints_and_registers_the_best(first_run, project):
    client = MlflowClient(f"sqlite:///{project / 'mlruns' / 'mlflow.db'}")
    with sqlite3.connect(project / "mlruns" / "mlflow.db") as conn:
        (run_id,) = {run for (run,) in conn.execute(
            "SELECT run_uuid FROM metrics WHERE key = 'finetune.checkpoint.final_pass_rate'"
        )}  # fmt: skip
    series = client.get_metric_history(run_id, "finetune.checkpoint.final_pass_rate")
    assert sorted(point.step for point in series) == [4, 8]  # eval_every 4 of 8 steps
    assert {point.step for point in client.get_metric_history(run_id, "finetune.train_loss")} >= {4, 8}
    best = max(series, key=lambda point: (point.value, point.step))
    summary = json.loads((project / "data" / "06_models" / "finetune_summary.json").read_text())
    assert summary["adapter_step"] == best.step and len(summary["checkpoint_scoring"]["sample_ids"]) == 2
    name, version = client.get_run(run_id).data.tags["sciir.registered_model"].split("/")
    registered = client.get_model_version(name, version)
    assert name == "sciir-lora" and registered.tags["checkpoint.step"] == str(best.step)
    assert float(registered.tags["checkpoint.final_pass_rate"]) == best.value


def test_every_figure_is_kept_or_rejected_with_a_reason(first_run, project):
    manifest = json.loads((project / "data" / "01_raw" / "embedded_sample" / "MANIFEST.json").read_text())
    figures = pd.read_parquet(project / "data" / "02_intermediate" / "figures.parquet")
    articles = pd.read_parquet(project / "data" / "02_intermediate" / "articles.parquet")
    rejected_articles = articles[articles.status == "rejected"]
    assert (rejected_articles.reason.str.len() > 0).all() and len(rejected_articles) >= 2
    good = [f for f in manifest["figures"] if f["expected"] == "kept"]
    assert len(good) >= 24
    assert set(figures.status) <= {"kept", "rejected"}
    assert (figures[figures.status == "rejected"].reason.str.len() > 0).all()
    curated = pd.read_parquet(project / "data" / "03_primary" / "curated.parquet")
    kept_figures = set(figures.loc[figures.status == "kept", "figure_uid"])
    assert kept_figures == set(curated.figure_uid)
    assert (curated[curated.status == "rejected"].reason.str.len() > 0).all()


def test_curate_shows_its_progress_and_none_of_dasks_cluster_chatter(first_run):
    printed = first_run.stdout + first_run.stderr
    figures = re.search(r"curate: (\d+)/(\d+) figures in", printed)
    assert figures and figures[1] == figures[2] and int(figures[1]) > 0, (
        "curate ran on its cluster and said so"
    )
    for dask_info in ("Scheduler at:", "Start worker at:", "Register worker", "Receive client connection"):
        assert dask_info not in printed  # conf/logging.yml keeps Dask's logger at WARNING


def test_the_fine_tuned_adapter_loads_without_diffusers_text_encoder_warning(first_run):
    # The run's adapter holds the UNet's weights only; diffusers would say so once per load and text encoder.
    printed = first_run.stdout + first_run.stderr
    assert "tiny_diffusers_lora" in printed  # the leaderboard: the model drawing with the adapter ran
    assert "No LoRA keys associated to" not in printed


def test_prompts_cut_for_the_tiny_base_are_said_once_in_the_run(first_run):
    # The sample's prompts exceed CLIP's 77 tokens; the run draws over data/06_models/tiny_base with the base, the
    # adapter and each checkpoint it scores, and says so once (Rich puts the logging call's place on the first line).
    printed = first_run.stdout + first_run.stderr
    warned = [line for line in printed.splitlines() if "WARNING" in line and "diffusers_gen.py:" in line]
    assert len(warned) == 1 and "tiny_base" in warned[0], warned


def test_the_run_prints_no_advice_meant_for_other_packages_authors(first_run):
    # sciir.runs.log_filters: MLflow's advice on kedro-mlflow's model, transformers' on diffusers' imports.
    printed = first_run.stdout + first_run.stderr
    assert "Add type hints to the `predict` method" not in printed
    assert "requires torchvision" not in printed


def test_the_panels_curate_found_are_the_ones_the_sample_drew(first_run, project):
    """Every kept figure's panels against the sample's truth boxes (tests may read the truth files; the
    pipelines never do): as many panels, each box tight inside the drawn one and mostly overlapping it."""
    figures = pd.read_parquet(project / "data" / "02_intermediate" / "figures.parquet")
    curated = pd.read_parquet(project / "data" / "03_primary" / "curated.parquet")
    checked = 0
    for figure in figures[figures["status"] == "kept"].itertuples():
        rows = curated[curated["figure_uid"] == figure.figure_uid].sort_values("panel_index")
        truth_path = (project / figure.image_path).with_suffix(".truth.json")
        if not truth_path.is_file():  # an icon planted to fail the size rule
            assert (rows["status"] == "rejected").all() and rows["reason"].str.contains("short side").all()
            continue
        truth = json.loads(truth_path.read_text(encoding="utf-8"))["panels"]
        assert rows["n_panels"].tolist() == [len(truth)] * len(truth), figure.image_path
        for row, panel in zip(rows.itertuples(), truth, strict=True):
            # The screen after the split rejects the sample's planted near-duplicates; nothing else is lost.
            assert row.status == "kept" or "near-duplicate" in row.reason, (figure.image_path, row.reason)
            found, expected = (row.x0, row.y0, row.x1, row.y1), tuple(panel["bbox"])
            # Truth boxes include the drawing margins; ours are tight around the ink.
            assert found[0] >= expected[0] - 2 and found[1] >= expected[1] - 2, figure.image_path
            assert found[2] <= expected[2] + 2 and found[3] <= expected[3] + 2, figure.image_path
            assert box_iou(found, expected) > 0.6, figure.image_path
            checked += 1
    assert checked >= 100  # 109 panels in 7 figures of several panels and the rest of one


def test_every_quality_filter_of_bench_select_runs_on_the_sample_and_every_group_remains(first_run, project):
    metrics = json.loads((project / "data" / "08_reporting" / "metrics" / "bench_select.json").read_text())
    params = yaml.safe_load((project / "conf" / "base" / "parameters_bench_select.yml").read_text())
    cascade = ["after_density", "after_iqr_terms", "after_iqr_rendered_text", "after_iqr_retained_text"]
    counts = [metrics[name] for name in cascade]
    # A skipped IQR filter keeps every candidate: each one ran, on enough candidates, and removed some.
    assert all(before >= params["bench_select"]["iqr_min_samples"] for before in counts[:-1])
    assert all(after < before for before, after in zip(counts[:-1], counts[1:], strict=True))
    groups = ("All_Three", "Entity_Law", "Law_Process", "Entity_Process")
    assert all(metrics[f"group_{group}"] >= 2 for group in groups)
    assert metrics["benchmark_size"] == counts[-1] == sum(metrics[f"group_{group}"] for group in groups)


def test_aibench_examines_every_models_illustrations_of_the_aibench_set(first_run, project):
    data = project / "data"
    aibench_set = pd.read_parquet(data / "05_model_input" / "aibench_set.parquet")
    graphs = pd.read_parquet(data / "04_feature" / "aibench_graphs.parquet").set_index("sample_id")
    qa = pd.read_parquet(data / "04_feature" / "aibench_qa.parquet")
    manifest = pd.read_parquet(data / "07_model_output" / "aibench_generation_manifest.parquet")
    scores = pd.read_csv(data / "08_reporting" / "aibench_scores.csv").set_index("model")
    assert len(aibench_set) and aibench_set["methods_text"].str.strip().str.len().gt(0).all()
    # every generator drew every paper (or says why not): contestants from the method text, references
    # the logic graph
    roles = dict(zip(manifest["model"], manifest["role"], strict=False))
    assert {model for model, role in roles.items() if role == "reference"} == {
        "reference_renderer",
        "reference_renderer_faulty",
    }
    assert len(manifest) == manifest["model"].nunique() * len(aibench_set)
    failed = manifest[manifest["status"] == "failed"]
    assert failed["reason"].str.len().gt(0).all()
    exact = manifest[manifest["model"] == "reference_renderer"].set_index("sample_id")
    for sample_id, row in exact.iterrows():  # the exact reference draws every graph annotate built
        assert (row["status"] == "ok") == (graphs.loc[sample_id, "status"] == "ok"), (
            sample_id,
            row["reason"],
        )
        if row["status"] == "ok":
            assert json.loads(row["meta"])["drawn_labels"] == json.loads(graphs.loc[sample_id, "nodes"])
    drawn = {path.relative_to(data / "07_model_output" / "aibench_generations").as_posix()
             for path in (data / "07_model_output" / "aibench_generations").rglob("*.png")}  # fmt: skip
    ok = manifest[manifest["status"] == "ok"]
    assert {f"{m}/{s}.png" for m, s in zip(ok["model"], ok["sample_id"], strict=True)} <= drawn
    # each model is examined on the AIBench set's questions, beside the blank baseline (white images, a
    # reference); what it could not draw lowers coverage
    assert set(scores.index) == set(manifest["model"]) | {"blank"}
    roles["blank"] = "reference"
    assert (scores["n_questions"] == qa["sample_id"].isin(aibench_set["sample_id"]).sum()).all()
    for model, rows in manifest.groupby("model"):
        if (rows["status"] == "failed").all():
            assert scores.loc[model, "coverage"] == 0.0 and scores.loc[model, "n_answered"] == 0
    # references are marked and listed last; on images of known content the solver answers levels 1-2,
    # right on the exact drawing, less so on the faulty one
    assert [scores.loc[model, "role"] for model in scores.index] == sorted(
        (roles[model] for model in scores.index), key=lambda role: role == "reference"
    )
    reference, faulty = scores.loc["reference_renderer"], scores.loc["reference_renderer_faulty"]
    assert reference["level1"] >= 0.9 and reference["level2"] >= 0.9
    assert reference["coverage_level1"] > 0.5 and reference["coverage_level2"] > 0.5
    assert faulty["overall"] < reference["overall"]


def test_mlflow_holds_params_metrics_and_report(first_run, project):
    db = project / "mlruns" / "mlflow.db"
    with sqlite3.connect(db) as conn:
        params = {k for (k,) in conn.execute("SELECT key FROM params")}
        metrics = {k for (k,) in conn.execute("SELECT key FROM metrics")}
        tags = {k for (k,) in conn.execute("SELECT key FROM tags")}
        run_names = {name for (name,) in conn.execute("SELECT name FROM runs")}
        kinds = dict(conn.execute("SELECT key, value FROM experiment_tags"))
    assert any(k.startswith("evaluate.") for k in params) and any(k.startswith("finetune.") for k in params)
    assert "finetune.train_loss" in metrics and any(k.startswith("evaluate.") for k in metrics)
    assert {"git.commit", "git.dirty"} <= tags
    # The run is named by what it did, each model's nested run by the model; the experiment is model training.
    assert {"all pipelines", "programmatic"} <= run_names and "__default__" not in run_names
    assert kinds["mlflow.experimentKind"] == "custom_model_development"
    artifacts = list((project / "mlruns" / "artifacts").rglob("*"))
    names = {p.name for p in artifacts}
    assert {"index.html", "leaderboard.csv", "pairwise.csv", "track_pass_rates.png"} <= names
    assert "evaluate.pairwise.programmatic_vs_programmatic_faulty.final.n_pairs" in metrics
    assert any(p.relative_to(p.parents[1]).as_posix() == "report/index.html" for p in artifacts)


def test_evaluate_alone_imports_no_model_library(first_run, project):
    code = (
        "import sys\n"
        "from kedro.framework.cli import main\n"
        "sys.argv = ['kedro', 'run', '--pipelines', 'evaluate']\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print('HEAVY=' + ','.join(m for m in ('torch', 'diffusers', 'transformers', 'peft') if m in sys.modules))\n"
    )
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONPATH": str(project / "src")}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "HEAVY=\n" in result.stdout
