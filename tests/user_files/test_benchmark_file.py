"""A benchmark brought from a file: JSONL and its table equivalents read into evaluate's two tables,
settings expanded into items, free group / setting / category names, and errors that say where."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sciir.runs.results_folder import results_folder
from sciir.user_files.benchmark_file import BenchmarkFileError, read_benchmark_file

INCLINE = {
    "sample_id": "incline-01",
    "group": "mechanics",
    "prompts": {"plain": "Draw a block on an incline.", "reasoning": "Draw the forces on a resting block."},
    "questions": [
        {"id": "q1", "text": 'Is "F_N" spelled exactly?', "expected_text": "F_N"},
        {"id": "q2", "text": "Does the normal force point away?", "category": "forces", "parent_ids": ["q1"]},
        {"id": "q3", "text": "Is a force drawn twice?", "category": "forces", "polarity": "negative"},
    ],
}
CIRCUIT = {
    "sample_id": "circuit-02",
    "prompt": "Draw R1 and R2 in series.",
    "questions": [{"id": "q1", "text": "Are R1 and R2 in series?", "layer": 2, "track": "topology"}],
}


def write_jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_jsonl_becomes_one_item_per_setting_with_the_checklist_of_its_sample(tmp_path):
    tables = read_benchmark_file(write_jsonl(tmp_path / "physics.v2.jsonl", INCLINE, CIRCUIT))
    assert tables.name == "physics"
    benchmark = tables.benchmark.set_index("sample_id")
    assert list(benchmark.index) == ["incline-01__plain", "incline-01__reasoning", "circuit-02"]
    assert benchmark.loc["incline-01__reasoning", "prompt"] == "Draw the forces on a resting block."
    assert benchmark.loc["incline-01__plain", "setting"] == "plain"
    assert benchmark.loc["circuit-02", ["group", "setting"]].tolist() == ["all", "default"]
    assert json.loads(benchmark.loc["incline-01__plain", "tracks"]) == ["forces"]
    checklists = tables.checklists
    assert (checklists["sample_id"] == "incline-01__reasoning").sum() == 3
    first = checklists[checklists["sample_id"] == "incline-01__plain"].set_index("question_id")
    assert first.loc["q1", ["layer", "track", "kind", "expected_text"]].tolist() == [1, "text", "text", "F_N"]
    assert first.loc["q2", ["layer", "track", "polarity"]].tolist() == [2, "forces", "positive"]
    assert json.loads(first.loc["q2", "parent_ids"]) == ["q1"]
    assert first.loc["q3", "polarity"] == "negative"
    circuit = checklists[checklists["sample_id"] == "circuit-02"].iloc[0]
    assert (circuit["layer"], circuit["track"]) == (2, "topology")


def test_a_table_holds_the_same_benchmark_as_the_jsonl(tmp_path):
    from_jsonl = read_benchmark_file(write_jsonl(tmp_path / "b.jsonl", INCLINE, CIRCUIT))
    rows = []
    for record in (INCLINE, CIRCUIT):
        prompts = record.get("prompts") or {}
        for question in record["questions"]:
            rows.append(
                {
                    "sample_id": record["sample_id"],
                    "group": record.get("group"),
                    "prompt": record.get("prompt"),
                    **{f"prompt:{setting}": text for setting, text in prompts.items()},
                    "question_id": question["id"],
                    "question": question["text"],
                    "layer": question.get("layer"),
                    "category": question.get("category", question.get("track")),
                    "expected_text": question.get("expected_text"),
                    "parent_ids": json.dumps(question.get("parent_ids", [])),
                    "polarity": question.get("polarity"),
                }
            )
    pd.DataFrame(rows).to_csv(tmp_path / "b.csv", index=False)
    pd.DataFrame(rows).to_parquet(tmp_path / "b.parquet")
    for name in ("b.csv", "b.parquet"):
        from_table = read_benchmark_file(tmp_path / name)
        pd.testing.assert_frame_equal(from_table.benchmark, from_jsonl.benchmark)
        pd.testing.assert_frame_equal(from_table.checklists, from_jsonl.checklists)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: not JSON"),
        ('{"sample_id": "a", "prompt": "p", "questions": []}', "line 2, field 'questions'"),
        (
            '{"sample_id": "../a", "prompt": "p", "questions": [{"id": "q", "text": "t"}]}',
            "cannot name an image",
        ),
        ('{"sample_id": "a", "questions": [{"id": "q", "text": "t"}]}', "line 2, field 'prompt'"),
        (
            '{"sample_id": "a", "prompt": "p", "questions": [{"id": "q", "text": "t", "parent_ids": ["x"]}]}',
            "question 'q', field 'parent_ids': ['x'] are not questions of this sample",
        ),
        ('{"sample_id": "a", "prompt": "p", "questions": [{"id": "q", "text": "t", "layer": 3}]}', "'layer'"),
        (
            '{"sample_id": "circuit-02", "prompt": "p", "questions": [{"id": "q", "text": "t"}]}',
            "already used",
        ),
    ],
)
def test_errors_name_the_file_the_line_and_the_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(CIRCUIT) + "\n" + line + "\n")
    with pytest.raises(BenchmarkFileError) as error:
        read_benchmark_file(path)
    assert str(path) in str(error.value) and message in str(error.value)


def test_a_table_whose_rows_of_one_sample_disagree_is_refused(tmp_path):
    rows = pd.DataFrame(
        {
            "sample_id": ["a", "a"],
            "prompt": ["one prompt", "another prompt"],
            "question_id": ["q1", "q2"],
            "question": ["t1", "t2"],
        }
    )
    rows.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(BenchmarkFileError, match="column 'prompt': its rows disagree"):
        read_benchmark_file(tmp_path / "b.csv")


def test_results_of_another_benchmark_other_images_or_a_verdicts_file_go_to_their_own_folder():
    assert results_folder("", "", "", "data/08_reporting") == "data/08_reporting"
    assert (
        results_folder("/x/physics.jsonl", "", "", "data/08_reporting")
        == "data/08_reporting/benchmarks/physics"
    )
    assert (
        results_folder("", "/home/me/my_images", "", "data/07_model_output")
        == "data/08_reporting/benchmarks/sciir_bench/my_images"
    )
    assert (
        results_folder("", "", "answers.csv", "data/08_reporting")
        == "data/08_reporting/benchmarks/sciir_bench/verdicts_answers"
    )
    assert (
        results_folder("physics.jsonl", "", "/tmp/theirs.parquet", "data/08_reporting/metrics")
        == "data/08_reporting/benchmarks/physics/verdicts_theirs"
    )
