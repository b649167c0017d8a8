"""Image files checked before: what a verified read found, remembered by path, size and modification time.

A rerun of a model-calling stage asks again about the same image files. The response cache keys a request
by the sha256 of its images, so without a memory of the files each one would be read, checked and hashed
again only to learn that its answer is cached. :class:`KnownFiles` keeps, for each local file sent as its
own bytes, its format, pixel size and sha256, in a table beside the response cache (same SQLite file),
keyed by the file's absolute path, size and modification time: a file written since has another key.

:func:`payload_or_known` gives a request's image: a :class:`KnownPayload` (sha256 known, bytes not read)
for a remembered file within the backend's limits, else the payload read and checked as
``sciir.images.payload.payload`` does (remembered when sent as its own bytes). :func:`with_image` turns a
request made without its image into one that the response cache makes, reading the file, only on a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sciir.backends.base import Deferred, VLMRequest
from sciir.backends.cache import ResponseCache
from sciir.images.payload import (
    ImageFile,
    ImageLimits,
    Payload,
    UnreadableImageFile,
    converted_payload,
    make_payload,
    own_payload,
)

KNOWN_FILES_TABLE = "image_files"


@dataclass(frozen=True)
class FileFacts:
    """What a verified read of a file found: it is whole, 8-bit in a plain mode, in ``format``."""

    format: str
    size: tuple[int, int]
    sha256: str

    def fits(self, limits: ImageLimits) -> bool:
        """Whether the file's own bytes can be sent under ``limits``."""
        return self.format in limits.formats and (
            limits.max_side is None or max(self.size) <= limits.max_side
        )


@dataclass(frozen=True)
class KnownPayload:
    """A remembered file's payload before its bytes are read: ``facts`` hold its sha256."""

    handle: ImageFile
    facts: FileFacts

    @property
    def sha256(self) -> str:
        return self.facts.sha256

    def read(self) -> Payload:
        """The file's bytes, checked to be those remembered; UnreadableImageFile when they are not."""
        data = self.handle.read()
        if hashlib.sha256(data).hexdigest() != self.facts.sha256:
            raise UnreadableImageFile(
                self.handle.name,
                "its content changed after it was checked (size and time unchanged); run again",
            )
        return make_payload(data, self.facts.format, self.facts.size, self.facts.sha256)


class KnownFiles:
    """File facts by ``<absolute path>|<size>|<modification time ns>`` in a key-value ``store``.

    Facts learnt are written in batches (every ``batch`` files, on :meth:`flush` and when a ``with``
    block ends): losing the last ones to a killed process costs only reading those files again.
    """

    def __init__(self, store: ResponseCache, batch: int = 256) -> None:
        self.store, self.batch = store, batch
        self._pending: dict[str, bytes] = {}

    @classmethod
    def beside(cls, cache_file: Path | None) -> KnownFiles | None:
        """The facts kept beside a model's response cache, in its file ``cache_file``; None for a model
        without one (its requests are sent every time, so knowing a file's sha256 before reading it saves
        nothing)."""
        return cls(ResponseCache(cache_file, KNOWN_FILES_TABLE)) if cache_file is not None else None

    @staticmethod
    def stamp(handle: ImageFile) -> str | None:
        """The key of a local file as it is now; None for bytes in memory, a remote path or no file."""
        if handle.data is not None or handle.path is None or "://" in handle.path:
            return None
        try:
            stat = os.stat(handle.path)
        except OSError:
            return None
        return f"{os.path.abspath(handle.path)}|{stat.st_size}|{stat.st_mtime_ns}"

    @staticmethod
    def facts_of(own: Payload) -> FileFacts:
        """What to remember of a file whose own bytes ``own`` were checked."""
        return FileFacts(own.format, own.size, own.sha256)

    def recall(self, handles: Mapping[str, ImageFile], limits: ImageLimits) -> dict[str, KnownPayload]:
        """Name -> known payload of the ``handles`` whose files are remembered as they are now and fit
        ``limits`` (one query for all of them, and the facts not written yet)."""
        stamps = {
            name: stamp for name, handle in handles.items() if (stamp := self.stamp(handle)) is not None
        }
        found = self.store.get_many(list(stamps.values())) | self._pending
        known: dict[str, KnownPayload] = {}
        for name, stamp in stamps.items():
            if (value := found.get(stamp)) is not None:
                fields = json.loads(value)
                facts = FileFacts(fields["format"], tuple(fields["size"]), fields["sha256"])
                if facts.fits(limits):
                    known[name] = KnownPayload(handles[name], facts)
        return known

    def remember(self, stamp: str, facts: FileFacts) -> None:
        self._pending[stamp] = json.dumps(
            {"format": facts.format, "size": facts.size, "sha256": facts.sha256}
        ).encode()
        if len(self._pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Write the facts learnt since the last write."""
        pending, self._pending = self._pending, {}
        self.store.put_many(pending)

    def __enter__(self) -> KnownFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


def checked_payload(handle: ImageFile, limits: ImageLimits, known: KnownFiles | None) -> Payload:
    """The payload of ``handle`` (``sciir.images.payload.payload``), remembered in ``known`` when it is
    the file's own bytes. UnreadableImageFile naming the file when it cannot be read."""
    stamp = known.stamp(handle) if known is not None else None  # before reading: a file written meanwhile
    data = handle.read()  # gets a new stamp, so it is never remembered as the one checked here
    own = own_payload(data, handle.name, limits)
    if own is None:
        return converted_payload(data, handle.name, limits)
    if known is not None and stamp is not None:
        known.remember(stamp, known.facts_of(own))
    return own


def payload_or_known(
    handle: ImageFile, limits: ImageLimits, known: KnownFiles | None
) -> Payload | KnownPayload:
    """A remembered file's :class:`KnownPayload`, else its :func:`checked_payload`."""
    remembered = known.recall({handle.name: handle}, limits) if known is not None else {}
    return remembered.get(handle.name) or checked_payload(handle, limits, known)


def with_image(request: VLMRequest, image: Payload | KnownPayload) -> VLMRequest | Deferred[VLMRequest]:
    """``request`` (made without images) carrying ``image``: at once when its bytes are in hand, else
    deferred until a cache miss makes it read them."""
    if isinstance(image, KnownPayload):
        return request.with_images_later([image.sha256], lambda: [image.read()])
    return request.model_copy(update={"images": [image]})
