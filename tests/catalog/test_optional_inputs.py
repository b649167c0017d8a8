"""OptionalDataset: a dataset that does not exist loads as a MissingInput that names what to run."""

from __future__ import annotations

import pandas as pd
import pytest

from sciir.catalog.optional_dataset import (
    MissingInput,
    MissingInputError,
    OptionalDataset,
    frame_or_empty,
    supplied,
)


def parquet(path) -> OptionalDataset:
    return OptionalDataset(
        dataset={"type": "pandas.ParquetDataset", "filepath": str(path)}, written_by="bench_select"
    )


def test_absent_data_loads_as_missing_and_any_use_names_the_file_and_the_pipeline(tmp_path):
    loaded = parquet(tmp_path / "benchmark.parquet").load()
    assert isinstance(loaded, MissingInput)
    with pytest.raises(
        MissingInputError,
        match=r"benchmark\.parquet does not exist: run `kedro run --pipelines bench_select`",
    ):
        loaded["sample_id"]
    with pytest.raises(MissingInputError, match="bench_select"):
        _ = loaded.columns
    with pytest.raises(
        MissingInputError,
        match=r"evaluate: no benchmark: .*benchmark\.parquet does not exist "
        r"\(written by `kedro run --pipelines bench_select`\); or give a file",
    ):
        supplied(loaded, "evaluate: no benchmark", "give a file")
    assert list(frame_or_empty(loaded, ("a", "b")).columns) == ["a", "b"]


def test_present_data_round_trips_through_the_wrapped_dataset(tmp_path):
    dataset = parquet(tmp_path / "benchmark.parquet")
    assert not dataset.exists()
    dataset.save(pd.DataFrame({"sample_id": ["s1"]}))
    assert dataset.exists() and dataset.load()["sample_id"].tolist() == ["s1"]


def test_an_empty_image_folder_is_missing(tmp_path):
    images = OptionalDataset(
        dataset={
            "type": "partitions.PartitionedDataset",
            "path": str(tmp_path),
            "dataset": "pillow.ImageDataset",
        },
        written_by="generate",
    )
    loaded = images.load()
    assert isinstance(loaded, MissingInput) and loaded.empty
    assert loaded.absence() == f"{tmp_path} is empty (written by `kedro run --pipelines generate`)"
    assert not parquet(tmp_path / "absent.parquet").load().empty
