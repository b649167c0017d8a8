"""SciIR's own release into a benchmark file: the ``benchmark`` and ``checklists`` tables as bench_select
and annotate write them (docs/data_contract.md), e.g. from a ``dvc pull``-ed ``data/`` folder.

Each benchmark row becomes one sample with its group, its prompt under its setting, its required
tracks, and its checklist questions with their layer, track (the category), expected text, parent ids
and polarity, in the tables' order. Checklist rows of samples outside the benchmark (the train split)
are left out; so is a benchmark sample without a question. ``term_count``, ``plan``, ``kind`` and
``about`` have no place in the benchmark file: judging an image does not use them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import SupportsInt, cast

import pandas as pd

from sciir.user_files.benchmark_file import POLARITIES, FileQuestion, Sample
from sciir.user_files.importers.common import Imported, ImportFileError, Skipped, checked_sample_id, id_text
from sciir.user_files.table_files import TableFile, id_list, is_missing

# Where the tables are in a release folder, a data/ folder, or a project checkout (conf/base/catalog.yml).
BENCHMARK_PLACES = (
    "benchmark.parquet",
    "05_model_input/benchmark.parquet",
    "data/05_model_input/benchmark.parquet",
)
CHECKLIST_PLACES = (
    "checklists.parquet",
    "04_feature/checklists.parquet",
    "data/04_feature/checklists.parquet",
)
RELEASE_BENCHMARK_COLUMNS = ("sample_id", "group", "setting", "tracks", "prompt")
RELEASE_CHECKLIST_COLUMNS = ("sample_id", "question_id", "layer", "track", "question", "parent_ids")


def release_table(folder: Path, places: Sequence[str]) -> Path:
    """The first of ``places`` under ``folder`` that exists; an error naming the places looked at."""
    for place in places:
        if (folder / place).is_file():
            return folder / place
    if not folder.is_dir():
        raise ImportFileError(f"release folder {folder} does not exist")
    raise ImportFileError(f"release folder {folder}: no {places[0]} (looked for {', '.join(places)})")


def import_release(folder: str | Path) -> Imported:
    """The samples of a release folder's benchmark and checklists tables."""
    folder = Path(folder)
    benchmark_file = TableFile(release_table(folder, BENCHMARK_PLACES), "release benchmark")
    checklist_file = TableFile(release_table(folder, CHECKLIST_PLACES), "release checklists")
    benchmark = benchmark_file.read(RELEASE_BENCHMARK_COLUMNS)
    checklists = checklist_file.read(RELEASE_CHECKLIST_COLUMNS)
    _refuse_bad_cells(benchmark_file, benchmark, checklist_file, checklists)
    imported = Imported()
    questions_of = {str(sample_id): rows for sample_id, rows in checklists.groupby("sample_id", sort=False)}
    for index, row in benchmark.iterrows():
        # a table read from a file keeps its RangeIndex: a row's label is an int
        line = benchmark_file.row(int(cast(SupportsInt, index)))
        where = f"{benchmark_file.label}, {line} (sample {row['sample_id']!r})"
        rows = questions_of.pop(str(row["sample_id"]), None)
        if rows is None:
            imported.skipped.append(Skipped(where, f"no question in {checklist_file.path}"))
            continue
        imported.samples.append(_sample(where, row, [_question(question) for _, question in rows.iterrows()]))
    for sample_id, rows in questions_of.items():
        where = f"{checklist_file.label}, {checklist_file.row(int(rows.index[0]))} (sample {sample_id!r})"
        imported.skipped.append(Skipped(where, f"{len(rows)} questions of a sample outside the benchmark"))
    return imported


def _refuse_bad_cells(
    benchmark_file: TableFile, benchmark: pd.DataFrame, checklist_file: TableFile, checklists: pd.DataFrame
) -> None:
    """Errors naming the file, rows and column of cells the benchmark file cannot hold."""
    benchmark_file.refuse(benchmark, "sample_id", lambda value: not is_missing(value), "a sample id")
    repeated = benchmark["sample_id"].duplicated(keep=False)
    if repeated.any():
        raise benchmark_file.bad_cells(benchmark, repeated, "sample_id", "each sample once")
    benchmark_file.refuse(
        benchmark, "tracks", lambda value: id_list(value) is not None, "a JSON list of tracks"
    )
    checklist_file.refuse(
        checklists,
        "parent_ids",
        lambda value: is_missing(value) or id_list(value) is not None,
        "a JSON list of ids",
    )
    checklist_file.refuse(checklists, "layer", lambda value: value in (1, 2), "1 (exact text) or 2")
    if "polarity" in checklists.columns:
        checklist_file.refuse(
            checklists,
            "polarity",
            lambda value: is_missing(value) or value in POLARITIES,
            "positive or negative",
        )


def _sample(where: str, row: pd.Series, questions: list[FileQuestion]) -> Sample:
    return Sample(
        where=where,
        sample_id=checked_sample_id(where, "sample_id", id_text(row["sample_id"])),
        group=str(row["group"]),
        prompts={str(row["setting"]): str(row["prompt"])},
        tracks=tuple(id_list(row["tracks"]) or ()),
        questions=tuple(questions),
    )


def _question(row: pd.Series) -> FileQuestion:
    expected = row.get("expected_text")
    polarity = row.get("polarity")
    return FileQuestion(
        id=id_text(row["question_id"]),
        text=str(row["question"]),
        layer=int(row["layer"]),
        category=str(row["track"]),
        expected_text=None if is_missing(expected) else str(expected),
        parent_ids=tuple(id_list(row["parent_ids"]) or ()),
        polarity="positive" if is_missing(polarity) else str(polarity),
    )
