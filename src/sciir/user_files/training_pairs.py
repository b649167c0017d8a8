"""Training data users bring to finetune, read into the train split's rows (sample_id, prompt, image_path):

- a folder of image + caption pairs, ``<name>.png`` (or .jpg, .jpeg, .webp) beside ``<name>.txt`` holding
  its caption, the layout diffusers' and kohya's training folders use; ``<name>`` is the sample id;
- the ``train`` split of a release folder (``sciir.catalog.release_dataset``, as bench_select writes it or
  ``datasets.load_dataset`` reads it): its images, kept in the parquet shards, are written out as files
  for training, only the rows training reads (``max_train_samples``).

A folder that cannot be used is refused naming the folder, the files and the reason (an image without
its caption, a caption without its image, an empty caption, two images of one name).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from sciir.images.payload import FOLDER_IMAGE_SUFFIXES
from sciir.selection.benchmark import TRAIN_COLUMNS
from sciir.selection.release import IMAGE_COLUMN
from sciir.user_files.benchmark_file import SAFE_ID

logger = logging.getLogger(__name__)

CAPTION_SUFFIX = ".txt"
SHOWN_NAMES = 5
RELEASE_COLUMNS = ("sample_id", IMAGE_COLUMN, "prompt")


class TrainingDataError(ValueError):
    """Training data that cannot be used as it is; the message names the folder, the files and why."""


def _names(paths: Iterable[Path]) -> str:
    names = sorted(path.name for path in paths)
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return ", ".join(names[:SHOWN_NAMES]) + more


def read_pair_folder(folder: str | Path) -> pd.DataFrame:
    """The train rows of a folder of image + caption pairs (files directly in it), in name order.

    Raises:
        TrainingDataError: the folder does not exist or holds no pair, an image has no caption or a
            caption no image, a caption is empty, or two images share a name.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise TrainingDataError(f"training folder {folder} does not exist (finetune.train_data.path)")
    files = [path for path in folder.iterdir() if path.is_file()]
    images = [path for path in files if path.suffix.lower() in FOLDER_IMAGE_SUFFIXES]
    captions = {path.stem: path for path in files if path.suffix.lower() == CAPTION_SUFFIX}
    stems = pd.Series([path.stem for path in images])
    if stems.duplicated().any():
        twice = [path for path in images if stems.value_counts()[path.stem] > 1]
        raise TrainingDataError(f"training folder {folder}: images of one name: {_names(twice)}")
    problems = []
    if without := [path for path in images if path.stem not in captions]:
        problems.append(f"images without a caption file <name>{CAPTION_SUFFIX}: {_names(without)}")
    if orphans := [path for stem, path in captions.items() if stem not in set(stems)]:
        problems.append(f"captions without an image: {_names(orphans)}")
    paired = [captions[path.stem] for path in images if path.stem in captions]
    if empty := [caption for caption in paired if not _caption(caption)]:
        problems.append(f"empty captions: {_names(empty)}")
    if problems:
        raise TrainingDataError(f"training folder {folder}: " + "; ".join(problems))
    if not images:
        suffixes = ", ".join(FOLDER_IMAGE_SUFFIXES)
        raise TrainingDataError(
            f"training folder {folder} holds no image + caption pair (<name>{{{suffixes}}} beside "
            f"<name>{CAPTION_SUFFIX}, directly in the folder)"
        )
    rows = [
        {"sample_id": path.stem, "prompt": _caption(captions[path.stem]), "image_path": str(path)}
        for path in sorted(images, key=lambda path: path.stem)
    ]
    return pd.DataFrame(rows, columns=list(TRAIN_COLUMNS))


def _caption(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def unpack_release_train(
    row_groups: Iterable[pd.DataFrame], release: str | Path, folder: str | Path, limit: int
) -> pd.DataFrame:
    """The first ``limit`` rows of a release's train split (its ``row_groups``), each image written to
    ``folder/<sample_id>.png`` (the bytes as they are; the suffix of the file name the release keeps with
    them) for training.

    Raises:
        TrainingDataError: the release has no train split, lacks a column, or a row has no image bytes.
    """
    where = f"release folder {release}"
    folder = Path(folder)
    rows: list[dict[str, str]] = []
    for group in row_groups:
        if missing := [column for column in RELEASE_COLUMNS if column not in group.columns]:
            raise TrainingDataError(f"{where}: the train split lacks column(s) {missing}")
        for sample_id, image, prompt in group.loc[:, list(RELEASE_COLUMNS)].itertuples(index=False):
            if len(rows) == limit:
                break
            content = image.get("bytes") if isinstance(image, dict) else None
            if not content:
                raise TrainingDataError(f"{where}: train sample {sample_id} has no image bytes")
            if not SAFE_ID.match(str(sample_id)):
                raise TrainingDataError(f"{where}: train sample id {sample_id!r} cannot name an image file")
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{sample_id}{Path(image.get('path') or '.png').suffix or '.png'}"
            path.write_bytes(content)
            rows.append({"sample_id": str(sample_id), "prompt": str(prompt), "image_path": str(path)})
        if len(rows) == limit:
            break
    if not rows:
        raise TrainingDataError(
            f"{where} has no train split (data/train-*.parquet with rows; finetune.train_data.path names "
            "a release folder as bench_select writes it, e.g. data/05_model_input/release)"
        )
    logger.info("finetune: %d train samples of %s unpacked into %s", len(rows), where, folder)
    return pd.DataFrame(rows, columns=list(TRAIN_COLUMNS))
