"""Importers for any layout: a field map (``--field ROLE=FIELD``, ``--fields map.yml``) names the fields a file
gives the id, the prompt, the statements, the quiz answer...; the same benchmark converts alike from JSON,
JSON Lines, CSV and parquet; a missing field is named with the fields the item has and the option that maps
one; statements that ask for quoted text add layer-1 text checks."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest

from sciir.benchmark_import import main
from sciir.user_files.benchmark_file import BenchmarkTables, read_benchmark_file

# A diagram benchmark in the layout of issue 24's: the prompt is `question`, the statements `elements`,
# the quiz answer `correct_option`.
DIAGRAMS = [
    {
        "id": "d001",
        "question": "Draw the energy diagram of an exothermic reaction, titled Energy diagram.",
        "elements": [
            'The title reads "Energy diagram".',
            "The products lie below the reactants.",
            "The y-axis is labelled 'Energy (kJ)'.",
        ],
        "quizzes": [
            {"question": "Is the reaction exothermic?", "options": ["A. Yes", "B. No"], "correct_option": "A"}
        ],
        "source_figure": "figures/d001.png",
    },
    {
        "id": "d002",
        "question": "Draw an animal cell with its nucleus, and a point labelled A on the membrane.",
        "elements": ["The cell's nucleus is drawn at the centre.", "The point is labelled 'A'."],
        "quizzes": [
            {
                "question": "Where is point A?",
                "options": ["On the nucleus", "On the membrane"],
                "correct_option": "B",
            }
        ],
        "source_figure": "figures/d002.png",
    },
    {
        "id": "d003",
        "question": "Draw the so-called black box model of a system.",
        "elements": ['The so-called "black box" is a grey rectangle.', "An arrow enters it from the left."],
        "quizzes": [],
        "source_figure": "figures/d003.png",
    },
]
MAP = ["--field", "prompt=question", "--field", "statements=elements", "--field", "answer=correct_option"]


def convert(source: Path, *options: str) -> BenchmarkTables:
    output = source.parent / f"{source.stem}.converted.jsonl"
    assert main(["statements", str(source), "-o", str(output), *options]) == 0
    return read_benchmark_file(output)


def failure(capsys, format_name: str, source: Path, *options: str) -> str:
    assert main([format_name, str(source), "-o", str(source.parent / "out.jsonl"), *options]) == 1
    return capsys.readouterr().err


def write(path: Path) -> Path:
    """DIAGRAMS in the format ``path``'s suffix names: JSON cells in a CSV, list columns in parquet."""
    if path.suffix == ".json":
        path.write_text(json.dumps(DIAGRAMS), encoding="utf-8")
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(item) + "\n" for item in DIAGRAMS), encoding="utf-8")
    elif path.suffix == ".csv":
        table = pd.DataFrame(DIAGRAMS)
        table[["elements", "quizzes"]] = table[["elements", "quizzes"]].map(json.dumps)
        table.to_csv(path, index=False)
    else:
        pd.DataFrame(DIAGRAMS).to_parquet(path)
    return path


def write_reference(tmp_path: Path) -> Path:
    """DIAGRAMS as JSON in a folder of its own: what every other format must convert to."""
    (tmp_path / "reference").mkdir(exist_ok=True)
    return write(tmp_path / "reference" / "diagrams.json")


def test_the_layout_is_refused_naming_the_fields_it_has_and_the_options_that_map_them(tmp_path, capsys):
    source = write(tmp_path / "diagrams.json")
    error = failure(capsys, "statements", source)
    assert f"statements file {source}, item 1 (id 'd001'): no field 'prompt' (or 'caption'" in error
    assert "no field 'checklist' (or 'statements'" in error
    assert "item 1 has fields: id, question, elements, quizzes, source_figure" in error
    assert "map them with --field prompt=<name> --field statements=<name>" in error

    error = failure(
        capsys, "statements", source, "--field", "prompt=question", "--field", "statements=elements"
    )
    assert "item 1 (id 'd001'), quiz 1: no field 'answer' (or 'correct_answer', 'correct')" in error
    assert "quiz 1 has fields: question, options, correct_option; map one with --field answer=<name>" in error


