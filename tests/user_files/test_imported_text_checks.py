"""An imported statements benchmark gives the offline judge questions it can judge: the text checks its quoted
labels add are answered by OCR, "yes" on images that write the labels and "no" on images given to the wrong
prompts, while the statements themselves stay unjudged (the offline judge sees no reasoning)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.offline import OfflineVLM
from sciir.benchmark_import import main
from sciir.pipelines.evaluate.nodes import judge_generations, score_verdicts
from sciir.tasks.registry import rule_book
from sciir.user_files.benchmark_file import read_benchmark_file

# Issue 24's layout: the prompt is `question`, the statements `elements`, the quiz answer `correct_option`.
ITEMS = [
    {
        "id": "energy",
        "question": "Draw the energy diagram of an exothermic reaction.",
        "elements": ['The title reads "Energy diagram".', "The products lie below the reactants."],
        "quizzes": [],
    },
    {
        "id": "motion",
        "question": "Plot the velocity of a falling ball against time.",
        "elements": ["The axis is labelled “Velocity”.", "The line rises steadily."],
        "quizzes": [],
    },
]
LABELS = {"energy": "Energy diagram", "motion": "Velocity"}
PARAMS = {"unjudged_policy": "exclude", "window": 2, "bootstrap": {"n_boot": 50}}


def draw_label(path: Path, text: str) -> None:
    """A clean figure: the label written large inside a box, as a legible label is drawn."""
    image = Image.new("RGB", (900, 500), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 180, 860, 320), outline="black", width=4)
    draw.text((80, 220), text, fill="black", font=ImageFont.load_default(size=56))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)


def test_the_offline_judge_answers_the_text_checks_of_an_imported_statements_benchmark(tmp_path, capsys):
    source = tmp_path / "diagrams.json"
    source.write_text(json.dumps(ITEMS), encoding="utf-8")
    benchmark_file = tmp_path / "diagrams.jsonl"
    fields = ["--field", "prompt=question", "--field", "statements=elements"]
    assert main(["statements", str(source), "-o", str(benchmark_file), *fields]) == 0
    assert "questions: 6 (statement 4, text 2)" in capsys.readouterr().out
    tables = read_benchmark_file(benchmark_file)
    images = tmp_path / "images"
    for sample_id, label in LABELS.items():
        draw_label(images / "right" / f"{sample_id}.png", label)
    draw_label(images / "swapped" / "energy.png", LABELS["motion"])  # each drawn for the other prompt
    draw_label(images / "swapped" / "motion.png", LABELS["energy"])

    params = PARAMS | {"images_dir": str(images)}
    judge = OfflineVLM(rule_book("offline"))
    verdicts, _ = judge_generations(tables.benchmark, tables.checklists, {}, pd.DataFrame(), judge, params)

    text = verdicts[verdicts["layer"] == 1].set_index(["model", "sample_id"])
    assert sorted(text.index) == [
        ("right", "energy"),
        ("right", "motion"),
        ("swapped", "energy"),
        ("swapped", "motion"),
    ]
    assert (text["status"] == "judged").all(), text[["verdict", "reasoning"]]
    assert text["verdict"].to_dict() == {
        ("right", "energy"): "yes",
        ("right", "motion"): "yes",
        ("swapped", "energy"): "no",
        ("swapped", "motion"): "no",
    }
    statements = verdicts[verdicts["layer"] == 2]
    assert len(statements) == 8 and statements["verdict"].isna().all()  # abstained on, never guessed

    scores = score_verdicts(verdicts, tables.benchmark, params)
    veto = scores[scores["aggregation"] == "sciir_veto"]
    text_passed = veto[veto["track"] == "text"].set_index(["model", "sample_id"])["passed"]
    assert text_passed.to_dict() == {
        ("right", "energy"): True,
        ("right", "motion"): True,
        ("swapped", "energy"): False,
        ("swapped", "motion"): False,
    }


def test_a_point_labelled_with_one_letter_is_read_by_the_second_recogniser_never_answered_absent(
    tmp_path, capsys
):
    source = tmp_path / "points.json"
    item = {
        "id": "point",
        "question": "Draw a point A on a line.",
        "elements": ["The point is labelled 'A'."],
    }
    source.write_text(json.dumps([item]), encoding="utf-8")
    benchmark_file = tmp_path / "points.jsonl"
    fields = ["--field", "prompt=question", "--field", "statements=elements"]
    assert main(["statements", str(source), "-o", str(benchmark_file), *fields]) == 0
    capsys.readouterr()
    tables = read_benchmark_file(benchmark_file)
    for model, letter in (("right", "A"), ("other", "B")):
        image = Image.new("RGB", (900, 600), "white")
        draw = ImageDraw.Draw(image)
        draw.line((50, 300, 850, 300), fill="black", width=4)
        draw.ellipse((440, 290, 460, 310), fill="black")
        draw.text((470, 220), letter, fill="black", font=ImageFont.load_default(size=56))
        (tmp_path / "images" / model).mkdir(parents=True)
        image.save(tmp_path / "images" / model / "point.png")

    params = PARAMS | {"images_dir": str(tmp_path / "images")}
    judge = OfflineVLM(rule_book("offline"))
    verdicts, _ = judge_generations(tables.benchmark, tables.checklists, {}, pd.DataFrame(), judge, params)

    text = verdicts[verdicts["question_id"] == "s1-text1"].set_index("model")
    assert text.loc["right", "verdict"] == "yes"
    # Tesseract reads no lone glyph, so its absence is not told from a reading that missed it.
    assert pd.isna(text.loc["other", "verdict"]) and "single glyph" in text.loc["other", "reasoning"]
