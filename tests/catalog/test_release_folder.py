"""The release folder writes each shard a row group at a time: a group's images are read only when it is
written, so memory holds one group's images however large the release."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from sciir.catalog.release_dataset import ROW_GROUP_ROWS, ReleaseFolderDataset
from sciir.selection.release import IMAGE_COLUMN, Release

IMAGE_BYTES = 20_000


def test_a_shard_is_written_in_row_groups_whose_images_are_read_as_each_is_written(tmp_path: Path) -> None:
    rows = 2 * ROW_GROUP_ROWS + 22
    folder = tmp_path / "release"
    shard = folder / "data" / "train-00000-of-00001.parquet"
    written_when_read: list[int] = []  # bytes of the shard on disk when each image was read

    def image(index: int):
        def read() -> bytes:
            written_when_read.append(shard.stat().st_size if shard.exists() else 0)
            return bytes([index % 256]) + os.urandom(IMAGE_BYTES)  # random: parquet cannot compress it

        return read

    table = pd.DataFrame({"sample_id": [f"s{i:03d}" for i in range(rows)], "score": range(rows)})
    table.insert(1, IMAGE_COLUMN, [image(i) for i in range(rows)])
    ReleaseFolderDataset(path=str(folder)).save(Release(card="# card", splits={"train": table}, plots={}))

    metadata = pq.ParquetFile(shard).metadata
    assert [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)] == [64, 64, 22]
    # The images of the second and third groups were read after the groups before them were on disk.
    assert written_when_read[ROW_GROUP_ROWS] >= ROW_GROUP_ROWS * IMAGE_BYTES
    assert written_when_read[2 * ROW_GROUP_ROWS] >= 2 * ROW_GROUP_ROWS * IMAGE_BYTES
    loaded = ReleaseFolderDataset(path=str(folder)).load().splits["train"]
    assert list(loaded["sample_id"]) == list(table["sample_id"]) and list(loaded["score"]) == list(
        range(rows)
    )
    assert [cell["bytes"][0] for cell in loaded[IMAGE_COLUMN]] == [i % 256 for i in range(rows)]


def test_an_empty_split_is_one_shard_with_its_columns(tmp_path: Path) -> None:
    table = pd.DataFrame(
        {"sample_id": pd.Series([], dtype=str), IMAGE_COLUMN: [], "score": pd.Series([], dtype=int)}
    )
    folder = tmp_path / "release"
    ReleaseFolderDataset(path=str(folder)).save(Release(card="# card", splits={"train": table}, plots={}))
    shard = pq.read_table(folder / "data" / "train-00000-of-00001.parquet")
    assert shard.num_rows == 0 and shard.column_names == ["sample_id", IMAGE_COLUMN, "score"]
