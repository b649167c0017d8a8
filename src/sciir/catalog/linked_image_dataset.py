"""An image file dataset that saves a handle on a local file already written as a hard link to it.

curate writes each standardised image once, into its shard folder, as the image is made; its node then
returns handles on those files. Saving them into ``curated_images`` as links costs neither a copy of the
bytes nor the disk space twice. Anything else (bytes, decoded images, remote paths, a filesystem that
refuses links) is written as ``sciir.catalog.image_dataset.ImageFileDataset`` writes it.
"""

from __future__ import annotations

import os
from typing import Any

from sciir.catalog.image_dataset import ImageFileDataset
from sciir.images.payload import ImageFile


def _local(path: str | None) -> bool:
    return path is not None and "://" not in path


class LinkedImageFileDataset(ImageFileDataset):
    """One image file at ``filepath``; a handle on a local file is saved as a hard link to that file."""

    def save(self, data: Any) -> None:
        target = self._filepath
        if isinstance(data, ImageFile) and data.data is None and _local(data.path) and _local(target):
            if self._link(str(data.path), target):
                return
        super().save(data)

    @staticmethod
    def _link(source: str, target: str) -> bool:
        """Hard-link ``target`` to ``source`` (replacing it); False when the filesystem cannot."""
        if os.path.exists(target) and os.path.samefile(source, target):
            return True
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
        temporary = f"{target}.link-{os.getpid()}"
        try:
            os.link(source, temporary)
        except OSError:  # another device, or links not supported: copy instead
            return False
        os.replace(temporary, target)
        return True
