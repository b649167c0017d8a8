"""Example files the documentation names, written into the project where the documented commands expect them.

Run by the documented-commands test inside its shell session, right before the first command that
names the file, once the default run has produced what they are made from:

- ``ratings.csv`` (docs/review.md, "Human ratings from a file"): two raters for every image the oracle rated:
  ``alice`` gives the oracle's score, ``bob`` one point more or less by turns (kept on the 1-5 scale);
- ``my_images`` (docs/judge.md, "Evaluating your own images"): the ``programmatic`` model's generated
  images in the documented layout ``my_images/<model>/<sample_id>.png``;
- ``answers.csv`` (docs/evaluate.md, "Verdicts from another system"): the default run's verdicts as
  another system's file (model, sample_id, question_id, verdict, parent_ids);
- ``physics.jsonl`` (docs/bring_your_own_benchmark.md): the JSON example of that page, one sample per
  line, so the documented example is the file the documented command reads (docs/review.md's checklist
  review reviews it too);
- ``physics_images`` (same page): model ``mine``'s images of that benchmark, each with the labels its
  prompt asks for drawn in a box, ``lever__reasoning`` without "Fulcrum";
- ``diagram_statements.json``, ``tifa_questions.json``, ``dsg_questions.csv``, ``diagram_elements.json``
  and its field map ``diagram_fields.yml``, ``prompts.txt`` (same page, "Importers"): the example the
  page shows right after naming the file, so the documented example is what the documented import
  command converts.
- ``aibench_papers.jsonl`` (same page, "AIBench's published file"): the papers the page shows spread out,
  one a line, as AIBench publishes them;
- ``aibench_images`` (same page): model ``mine``'s drawings of those papers (their quoted labels in
  boxes) and the papers' own figures in ``reference/``, named by the imported sample ids;
- ``review_queue.reviewed.csv`` (docs/review.md, "Curate's decisions from a file"): the default run's
  review queue as a person gives it back: every row decided, KEEP but the first spot check, REJECT.
- ``metric_scores.csv`` (docs/human_corr.md, "Both from files"): another system's scores in the documented
  layout (image_id, metric, score): the default run's final score per image under each aggregation rule;
- ``my_pairs`` (docs/finetune.md, "Training data"): a folder of image + caption pairs, the first four
  train samples' curated images (``<sample_id>.png``) beside their prompts (``<sample_id>.txt``).

Usage: ``python doc_fixtures.py <name>`` from the project root.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd


def write_ratings(root: Path) -> None:
    oracle = pd.read_parquet(root / "data" / "08_reporting" / "ratings.parquet")
    alice = oracle.assign(rater_id="alice")
    shift = [1 if index % 2 else -1 for index in range(len(oracle))]
    bob = oracle.assign(rater_id="bob", score=(oracle["score"] + shift).clip(1, 5))
    pd.concat([alice, bob])[["image_id", "rater_id", "score"]].to_csv(root / "ratings.csv", index=False)


def copy_images(root: Path) -> None:
    source = root / "data" / "07_model_output" / "generations" / "programmatic"
    shutil.copytree(source, root / "my_images" / "programmatic", dirs_exist_ok=True)


def write_answers(root: Path) -> None:
    verdicts = pd.read_parquet(root / "data" / "07_model_output" / "verdicts.parquet")
    columns = ["model", "sample_id", "question_id", "verdict", "parent_ids"]
    verdicts[columns].to_csv(root / "answers.csv", index=False)


def json_objects(block: str) -> list[dict]:
    """The JSON objects written one after another in ``block``, each spread over any number of lines."""
    decoder, objects, position = json.JSONDecoder(), [], 0
    while block[position:].strip():
        position += len(block[position:]) - len(block[position:].lstrip())
        found, position = decoder.raw_decode(block, position)
        objects.append(found)
    return objects


def documented_samples(root: Path) -> list[dict]:
    """The JSON objects of the first ``json`` block of docs/bring_your_own_benchmark.md."""
    text = (root / "docs" / "bring_your_own_benchmark.md").read_text(encoding="utf-8")
    return json_objects(text.split("```json\n", 1)[1].split("```", 1)[0])


def write_benchmark(root: Path) -> None:
    lines = (json.dumps(sample) + "\n" for sample in documented_samples(root))
    (root / "physics.jsonl").write_text("".join(lines), encoding="utf-8")


PHYSICS_LABELS = {
    "lever__plain": "Effort Fulcrum Load",
    "lever__reasoning": "Effort Load",
    "circuit": "Resistor",
}


def draw_physics_images(root: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    folder = root / "physics_images" / "mine"
    folder.mkdir(parents=True, exist_ok=True)
    font = ImageFont.load_default(size=48)
    for sample_id, labels in PHYSICS_LABELS.items():
        image = Image.new("RGB", (900, 600), "white")
        draw = ImageDraw.Draw(image)
        draw.rectangle((40, 220, 860, 360), outline="black", width=4)
        draw.text((70, 260), labels, fill="black", font=font)
        image.save(folder / f"{sample_id}.png")


def documented_example(root: Path, name: str) -> str:
    """The fenced block of docs/bring_your_own_benchmark.md after the line that ends by naming ``name``."""
    lines = (root / "docs" / "bring_your_own_benchmark.md").read_text(encoding="utf-8").splitlines()
    named = next(i for i, line in enumerate(lines) if line.rstrip().endswith(f"`{name}`:"))
    fences = [i for i in range(named + 1, len(lines)) if lines[i].startswith("```")][:2]
    return "\n".join(lines[fences[0] + 1 : fences[1]]) + "\n"


def example_writer(name: str) -> Callable[[Path], None]:
    """A fixture writing the page's example ``name`` into the project."""

    def write(root: Path) -> None:
        (root / name).write_text(documented_example(root, name), encoding="utf-8")

    return write


