"""A Kedro dataset of a dataset release (``sciir.selection.release.Release``) written as a folder that
``datasets.load_dataset`` reads.

The folder holds the dataset card (``README.md``, whose YAML header names the splits' files), one or more
parquet shards per split under ``data/`` (``<split>-00000-of-00002.parquet``) with each image's PNG bytes
in an ``image`` column, and the card's plots under ``plots/``. The shards carry the column types in the
schema metadata Hugging Face ``datasets`` reads (``huggingface`` -> ``info.features``), so ``image``
loads as an image and every other column as text or a number. A shard is written in row groups of
``ROW_GROUP_ROWS`` rows, each group's images read only when it is written, so memory holds one group's
images whatever the size of the release or of a shard. Each save replaces the folder's contents: the
MLflow artifact kedro-mlflow logs from it is this release and no earlier one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from kedro.io import AbstractDataset

from sciir.selection.release import IMAGE_COLUMN, Release

CARD = "README.md"
ROW_GROUP_ROWS = 64  # rows (with their images, about 1 MB each at 1024 px) made and written at a time
ARROW_TYPES = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}


def _features(table: pd.DataFrame) -> dict[str, Any]:
    """Hugging Face feature types of a split's columns: the image, numbers, flags, text."""
    features: dict[str, Any] = {}
    for label, dtype in table.dtypes.items():
        name = cast(str, label)  # a split's columns are named by text
        if name == IMAGE_COLUMN:
            features[name] = {"_type": "Image"}
        elif pd.api.types.is_bool_dtype(dtype) or str(dtype) == "boolean":
            features[name] = {"dtype": "bool", "_type": "Value"}
        elif pd.api.types.is_integer_dtype(dtype):
            features[name] = {"dtype": "int64", "_type": "Value"}
        elif pd.api.types.is_float_dtype(dtype):
            features[name] = {"dtype": "float64", "_type": "Value"}
        else:
            features[name] = {"dtype": "string", "_type": "Value"}
    return features


def _arrow_shard(rows: pd.DataFrame, features: dict[str, Any]) -> pa.Table:
    """Rows of a shard: images made now (PNG bytes with their file name), the other columns as they are."""
    columns: dict[str, pa.Array] = {}
    for name, feature in features.items():
        if name == IMAGE_COLUMN:
            makers: list[Callable[[], bytes]] = list(rows[name])
            names = [f"{sample}.png" for sample in rows["sample_id"]]
            images = [{"bytes": make(), "path": path} for make, path in zip(makers, names, strict=True)]
            columns[name] = pa.array(images, type=pa.struct([("bytes", pa.binary()), ("path", pa.string())]))
        else:
            values = [None if pd.isna(value) else value for value in rows[name]]
            if feature["dtype"] == "string":
                values = [None if value is None else str(value) for value in values]
            columns[name] = pa.array(values, type=ARROW_TYPES[feature["dtype"]])
    metadata = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    return pa.table(columns).replace_schema_metadata(metadata)


def write_shard(rows: pd.DataFrame, features: dict[str, Any], path: Path) -> None:
    """One parquet shard of ``rows``, a row group of at most ``ROW_GROUP_ROWS`` rows at a time (an empty
    shard keeps its schema)."""
    writer: pq.ParquetWriter | None = None
    try:
        for start in range(0, max(len(rows), 1), ROW_GROUP_ROWS):
            group = _arrow_shard(rows.iloc[start : start + ROW_GROUP_ROWS], features)
            writer = writer or pq.ParquetWriter(path, group.schema)
            writer.write_table(group)
    finally:
        if writer is not None:
            writer.close()


def shard_names(split: str, count: int) -> list[str]:
    return [f"data/{split}-{index:05d}-of-{count:05d}.parquet" for index in range(count)]


def split_shards(root: str | Path, split: str) -> list[Path]:
    """The parquet shards of ``split`` in a release folder, in order (none when it has no such split)."""
    return sorted((Path(root) / "data").glob(f"{split}-*.parquet"))


def split_row_groups(root: str | Path, split: str) -> Iterator[pd.DataFrame]:
    """The rows of ``split``, one row group at a time (``image`` cells as ``{"bytes", "path"}``), so a
    reader of a large release holds one group's images at once."""
    for shard in split_shards(root, split):
        parquet = pq.ParquetFile(shard)
        for group in range(parquet.num_row_groups):
            yield parquet.read_row_group(group).to_pandas()


class ReleaseFolderDataset(AbstractDataset[Release, Release]):
    """A release folder at ``path`` (local), at most ``rows_per_shard`` rows a parquet shard."""

    def __init__(
        self, *, path: str, rows_per_shard: int = 500, metadata: dict[str, Any] | None = None
    ) -> None:
        # ``_path``: the attribute kedro-mlflow's MlflowArtifactDataset logs as a folder artifact.
        self._path = str(path)
        self._rows_per_shard = rows_per_shard
        self.metadata = metadata

    def save(self, data: Release) -> None:
        root = Path(self._path)
        if root.exists():
            shutil.rmtree(root)
        (root / "data").mkdir(parents=True)
        for split, table in data.splits.items():
            features = _features(table)
            count = max(1, -(-len(table) // self._rows_per_shard))
            for index, name in enumerate(shard_names(split, count)):
                rows = table.iloc[index * self._rows_per_shard : (index + 1) * self._rows_per_shard]
                write_shard(rows, features, root / name)
        for name, content in data.plots.items():
            (root / "plots").mkdir(exist_ok=True)
            (root / "plots" / name).write_bytes(content)
        (root / CARD).write_text(data.card)

    def load(self) -> Release:
        root = Path(self._path)
        splits: dict[str, list[pd.DataFrame]] = {}
        for shard in sorted((root / "data").glob("*.parquet")):
            splits.setdefault(shard.name.split("-")[0], []).append(pd.read_parquet(shard))
        plots = {path.name: path.read_bytes() for path in sorted((root / "plots").glob("*"))}
        tables = {split: pd.concat(parts, ignore_index=True) for split, parts in splits.items()}
        return Release(card=(root / CARD).read_text(), splits=tables, plots=plots)

    def _describe(self) -> dict[str, Any]:
        return {"path": self._path, "rows_per_shard": self._rows_per_shard}