@pytest.mark.parametrize("name", ["diagrams.json", "diagrams.jsonl", "diagrams.csv", "diagrams.parquet"])
def test_the_layout_converts_alike_from_every_format_with_its_field_map(tmp_path, capsys, name, questions_of):
    reference = convert(write_reference(tmp_path), *MAP)
    tables = convert(write(tmp_path / name), *MAP)
    capsys.readouterr()

    pd.testing.assert_frame_equal(tables.benchmark, reference.benchmark)
    pd.testing.assert_frame_equal(tables.checklists, reference.checklists)
    assert tables.benchmark.set_index("sample_id")["prompt"].to_dict() == {
        item["id"]: item["question"] for item in DIAGRAMS
    }
    energy = questions_of(tables, "d001")
    assert energy["question"].to_dict() == {
        "s1": 'Does the image satisfy: The title reads "Energy diagram"?',
        "s1-text1": 'Is the text "Energy diagram" rendered with exactly this spelling?',
        "s2": "Does the image satisfy: The products lie below the reactants?",
        "s3": "Does the image satisfy: The y-axis is labelled 'Energy (kJ)'?",
        "s3-text1": 'Is the text "Energy (kJ)" rendered with exactly this spelling?',
        "quiz1": 'Judging from the image, is the answer to "Is the reaction exothermic?" "Yes"?',
    }
    assert energy.loc["s1-text1", ["layer", "track", "kind", "expected_text"]].tolist() == [
        1,
        "text",
        "text",
        "Energy diagram",
    ]
    assert questions_of(tables, "d002")["expected_text"].dropna().tolist() == ["A"]
    assert questions_of(tables, "d002").loc["quiz1", "question"].endswith('"On the membrane"?')
    assert questions_of(tables, "d003")["layer"].tolist() == [2, 2]  # scare quotes add no text check


def test_every_role_of_a_statements_file_can_be_mapped(tmp_path, capsys, questions_of):
    # DIAGRAMS with every role under a name of its own: id, prompt, group, statements (each one an object
    # whose statement is under a name of its own too), quizzes, their question, options and answer.
    renamed = [
        {
            "figure_key": item["id"],
            "question": item["question"],
            "discipline": "chemistry" if item["id"] == "d001" else "biology",
            "elements": [{"claim": element} for element in item["elements"]],
            "mc": [
                {
                    "stem": quiz["question"],
                    "answers": quiz["options"],
                    "correct_option": quiz["correct_option"],
                }
                for quiz in item["quizzes"]
            ],
        }
        for item in DIAGRAMS
    ]
    source = tmp_path / "renamed.json"
    source.write_text(json.dumps(renamed), encoding="utf-8")
    roles = {
        "id": "figure_key", "prompt": "question", "group": "discipline", "statements": "elements",
        "statement": "claim", "quizzes": "mc", "question": "stem", "options": "answers", "answer": "correct_option",
    }  # fmt: skip
    tables = convert(
        source, *[option for role, name in roles.items() for option in ("--field", f"{role}={name}")]
    )
    reference = convert(write_reference(tmp_path), *MAP)
    capsys.readouterr()
    assert tables.benchmark["sample_id"].tolist() == ["d001", "d002", "d003"]
    assert tables.benchmark["group"].tolist() == ["chemistry", "biology", "biology"]
    for sample in ("d001", "d002", "d003"):
        pd.testing.assert_frame_equal(questions_of(tables, sample), questions_of(reference, sample))


def test_a_yaml_field_map_reads_as_the_options_and_an_option_overrides_its_role(tmp_path, capsys):
    source = write(tmp_path / "diagrams.json")
    fields = tmp_path / "fields.yml"
    fields.write_text("prompt: question\nstatements: elements\nanswer: correct_option\n")
    from_options = convert(source, *MAP)
    from_file = convert(source, "--fields", str(fields))
    pd.testing.assert_frame_equal(from_file.checklists, from_options.checklists)

    fields.write_text("prompt: source_figure\nstatements: elements\nanswer: correct_option\n")
    overridden = convert(source, "--fields", str(fields), "--field", "prompt=question")
    assert overridden.benchmark["prompt"].tolist() == [item["question"] for item in DIAGRAMS]
    capsys.readouterr()


def test_a_table_with_one_statement_per_row_is_one_item_per_id(tmp_path, capsys):
    rows = [
        {
            "id": item["id"],
            "question": item["question"],
            "elements": element,
            "quizzes": json.dumps(item["quizzes"]) if number == 0 else "",
        }
        for item in DIAGRAMS
        for number, element in enumerate(item["elements"])
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "long.csv", index=False)
    tables = convert(tmp_path / "long.csv", *MAP)
    capsys.readouterr()
    reference = convert(write_reference(tmp_path), *MAP)
    pd.testing.assert_frame_equal(tables.checklists, reference.checklists)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            ["--field", "promt=question"],
            "field map: unknown role 'promt' (the roles of a statements file: id, prompt",
        ),
        (["--field", "prompt=title"], "no field 'title' (mapped to prompt); item 1 has fields: id, question"),
        (["--fields", "missing.yml"], "field map file missing.yml does not exist"),
    ],
)
def test_a_field_map_that_does_not_fit_is_refused(tmp_path, capsys, options, expected):
    source = write(tmp_path / "diagrams.json")
    assert expected in failure(capsys, "statements", source, *options, "--field", "statements=elements")


