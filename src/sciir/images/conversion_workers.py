"""Conversions made ahead, in worker processes: :func:`prepare_payloads` makes those that
``sciir.images.payload.payload`` will need for a set of images, only when some image needs one, and
keeps them in the payload module's conversion store for every later request in the process.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor

from sciir.images.payload import (
    STORE,
    ConversionStore,
    ImageFile,
    ImageLimits,
    Stored,
    UnreadableImageFile,
    convert_to_file,
    read_header,
    stored_path,
)

# Bytes read to tell from an image's header whether it goes as it is: PNG's IHDR and tRNS, JPEG's SOF
# and WebP's header come before the pixel data (a header further in is read in full).
HEAD_BYTES = 64 * 1024


def _head_fits(handle: ImageFile, limits: ImageLimits) -> bool:
    """Whether the start of the file already shows it can be sent as it is (False when unsure)."""
    try:
        return read_header(handle.head(HEAD_BYTES), handle.name).fits(limits)
    except UnreadableImageFile:
        return False


def prepare_payloads(
    handles: Iterable[ImageFile],
    limits: ImageLimits,
    store: ConversionStore = STORE,
    workers: int | None = None,
) -> int:
    """Make, in worker processes, the conversions that ``payload`` will need for ``handles`` (those not
    made yet); the number made. No process starts when every image is sent as it is. Unreadable images
    are left for ``payload`` to report."""
    todo: dict[tuple[str, ImageLimits], ImageFile] = {}
    for handle in handles:
        try:
            if _head_fits(handle, limits):
                continue
            data = handle.read()
            if read_header(data, handle.name).fits(limits):
                continue
        except UnreadableImageFile:
            continue
        key = (hashlib.sha256(data).hexdigest(), limits)
        if store.get(key) is None:
            todo.setdefault(key, handle)
    if not todo:
        return 0
    count = min(len(todo), workers or os.cpu_count() or 1)
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {
            key: pool.submit(_convert_file, handle, limits, stored_path(store, key))
            for key, handle in todo.items()
        }
        for key, future in futures.items():
            store.put(key, future.result())
    return len(todo)


def _convert_file(source: ImageFile, limits: ImageLimits, path: str) -> Stored | str:
    """As ``payload.convert_to_file``, reading the file in the worker (what crosses to it is a path)."""
    try:
        return convert_to_file(source.read(), source.name, limits, path)
    except UnreadableImageFile as error:
        return str(error)
