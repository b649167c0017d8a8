"""Training data users bring to finetune: a folder of image + caption pairs, and a release folder's train split
read back as bench_select writes it (sciir.catalog.release_dataset), one row group at a time."""

from __future__ import annotations

import io
from functools import partial
from pathlib import Path

import pandas as pd
import pytest
import yaml
from PIL import Image

from sciir.catalog.optional_dataset import MissingInputError, OptionalDataset
from sciir.catalog.release_dataset import ROW_GROUP_ROWS, ReleaseFolderDataset, split_row_groups
from sciir.pipelines.finetune.nodes import collect_training_rows
from sciir.selection.benchmark import TRAIN_COLUMNS
from sciir.selection.release import IMAGE_COLUMN, Release
from sciir.user_files.training_pairs import TrainingDataError, read_pair_folder, unpack_release_train

REPO = Path(__file__).resolve().parents[2]


def png(colour: str, size: tuple[int, int] = (48, 32)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def pairs(folder: Path, captions: dict[str, str | None], suffix: str = ".png") -> Path:
    """``<name><suffix>`` images, each with ``<name>.txt`` holding its caption (none when None)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, caption in captions.items():
        (folder / f"{name}{suffix}").write_bytes(png("white"))
        if caption is not None:
            (folder / f"{name}.txt").write_text(caption, encoding="utf-8")
    return folder


def test_a_folder_of_pairs_gives_one_row_per_image_with_its_caption(tmp_path):
    folder = pairs(tmp_path / "my_pairs", {"b-cell": 'A cell, labelled "Nucleus".\n', "a-lever": "A lever."})
    (folder / "photo.jpg").write_bytes(png("red"))
    (folder / "photo.txt").write_text("A red square.")
    (folder / "notes").mkdir()  # a subfolder is not read
    rows = read_pair_folder(folder)
    assert list(rows.columns) == list(TRAIN_COLUMNS)
    assert rows.to_dict("records") == [
        {"sample_id": "a-lever", "prompt": "A lever.", "image_path": str(folder / "a-lever.png")},
        {
            "sample_id": "b-cell",
            "prompt": 'A cell, labelled "Nucleus".',
            "image_path": str(folder / "b-cell.png"),
        },
        {"sample_id": "photo", "prompt": "A red square.", "image_path": str(folder / "photo.jpg")},
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: (f / "b.txt").unlink(), r"images without a caption file <name>.txt: b.png"),
        (lambda f: (f / "c.txt").write_text("orphan"), r"captions without an image: c.txt"),
        (lambda f: (f / "b.txt").write_text("  \n"), r"empty captions: b.txt"),
        (lambda f: (f / "a.webp").write_bytes(png("blue")), r"images of one name: a.png, a.webp"),
    ],
)
def test_a_folder_that_cannot_be_used_is_refused_naming_the_files(tmp_path, change, message):
    folder = pairs(tmp_path / "pairs", {"a": "one", "b": "two"})
    change(folder)
    with pytest.raises(TrainingDataError, match=rf"training folder {folder}: .*{message}"):
        read_pair_folder(folder)


def test_an_empty_or_absent_folder_names_the_layout_and_the_parameter(tmp_path):
    with pytest.raises(TrainingDataError, match=r"does not exist \(finetune.train_data.path\)"):
        read_pair_folder(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainingDataError, match=r"holds no image \+ caption pair \(<name>\{.png, .jpg"):
        read_pair_folder(tmp_path / "empty")


def write_release(folder: Path, n_train: int) -> list[bytes]:
    """A release as bench_select writes it (ReleaseFolderDataset): train and benchmark splits; the train
    images' bytes."""
    images = [png((index * 3 % 256, 100, 200)) for index in range(n_train)]
    train = pd.DataFrame({"sample_id": [f"t{index:03d}" for index in range(n_train)]})
    train.insert(1, IMAGE_COLUMN, [partial(bytes, image) for image in images])
    train["prompt"] = [f"caption {index}" for index in range(n_train)]
    train["doi"] = "10.1/x"
    benchmark = pd.DataFrame({"sample_id": ["b0"], IMAGE_COLUMN: [partial(png, "black")], "prompt": ["b"]})
    benchmark["doi"] = "10.1/y"
    release = Release(card="# card", splits={"train": train, "benchmark": benchmark}, plots={})
    ReleaseFolderDataset(path=str(folder), rows_per_shard=ROW_GROUP_ROWS + 6).save(release)
    return images


def test_a_release_train_split_is_read_back_and_only_the_rows_trained_on_are_unpacked(tmp_path):
    images = write_release(tmp_path / "release", 2 * ROW_GROUP_ROWS + 5)  # 133 rows: shards of 70 and 63
    groups = list(split_row_groups(tmp_path / "release", "train"))
    assert [len(group) for group in groups] == [64, 6, 63]  # row groups of at most ROW_GROUP_ROWS rows
    limit = ROW_GROUP_ROWS + 10
    rows = unpack_release_train(
        split_row_groups(tmp_path / "release", "train"), tmp_path / "release", tmp_path / "unpacked", limit
    )
    assert list(rows.columns) == list(TRAIN_COLUMNS) and len(rows) == limit
    assert rows["sample_id"].tolist() == [f"t{index:03d}" for index in range(limit)]
    assert rows.loc[3, "prompt"] == "caption 3"
    assert [Path(path).read_bytes() for path in rows["image_path"]] == images[:limit]
    assert len(list((tmp_path / "unpacked").iterdir())) == limit  # nothing beyond the rows trained on


def test_a_folder_without_a_train_split_is_refused_naming_what_a_release_is(tmp_path):
    (tmp_path / "not_a_release").mkdir()
    with pytest.raises(TrainingDataError, match=r"release folder .*not_a_release has no train split"):
        unpack_release_train(
            split_row_groups(tmp_path / "not_a_release", "train"),
            tmp_path / "not_a_release",
            tmp_path / "u",
            4,
        )


@pytest.fixture
def finetune_defaults() -> dict:
    """The project's ``finetune`` parameters (conf/base/parameters_finetune.yml)."""
    return yaml.safe_load((REPO / "conf" / "base" / "parameters_finetune.yml").read_text())["finetune"]


def _node_params(finetune_defaults: dict, **train_data) -> dict:
    """The project's finetune parameters with ``train_data`` changed as ``--params`` would change it."""
    return finetune_defaults | {"train_data": {**finetune_defaults["train_data"], **train_data}}


def test_the_node_reads_the_configured_source_and_names_what_supplies_a_missing_train_split(
    tmp_path, finetune_defaults
):
    never_written = OptionalDataset(
        dataset={"type": "pandas.ParquetDataset", "filepath": str(tmp_path / "train_split.parquet")},
        written_by="bench_select",
    ).load()
    folder = pairs(tmp_path / "my_pairs", {"a": "one"})
    from_folder = collect_training_rows(
        never_written, _node_params(finetune_defaults, source="folder", path=str(folder))
    )
    assert from_folder["prompt"].tolist() == ["one"]
    write_release(tmp_path / "release", 3)
    release = {
        "source": "release",
        "path": str(tmp_path / "release"),
        "release_images": str(tmp_path / "images"),
    }
    from_release = collect_training_rows(never_written, _node_params(finetune_defaults, **release))
    assert from_release["image_path"].tolist() == [str(tmp_path / "images" / f"t00{i}.png") for i in range(3)]
    with pytest.raises(MissingInputError) as error:
        collect_training_rows(never_written, finetune_defaults)
    assert str(error.value) == (
        f"finetune: no training data: {tmp_path / 'train_split.parquet'} does not exist (written by `kedro run "
        "--pipelines bench_select`); or give a release folder or a folder of image + caption pairs with "
        "finetune.train_data.source=release (or folder),finetune.train_data.path=FOLDER"
    )


@pytest.mark.parametrize(
    ("train_data", "message"),
    [
        ({"source": "folder", "path": None}, "train_data.source is 'folder' but train_data.path is not set"),
        ({"path": "my_pairs"}, "set train_data.source=release or folder"),
        ({"source": "kohya"}, "train_data.source"),
    ],
)
def test_train_data_settings_that_do_not_fit_are_refused(tmp_path, finetune_defaults, train_data, message):
    with pytest.raises(Exception, match=message):
        collect_training_rows(pd.DataFrame(), _node_params(finetune_defaults, **train_data))
