"""Importers: a statement-checklist benchmark, TIFA and DSG question files and SciIR's own release, each
converted by the command line into a benchmark file that evaluate's reader reads back with the questions,
categories, parent ids and prompts of the source; errors name the file, the item and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sciir.benchmark_import import SHOWN_SKIPPED, main
from sciir.evaluation.aggregation import dsg_score, tifa_score
from sciir.tasks.annotation import CHECKLIST_COLUMNS
from sciir.user_files.benchmark_file import BenchmarkTables, read_benchmark_file
from sciir.user_files.rating_files import tifa_verdicts

TIFA_RELEASE = Path(__file__).resolve().parents[2] / ".." / "shared" / "external" / "human_ratings" / "tifa"


def convert(capsys, format_name: str, source: Path, *options: str) -> tuple[BenchmarkTables, str]:
    """The benchmark file the command writes, as evaluate reads it, and the summary it printed."""
    output = source.parent / "converted.jsonl"
    assert main([format_name, str(source), "-o", str(output), *options]) == 0
    return read_benchmark_file(output), capsys.readouterr().out


def failure(capsys, format_name: str, source: Path) -> str:
    """The error line of a conversion that must fail."""
    assert main([format_name, str(source), "-o", str(source.parent / "out.jsonl")]) == 1
    return capsys.readouterr().err


def write_json(path: Path, content: object) -> Path:
    path.write_text(json.dumps(content), encoding="utf-8")
    return path


# ---- statements

INCLINE = {
    "id": "incline-01",
    "prompt": "Draw a block resting on a 30° incline with its weight W, normal force N and friction f.",
    "subject": "mechanics",
    "reference_image": "images/incline-01.png",
    "checklist": [
        "The block rests on the inclined surface.",
        "The normal force N is perpendicular to the incline.",
        "Is the friction force f drawn up the slope?",
    ],
    "quizzes": [
        {
            "question": "What angle does the incline make with the horizontal?",
            "options": ["A. 15°", "B. 30°", "C. 45°"],
            "answer": "B",
        },
        {
            "question": "Which force balances the weight along the slope?",
            "options": ["N", "f"],
            "answer": "W",
        },
    ],
}
LENS = {
    "item_id": "lens-02",
    "caption": "Draw a converging lens forming a real image of an object placed beyond 2F.",
    "statements": [
        {"statement": "Rays from the object meet behind the lens", "category": "optics"},
        {"text": ""},
    ],
    "quiz": {
        "question": "Is the image upright or inverted?",
        "choices": {"a": "upright", "b": "inverted"},
        "answer": "(b)",
    },
}
EMPTY = {"id": "circuit-03", "prompt": "Draw a battery and a bulb.", "requirements": []}


def test_statements_become_yes_no_questions_and_each_quiz_one_question(tmp_path, capsys, questions_of):
    tables, printed = convert(
        capsys, "statements", write_json(tmp_path / "items.json", [INCLINE, LENS, EMPTY])
    )

    benchmark = tables.benchmark.set_index("sample_id")
    assert list(benchmark.index) == ["incline-01", "lens-02"]
    assert benchmark.loc["lens-02", "prompt"] == LENS["caption"]
    assert benchmark.loc["incline-01", "group"] == "mechanics" and benchmark.loc["lens-02", "group"] == "all"
    assert json.loads(benchmark.loc["incline-01", "tracks"]) == ["quiz", "statement"]
    incline = questions_of(tables, "incline-01")
    assert incline["question"].to_dict() == {
        "s1": "Does the image satisfy: The block rests on the inclined surface?",
        "s2": "Does the image satisfy: The normal force N is perpendicular to the incline?",
        "s3": "Is the friction force f drawn up the slope?",
        "quiz1": 'Judging from the image, is the answer to "What angle does the incline make with the '
        'horizontal?" "30°"?',
    }
    assert incline["track"].to_dict() == {
        "s1": "statement",
        "s2": "statement",
        "s3": "statement",
        "quiz1": "quiz",
    }
    assert set(incline["layer"]) == {2} and set(incline["parent_ids"]) == {"[]"}
    lens = questions_of(tables, "lens-02")
    assert lens["track"].to_dict() == {"s1": "optics", "quiz1": "quiz"}
    assert lens.loc["quiz1", "question"].endswith('"inverted"?')
    assert "samples: 2, benchmark items: 2, questions: 6 (optics 1, quiz 2, statement 3)" in printed
    assert "skipped: 3" in printed
    assert "item 1 (id 'incline-01'), quiz 2: answer 'W' is not one of its options ['N', 'f']" in printed
    assert "item 2 (id 'lens-02'), statement 2: no statement text" in printed
    assert "item 3 (id 'circuit-03'): no statements and no quizzes" in printed


def test_statement_categories_are_configurable_and_jsonl_scoring_points_read(tmp_path, capsys, questions_of):
    exam = {
        "uid": 7,
        "instruction": "Draw resistors R1 and R2 in series with a 9 V battery.",
        "domain": "electricity",
        "scoring_points": [{"question": "Are R1 and R2 drawn in series?", "score": 2}],
        "mcq": [
            {"question": "How many resistors are drawn?", "choices": ["1", "2", "3"], "correct_answer": 1}
        ],
    }
    source = tmp_path / "exam.jsonl"
    source.write_text(json.dumps(exam) + "\n\n", encoding="utf-8")

    tables, _ = convert(capsys, "statements", source, "--category", "circuit", "--quiz-category", "count")

    questions = questions_of(tables, "7")
    assert questions["question"].to_dict() == {
        "s1": "Are R1 and R2 drawn in series?",
        "quiz1": 'Judging from the image, is the answer to "How many resistors are drawn?" "2"?',
    }
    assert questions["track"].to_dict() == {"s1": "circuit", "quiz1": "count"}
    assert tables.benchmark.iloc[0][["group", "setting"]].tolist() == ["electricity", "default"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([{"id": "a", "checklist": ["x"]}], ["item 1 (id 'a')", "no field 'prompt'"]),
        (
            [{"id": "a", "prompt": "p", "checklist": "x"}],
            ["field 'checklist'", "expected a list of statements"],
        ),
        ([{"id": "a/b", "prompt": "p", "checklist": ["x"]}], ["field 'id'", "cannot name an image file"]),
        ([{"prompt": "p", "checklist": ["x"]}], ["item 1:", "no field 'id'"]),
        (
            [{"id": "a", "prompt": "p", "checklist": ["x"]}, {"id": "a", "prompt": "q", "checklist": ["y"]}],
            ["item 2 (id 'a')", "already used at", "item 1"],
        ),
        (
            [{"id": "a", "prompt": "p", "checklist": [], "quizzes": [{"options": ["x"], "answer": "x"}]}],
            ["quiz 1", "'question'"],
        ),
        ({"rows": []}, ["expected a JSON list of items", "'items' or 'data'"]),
    ],
)
def test_a_statements_file_that_cannot_be_read_is_refused_naming_file_item_and_field(
    tmp_path, capsys, content, expected
):
    source = write_json(tmp_path / "bad.json", content)
    error = failure(capsys, "statements", source)
    assert f"statements file {source}" in error
    for fragment in expected:
        assert fragment in error


def test_a_long_list_of_skipped_items_goes_to_a_file_named_in_the_summary(tmp_path, capsys):
    items = [{"id": f"empty-{n}", "prompt": "p", "checklist": []} for n in range(SHOWN_SKIPPED + 2)]
    source = write_json(tmp_path / "items.json", [*items, {"id": "kept", "prompt": "p", "checklist": ["x"]}])
    _, printed = convert(capsys, "statements", source)
    listing = tmp_path / "converted.skipped.txt"
    assert f"and 2 more (all listed in {listing})" in printed
    assert len(listing.read_text().splitlines()) == SHOWN_SKIPPED + 2


def test_the_output_must_be_a_benchmark_file(tmp_path):
    with pytest.raises(SystemExit):
        main(["statements", str(tmp_path / "items.json"), "-o", str(tmp_path / "out.json")])


# ---- TIFA


def tifa_row(
    caption_id: str, caption: str, question: str, choices: list[str], answer: str, element_type: str
):
    return {
        "id": caption_id,
        "caption": caption,
        "question": question,
        "choices": choices,
        "answer": answer,
        "element_type": element_type,
        "element": question.split()[-1].rstrip("?"),
    }


def test_tifa_questions_keep_yes_no_questions_and_rewrite_the_others(tmp_path, capsys, questions_of):
    cats = "two cats sleeping on a red sofa"
    rows = [
        tifa_row("drawbench_12", cats, "are there cats?", ["yes", "no"], "yes", "animal/human"),
        tifa_row("drawbench_12", cats, "how many cats are there?", ["1", "2", "3", "4"], "2", "counting"),
        tifa_row("drawbench_12", cats, "what color is the sofa?", ["red", "blue"], "red", "color"),
        tifa_row("drawbench_12", cats, "are the cats awake?", ["yes", "no"], "no", "activity"),
        tifa_row("drawbench_12", cats, "is the sofa green?", ["yes", "no"], "maybe", "color"),
        tifa_row("drawbench_12", cats, "are there cats?", ["yes", "no"], "yes", "animal/human"),
        tifa_row("coco_7", "a kite above a beach", "is there a kite?", ["yes", "no"], "yes", "object"),
    ]
    tables, printed = convert(capsys, "tifa", write_json(tmp_path / "tifa.json", rows))

    benchmark = tables.benchmark.set_index("sample_id")
    assert benchmark["prompt"].to_dict() == {"drawbench_12": cats, "coco_7": "a kite above a beach"}
    assert benchmark["group"].to_dict() == {"drawbench_12": "drawbench", "coco_7": "coco"}
    cats_questions = questions_of(tables, "drawbench_12")
    assert cats_questions["question"].to_dict() == {
        "are there cats?": "are there cats?",
        "how many cats are there?": 'Judging from the image, is the answer to "how many cats are there?" "2"?',
        "what color is the sofa?": 'Judging from the image, is the answer to "what color is the sofa?" "red"?',
        "are the cats awake?": 'Judging from the image, is the answer to "are the cats awake?" "no"?',
    }
    assert cats_questions["track"].tolist() == ["animal/human", "counting", "color", "activity"]
    assert "answer 'maybe' is not one of its choices ['yes', 'no']" in printed
    assert "question 'are there cats?' repeats one of its caption" in printed


def test_tifa_rows_of_one_caption_must_agree_on_it(tmp_path, capsys):
    rows = [
        tifa_row("coco_7", "a kite above a beach", "is there a kite?", ["yes", "no"], "yes", "object"),
        tifa_row("coco_7", "a kite above a lake", "is there a lake?", ["yes", "no"], "yes", "location"),
    ]
    error = failure(capsys, "tifa", write_json(tmp_path / "tifa.json", rows))
    assert "item 2, field 'caption'" in error and "differs from" in error and "item 1" in error


@pytest.mark.skipif(not TIFA_RELEASE.is_dir(), reason="../shared/external/human_ratings/tifa not present")
def test_tifa_published_sample_questions_import_and_join_tifa_own_answers(capsys, tmp_path):
    source = TIFA_RELEASE / "sample_question_answers.json"
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    tables, _ = convert(capsys, "tifa", copy)

    published = json.loads(source.read_text())
    per_caption = pd.Series([row["id"] for row in published]).value_counts().to_dict()
    assert tables.checklists["sample_id"].value_counts().to_dict() == per_caption
    multiple_choice = sum(1 for row in published if row["choices"] != ["yes", "no"])
    assert tables.checklists["question"].str.startswith("Judging from the image").sum() == multiple_choice
    # TIFA's own VQA answers (its result file) name the same questions, so they join the imported checklist.
    answers = tifa_verdicts(source, TIFA_RELEASE / "sample_evaluation_result.json")
    joined = answers.merge(tables.checklists, on=["sample_id", "question_id"], how="left", indicator=True)
    assert (joined["_merge"] == "both").all() and len(joined) == len(published)


# ---- DSG

DSG_ROWS = [
    # item_id, text, proposition_id, dependency, category_broad, question_natural_language
    ("whoops_5", "A rubik's cube with purple squares", 1, "0", "entity", "Is there a rubik's cube?"),
    ("whoops_5", "A rubik's cube with purple squares", 2, "1", "attribute", "Are the squares purple?"),
    ("whoops_5", "A rubik's cube with purple squares", 3, "1", "entity", "Does the cube have squares?"),
    ("vrd_57", "bench near trees", 1, "0", "entity", "Is there a bench?"),
    ("vrd_57", "bench near trees", 2, "0", "entity", "Are there trees?"),
    ("vrd_57", "bench near trees", 3, "1,2", "relation", "Is the bench near the trees?"),
    ("vrd_57", "bench near trees", 4, "3,9", "relation", "Is the bench in the shade of the trees?"),
]


def write_dsg(path: Path) -> Path:
    columns = [
        "item_id",
        "text",
        "proposition_id",
        "dependency",
        "category_broad",
        "question_natural_language",
    ]
    table = pd.DataFrame(DSG_ROWS, columns=columns).assign(keywords="", category_detailed="", tuple="")
    if path.suffix == ".jsonl":
        records = table.assign(dependency=[[int(p) for p in d.split(",")] for d in table["dependency"]])
        path.write_text(records.to_json(orient="records", lines=True), encoding="utf-8")
    else:
        table.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("name", ["dsg-1k-anns.csv", "dsg.jsonl"])
def test_dsg_dependencies_become_parent_ids_that_the_dsg_rule_follows(tmp_path, capsys, name, questions_of):
    tables, printed = convert(capsys, "dsg", write_dsg(tmp_path / name))

    benchmark = tables.benchmark.set_index("sample_id")
    assert benchmark["prompt"].to_dict() == {
        "whoops_5": "A rubik's cube with purple squares",
        "vrd_57": "bench near trees",
    }
    assert benchmark["group"].to_dict() == {"whoops_5": "whoops", "vrd_57": "vrd"}
    bench = questions_of(tables, "vrd_57")
    assert bench["parent_ids"].map(json.loads).to_dict() == {"1": [], "2": [], "3": ["1", "2"], "4": ["3"]}
    assert bench["track"].to_dict() == {"1": "entity", "2": "entity", "3": "relation", "4": "relation"}
    assert bench.loc["3", "question"] == "Is the bench near the trees?"
    assert "proposition 4 on 9: not another question of its item; the dependency is dropped" in printed

    # The cube is missing: DSG fails its children whatever their own answers, TIFA's mean does not.
    verdicts = tables.checklists[tables.checklists["sample_id"] == "whoops_5"].assign(
        verdict=lambda table: table["question_id"].map({"1": "no", "2": "yes", "3": "yes"})
    )
    assert tifa_score(verdicts) == pytest.approx(2 / 3)
    assert dsg_score(verdicts) == 0.0


def test_a_dsg_file_without_its_columns_is_refused_naming_the_field(tmp_path, capsys):
    source = tmp_path / "dsg.csv"
    pd.DataFrame(
        {"item_id": ["vrd_1"], "text": ["a bench"], "question_natural_language": ["Is there a bench?"]}
    ).to_csv(source, index=False)
    error = failure(capsys, "dsg", source)
    assert f"DSG file {source}, line 2" in error and "'proposition_id'" in error


# ---- SciIR's release

BENCHMARK = pd.DataFrame(
    {
        "sample_id": ["fig1-06dc57f0-p0", "fig2-424776ab-p0", "fig3-00000000-p0"],
        "group": ["Entity_Law", "All_Three", "Law_Process"],
        "setting": ["instruction_following", "intrinsic_reasoning", "intrinsic_reasoning"],
        "tracks": ['["entity", "law"]', '["entity", "process", "law"]', '["law", "process"]'],
        "term_count": [6, 9, 4],
        "prompt": ["Draw a voltage divider with R1 and R2.", "Show how water is treated.", "Show decay."],
        "plan": ['{"labels": ["R1", "R2"], "edges": []}', '{"labels": [], "edges": []}', "{}"],
    }
)
CHECKLISTS = pd.DataFrame(
    [
        (
            "fig1-06dc57f0-p0",
            "L1-01",
            1,
            "text",
            "text",
            "positive",
            '["R1"]',
            'Is "R1" spelled exactly?',
            "R1",
            "[]",
        ),
        (
            "fig1-06dc57f0-p0",
            "L2-entity-01",
            2,
            "entity",
            "entity",
            "positive",
            '["R1"]',
            "Is R1 a resistor?",
            None,
            "[]",
        ),
        (
            "fig1-06dc57f0-p0",
            "L2-entity-02",
            2,
            "entity",
            "entity",
            "negative",
            '["R1"]',
            "Is R1 drawn once only?",
            None,
            '["L2-entity-01"]',
        ),
        (
            "fig1-06dc57f0-p0",
            "L2-law-01",
            2,
            "law",
            "law",
            "positive",
            '["V = I R"]',
            "Does V = I R hold?",
            None,
            "[]",
        ),
        (
            "fig2-424776ab-p0",
            "L2-process-01",
            2,
            "process",
            "relation",
            "positive",
            "[]",
            "Is there an arrow?",
            None,
            "[]",
        ),
        (
            "fig9-train000-p0",
            "L1-01",
            1,
            "text",
            "text",
            "positive",
            '["x"]',
            'Is "x" spelled exactly?',
            "x",
            "[]",
        ),
    ],
    columns=list(CHECKLIST_COLUMNS),
)


@pytest.mark.parametrize("layout", ["project", "data", "flat"])
def test_the_release_tables_round_trip_through_the_benchmark_file(tmp_path, capsys, layout):
    root = {"project": tmp_path, "data": tmp_path / "data", "flat": tmp_path / "data" / "release"}[layout]
    benchmark_dir = root if layout == "flat" else tmp_path / "data" / "05_model_input"
    checklist_dir = root if layout == "flat" else tmp_path / "data" / "04_feature"
    for folder in (benchmark_dir, checklist_dir):
        folder.mkdir(parents=True, exist_ok=True)
    BENCHMARK.to_parquet(benchmark_dir / "benchmark.parquet")
    CHECKLISTS.to_parquet(checklist_dir / "checklists.parquet")
    output = tmp_path / "sciir.jsonl"
    assert main(["release", str(root), "-o", str(output)]) == 0
    printed = capsys.readouterr().out
    tables = read_benchmark_file(output)

    kept = ["sample_id", "group", "setting", "tracks", "prompt"]
    assert tables.benchmark[kept].equals(BENCHMARK[kept].iloc[:2])
    columns = [
        "sample_id",
        "question_id",
        "layer",
        "track",
        "polarity",
        "question",
        "expected_text",
        "parent_ids",
    ]
    assert tables.checklists[columns].equals(CHECKLISTS[columns].iloc[:5])
    assert "sample 'fig3-00000000-p0'): no question in" in printed
    assert "sample 'fig9-train000-p0'): 1 questions of a sample outside the benchmark" in printed


def test_a_release_folder_without_its_tables_or_with_bad_cells_is_refused(tmp_path, capsys):
    error = failure(capsys, "release", tmp_path)
    assert f"release folder {tmp_path}: no benchmark.parquet" in error and "05_model_input" in error

    BENCHMARK.assign(tracks=["entity", "[]", "[]"]).to_parquet(tmp_path / "benchmark.parquet")
    CHECKLISTS.to_parquet(tmp_path / "checklists.parquet")
    error = failure(capsys, "release", tmp_path)
    assert f"release benchmark {tmp_path / 'benchmark.parquet'}, column 'tracks'" in error
    assert "row 1: 'entity'" in error


# ---- the examples docs/bring_your_own_benchmark.md shows (the documented commands convert the same files)


def test_the_documented_examples_convert_as_the_page_says(tmp_path, capsys, questions_of, documented_example):
    converted = {}
    for format_name, name in [
        ("statements", "diagram_statements.json"),
        ("tifa", "tifa_questions.json"),
        ("dsg", "dsg_questions.csv"),
    ]:
        (tmp_path / name).write_text(documented_example(name), encoding="utf-8")
        converted[format_name], printed = convert(capsys, format_name, tmp_path / name)
        assert "skipped: 0" in printed

    statements = converted["statements"]
    assert questions_of(statements, "incline-01").loc["quiz1", "question"].endswith('"f"?')
    assert questions_of(statements, "lens-02")["track"].to_dict() == {"s1": "rays", "s2": "statement"}
    prism = questions_of(converted["tifa"], "partiprompt_41")
    assert prism["question"].str.startswith("Judging from the image").tolist() == [False, True, False]
    ramp = questions_of(converted["dsg"], "physics_3")
    assert ramp["parent_ids"].map(json.loads).to_dict() == {"1": [], "2": [], "3": ["1", "2"], "4": ["1"]}
    assert converted["dsg"].benchmark["group"].tolist() == ["physics"]
