"""Where a run on other inputs writes, and the settings that decide it: generate's images for a benchmark file
in their own folder, where evaluate finds them; scoping settings given in a conf file are named."""

from __future__ import annotations

import pytest

from sciir.runs.results_folder import benchmarks_apart, generated_folder, settings_outside_command_line


def test_generate_and_evaluate_on_one_benchmark_file_share_its_folder():
    assert generated_folder("", "", "data/07_model_output", "data/07_model_output") == "data/07_model_output"
    scoped = "data/07_model_output/benchmarks/physics"
    assert generated_folder("physics.jsonl", "", "data/07_model_output", "data/07_model_output") == scoped
    assert generated_folder("", "/x/physics.csv", "data/07_model_output", "data/07_model_output") == scoped
    assert generated_folder("a/physics.jsonl", "b/physics.jsonl", "x", "data/07_model_output") == scoped
    assert (
        generated_folder("physics.jsonl", "", "data/08_reporting/metrics", "data/08_reporting")
        == "data/08_reporting/benchmarks/physics"
    )
    with pytest.raises(ValueError, match=r"generate.benchmark \(physics.jsonl\) and evaluate.benchmark "):
        generated_folder("physics.jsonl", "chem.jsonl", "x", "y")


def test_a_run_that_would_judge_another_benchmarks_images_is_named():
    assert benchmarks_apart({}, {}) is None
    assert benchmarks_apart({"benchmark": "physics.jsonl"}, {"benchmark": "physics.jsonl"}) is None
    # evaluate judges a folder of the user's images or a verdicts file: generate's images are not read
    assert benchmarks_apart({}, {"benchmark": "physics.jsonl", "images_dir": "mine"}) is None
    assert benchmarks_apart({}, {"benchmark": "physics.jsonl"}) == (
        "generate draws sciir_bench (generate.benchmark) and evaluate judges the images drawn for physics "
        "(evaluate.benchmark): give both the same benchmark, or run generate and evaluate apart"
    )
    assert "generate draws physics" in benchmarks_apart({"benchmark": "physics.jsonl"}, {})


def test_scoping_settings_from_a_conf_file_are_named_by_section():
    runtime = {"evaluate": {"benchmark": "physics.jsonl"}}
    assert settings_outside_command_line("evaluate", {"benchmark": "physics.jsonl"}, runtime) == []
    assert settings_outside_command_line("generate", {"benchmark": "physics.jsonl"}, runtime) == [
        "generate.benchmark"
    ]
    assert settings_outside_command_line("evaluate", {"images_dir": "mine"}, {}) == ["evaluate.images_dir"]