def test_a_field_map_file_must_map_roles_to_field_names(tmp_path, capsys):
    source = write(tmp_path / "diagrams.json")
    fields = tmp_path / "fields.yml"
    fields.write_text("- prompt\n- question\n")
    assert f"field map file {fields}: expected lines of 'role: field'" in failure(
        capsys, "statements", source, "--fields", str(fields)
    )
    fields.write_text("prompt: [question, title]\n")
    assert f"field map file {fields}, 'prompt': expected the name of one field" in failure(
        capsys, "statements", source, "--fields", str(fields)
    )
    with pytest.raises(SystemExit):
        main(["statements", str(source), "-o", str(tmp_path / "out.jsonl"), "--field", "prompt"])
    assert "expected ROLE=FIELD (e.g. prompt=question), got 'prompt'" in capsys.readouterr().err


def test_tifa_and_dsg_files_with_other_column_names_read_through_a_map(tmp_path, capsys, questions_of):
    dsg = pd.DataFrame(
        {
            "prompt_id": ["vrd_57", "vrd_57"],
            "prompt": ["bench near trees", "bench near trees"],
            "qid": [1, 2],
            "parents": ["0", "1"],
            "category_broad": ["entity", "relation"],
            "q": ["Is there a bench?", "Is the bench near the trees?"],
        }
    )
    dsg.to_parquet(tmp_path / "dsg.parquet")
    error = failure(capsys, "dsg", tmp_path / "dsg.parquet")
    assert (
        "row 1: no field 'item_id' and no field 'proposition_id' and no field 'question_natural_language'"
        in error
    )
    assert "map them with --field id=<name> --field question_id=<name> --field question=<name>" in error
    output = tmp_path / "dsg.jsonl"
    dsg_map = ["--field", "id=prompt_id", "--field", "question_id=qid", "--field", "parents=parents"]
    assert (
        main(["dsg", str(tmp_path / "dsg.parquet"), "-o", str(output), *dsg_map, "--field", "question=q"])
        == 0
    )
    bench = questions_of(read_benchmark_file(output), "vrd_57")
    assert bench["parent_ids"].map(json.loads).to_dict() == {"1": [], "2": ["1"]}
    assert bench.loc["2", "question"] == "Is the bench near the trees?"

    tifa = [{"caption_id": "coco_7", "caption": "a kite", "question": "is there a kite?", "answer": "yes"}]
    (tmp_path / "tifa.json").write_text(json.dumps(tifa))
    assert "map one with --field id=<name>" in failure(capsys, "tifa", tmp_path / "tifa.json")
    output = tmp_path / "tifa.jsonl"
    assert main(["tifa", str(tmp_path / "tifa.json"), "-o", str(output), "--field", "id=caption_id"]) == 0
    assert read_benchmark_file(output).checklists["question"].tolist() == ["is there a kite?"]
    capsys.readouterr()


def test_the_documented_field_map_commands_run_as_written(tmp_path, monkeypatch, capsys, documented_example):
    page = (Path(__file__).resolve().parents[2] / "docs" / "bring_your_own_benchmark.md").read_text()
    commands = [line for line in page.splitlines() if line.startswith("python -m sciir.benchmark_import")]
    mapped = [command for command in commands if "diagram_elements.json" in command]
    assert len(mapped) == 2 and any("--fields diagram_fields.yml" in command for command in mapped)
    for name in ("diagram_elements.json", "diagram_fields.yml"):
        (tmp_path / name).write_text(documented_example(name), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for command in mapped:
        assert main(shlex.split(command)[3:]) == 0
        printed = capsys.readouterr().out
        assert "samples: 2, benchmark items: 2, questions: 9 (quiz 1, statement 5, text 3)" in printed
    tables = read_benchmark_file(tmp_path / "diagram_elements.jsonl")
    assert tables.checklists["expected_text"].dropna().tolist() == ["C", "Right triangle", "Nucleus"]
