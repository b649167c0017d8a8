"""A Kedro dataset of one image file that loads a lazy handle (``sciir.images.payload.ImageFile``).

Loading reads nothing: a model request gets the file's own bytes through ``image_payload.payload`` and
a consumer that needs pixels calls ``.image()`` (or ``sciir.evaluation.generated_images.open_image``). Saving takes
a decoded image (encoded in the format of the file's suffix, PNG by default), bytes already encoded, or
a handle, so the generate and curate pipelines write through it as they wrote through
``pillow.ImageDataset``. It is the inner dataset of the image folders' ``PartitionedDataset``;
:class:`ImageFolderDataset` is such a folder that exists after every save, even of no image (and loads
as an empty mapping then), and that writes an :class:`EncodedImage` partition's bytes as they are, where
a ``pillow.ImageDataset`` folder gets the decoded image it saves.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from kedro.io import AbstractDataset, DatasetError
from kedro_datasets.partitions import PartitionedDataset

from sciir.images.payload import ImageFile, encode

if TYPE_CHECKING:
    from PIL import Image


def _suffix_format(filepath: str) -> str:
    """The Pillow format a file's suffix names (PNG when it names none)."""
    from PIL import Image

    return Image.registered_extensions().get(PurePosixPath(filepath).suffix.lower(), "PNG")


def file_bytes(data: Any, filepath: str) -> bytes:
    """What is written for ``data``: a handle's or bytes' own bytes, or a decoded image encoded."""
    if isinstance(data, ImageFile):
        return data.read()
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    return encode(data, _suffix_format(filepath))


class ImageFileDataset(AbstractDataset[Any, ImageFile]):
    """One image file at ``filepath`` (any fsspec path): loads an :class:`ImageFile`, saves images or bytes."""

    def __init__(self, *, filepath: str, metadata: dict[str, Any] | None = None) -> None:
        self._filepath = filepath
        self.metadata = metadata

    def load(self) -> ImageFile:
        return ImageFile.at(self._filepath)

    def save(self, data: Any) -> None:
        import fsspec

        content = file_bytes(data, self._filepath)
        filesystem, path = fsspec.core.url_to_fs(self._filepath)
        filesystem.makedirs(filesystem._parent(path), exist_ok=True)
        filesystem.pipe_file(path, content)

    def _exists(self) -> bool:
        import fsspec

        filesystem, path = fsspec.core.url_to_fs(self._filepath)
        return bool(filesystem.isfile(path))

    def _describe(self) -> dict[str, Any]:
        return {"filepath": self._filepath}


@dataclass(frozen=True)
class EncodedImage:
    """An image partition of encoded bytes (a generated PNG): called, the decoded image, as a lazy partition
    of any image folder is; :class:`ImageFolderDataset` writes ``data`` itself, never decoding and encoding
    it again (about 0.2 s for a 1024 px PNG)."""

    data: bytes = field(repr=False)

    def __call__(self) -> Image.Image:
        from PIL import Image

        return Image.open(io.BytesIO(self.data))


class ImageFolderDataset(PartitionedDataset):
    """A ``PartitionedDataset`` of image files that creates its folder on every save, so a stage that drew
    nothing (a generation switched off) still leaves the folder its DVC ``outs`` promise, and loads that
    folder back as no image: an empty mapping, not the ``No partitions found`` error of Kedro's class (an
    absent folder still raises it). ``exists()`` stays Kedro's (some partition), so an ``OptionalDataset``
    of an empty folder loads as a ``MissingInput``."""

    def load(self) -> dict[str, Callable[[], Any]]:
        try:
            return super().load()
        except DatasetError:
            # A stage that kept nothing (curate rejecting every panel) saved it empty: its result, read as such.
            if not self._list_partitions() and self._filesystem.isdir(self._normalized_path):
                return {}
            raise

    def save(self, data: dict[str, Any]) -> None:
        super().save(
            {key: value.data if isinstance(value, EncodedImage) else value for key, value in data.items()}
        )
        self._filesystem.makedirs(self._normalized_path, exist_ok=True)