IMPORTER_EXAMPLES = (
    "diagram_statements.json",
    "tifa_questions.json",
    "dsg_questions.csv",
    "diagram_elements.json",
    "diagram_fields.yml",
    "prompts.txt",
)
# Examples the page spreads over lines, written one JSON object a line as the format has them.
JSONL_EXAMPLES = ("aibench_papers.jsonl",)


def documented_jsonl(root: Path, name: str) -> str:
    """The page's example ``name``, one JSON object a line."""
    return "".join(json.dumps(item) + "\n" for item in json_objects(documented_example(root, name)))


def jsonl_writer(name: str) -> Callable[[Path], None]:
    def write(root: Path) -> None:
        (root / name).write_text(documented_jsonl(root, name), encoding="utf-8")

    return write


AIBENCH_FIGURES = {  # sample id -> (mine's labels, the paper's own figure's labels)
    "CVPR_2025__2506.00001v1": ("Image Encoder   Fusion Module", "Image Encoder   Fusion Module"),
    "ICLR_2025__2501.00002v2": ("Planner   Renderer", "Planning: Planner   Rendering: Renderer"),
}


def draw_aibench_images(root: Path) -> None:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=40)
    for sample_id, labels in AIBENCH_FIGURES.items():
        for model, text in zip(("mine", "reference"), labels, strict=True):
            image = Image.new("RGB", (1100, 400), "white")
            draw = ImageDraw.Draw(image)
            draw.rectangle((40, 140, 1060, 260), outline="black", width=4)
            draw.text((70, 175), text, fill="black", font=font)
            (root / "aibench_images" / model).mkdir(parents=True, exist_ok=True)
            image.save(root / "aibench_images" / model / f"{sample_id}.png")


def write_reviewed_queue(root: Path) -> None:
    queue = pd.read_csv(root / "data" / "03_primary" / "review_queue.csv", dtype=str, keep_default_na=False)
    queue["decision"] = "KEEP"
    spot_checks = queue.index[queue["queue"] == "spot_check"]
    if len(spot_checks):
        queue.loc[spot_checks[0], ["decision", "note"]] = ["REJECT", "not a scientific image"]
    queue.to_csv(root / "review_queue.reviewed.csv", index=False)


def write_metric_scores(root: Path) -> None:
    scores = pd.read_parquet(root / "data" / "08_reporting" / "sample_scores.parquet")
    final = scores[scores["track"] == "final"]
    table = pd.DataFrame(
        {
            "image_id": final["model"] + "/" + final["sample_id"],
            "metric": final["aggregation"] + ".final",
            "score": final["score"],
        }
    )
    table.to_csv(root / "metric_scores.csv", index=False)


def write_pairs(root: Path) -> None:
    train = pd.read_parquet(root / "data" / "05_model_input" / "train_split.parquet").head(4)
    folder = root / "my_pairs"
    folder.mkdir(exist_ok=True)
    for sample_id, prompt, image_path in train[["sample_id", "prompt", "image_path"]].itertuples(index=False):
        shutil.copyfile(root / image_path, folder / f"{sample_id}.png")
        (folder / f"{sample_id}.txt").write_text(prompt, encoding="utf-8")


FIXTURES: dict[str, Callable[[Path], None]] = {
    "ratings.csv": write_ratings,
    "my_images": copy_images,
    "answers.csv": write_answers,
    "review_queue.reviewed.csv": write_reviewed_queue,
    "physics.jsonl": write_benchmark,
    "physics_images": draw_physics_images,
    **{name: example_writer(name) for name in IMPORTER_EXAMPLES},
    **{name: jsonl_writer(name) for name in JSONL_EXAMPLES},
    "aibench_images": draw_aibench_images,
    "metric_scores.csv": write_metric_scores,
    "my_pairs": write_pairs,
}

if __name__ == "__main__":
    FIXTURES[sys.argv[1]](Path.cwd())
