"""How a kedro run shows in the MLflow UI: its name, its experiment's kind (on a real store in tmp_path), the
page of its runs. A whole run in-process: tests/test_hooks.py."""

import pytest

from sciir.runs.mlflow_view import (
    EXPERIMENT_KIND_TAG,
    MODEL_TRAINING,
    kedro_mlflow_run_name,
    mark_model_training,
    run_name,
    runs_page,
    runs_page_text,
)


@pytest.mark.parametrize(
    ("pipelines", "evaluate", "dry_run", "name"),
    [
        (None, None, False, "all pipelines"),
        (["__default__"], {}, False, "all pipelines"),
        (["ingest", "curate"], None, False, "ingest+curate"),
        (["evaluate"], {}, False, "evaluate"),
        (["evaluate"], {"benchmark": "data/physics.jsonl", "images_dir": "physics_images"}, False,
         "evaluate physics on physics_images"),
        (["evaluate"], {"images_dir": "../shared/my_images/"}, False, "evaluate on my_images"),
        (["evaluate"], {"verdicts_file": "answers.csv", "images_dir": "ignored"}, False,
         "evaluate on verdicts answers.csv"),
        (["evaluate"], {"benchmark": "physics.jsonl", "images_dir": "physics_images"}, True,
         "evaluate physics on physics_images (dry run)"),
        (None, {"images_dir": "my_images"}, False, "all pipelines, evaluate on my_images"),
    ],
)  # fmt: skip
def test_a_run_is_named_by_what_it_runs_on_what(pipelines, evaluate, dry_run, name):
    assert run_name(pipelines, {"evaluate": evaluate} if evaluate is not None else None, dry_run) == name


@pytest.mark.parametrize(
    ("pipelines", "command_line", "name"),
    [
        (["generate"], {"generate": {"benchmark": "physics.jsonl"}}, "generate physics"),
        (["generate", "evaluate"],
         {"generate": {"benchmark": "aibench.jsonl"}, "evaluate": {"benchmark": "aibench.jsonl"}},
         "generate+evaluate, generate aibench, evaluate aibench"),
        (["finetune"], {"finetune": {"train_data": {"source": "folder", "path": "my_pairs/"}}},
         "finetune on my_pairs"),
        (["finetune"], {"finetune": {"steps": 2}}, "finetune"),
        (["human_corr"],
         {"human_corr": {"ratings": {"source": "file", "path": "data/ratings.csv"},
                         "metric_scores": {"source": "file", "path": "scores.csv"}}},
         "human_corr on ratings.csv and scores.csv"),
        (["human_corr"], {"human_corr": {"ratings": {"source": "file", "path": "ratings.csv"}}},
         "human_corr on ratings.csv"),
        # A setting that names no file or folder leaves the name to the pipelines.
        (["evaluate"], {"evaluate": {"window": 8}, "generate": "not a section"}, "evaluate"),
    ],
)  # fmt: skip
def test_every_stage_run_from_files_is_named_by_them(pipelines, command_line, name):
    assert run_name(pipelines, command_line) == name


def test_kedro_mlflow_names_a_run_by_its_pipelines():
    assert kedro_mlflow_run_name(None) == "__default__" and kedro_mlflow_run_name(["a", "b"]) == "a+b"


def test_an_experiment_without_a_kind_is_marked_as_model_training_once(mlflow_store):
    experiment_id = mlflow_store.create_experiment("sciir", tags={"note": "mine"})
    assert mark_model_training(experiment_id) and not mark_model_training(experiment_id)
    assert mlflow_store.get_experiment(experiment_id).tags == {
        EXPERIMENT_KIND_TAG: MODEL_TRAINING,
        "note": "mine",
    }


@pytest.mark.slow
def test_a_kind_chosen_before_is_kept(mlflow_store):
    experiment_id = mlflow_store.create_experiment("sciir", tags={EXPERIMENT_KIND_TAG: "genai_development"})
    assert not mark_model_training(experiment_id)
    assert mlflow_store.get_experiment(experiment_id).tags[EXPERIMENT_KIND_TAG] == "genai_development"


def test_the_runs_page_is_on_the_tracking_server_or_on_a_local_mlflow_ui():
    view = "runs?workflowType=machine_learning"
    assert (
        runs_page("https://mlflow.example.org/", "7") == f"https://mlflow.example.org/#/experiments/7/{view}"
    )
    assert runs_page("sqlite:////p/mlruns/mlflow.db", "1") == f"http://127.0.0.1:5000/#/experiments/1/{view}"


def test_the_closing_line_says_how_to_start_a_local_ui_only():
    served = runs_page_text("https://mlflow.example.org", "7", "evaluate")
    assert served == f"MLflow run 'evaluate': {runs_page('https://mlflow.example.org', '7')}"
    local = runs_page_text("sqlite:////p/mlflow.db", "1", "evaluate")
    assert local.endswith("(start the UI with: mlflow ui --backend-store-uri sqlite:////p/mlflow.db)")
