"""Example files the documentation names, written into the project where the documented commands expect them.

Run by the documented-commands test inside its shell session, right before the first command that
names the file, once the default run has produced what they are made from:

- ``ratings.csv`` (README, "Human ratings"): two raters for every image the oracle rated: ``alice``
  gives the oracle's score, ``bob`` one point more or less by turns (kept on the 1-5 scale);
- ``my_images`` (README, "Evaluating your own images"): the ``programmatic`` model's generated images
  in the documented layout ``my_images/<model>/<sample_id>.png``;
- ``answers.csv`` (docs/evaluate.md, "Verdicts from another system"): the default run's verdicts as
  another system's file (model, sample_id, question_id, verdict, parent_ids).

Usage: ``python doc_fixtures.py <name>`` from the project root.
"""

from __future__ import annotations

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


FIXTURES: dict[str, Callable[[Path], None]] = {
    "ratings.csv": write_ratings,
    "my_images": copy_images,
    "answers.csv": write_answers,
}

if __name__ == "__main__":
    FIXTURES[sys.argv[1]](Path.cwd())
