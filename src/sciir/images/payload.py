"""Image payloads: the bytes a model request carries for an image, with no needless image work.

An :class:`ImageFile` is a lazy handle on one image, a file (any fsspec path) or bytes already in
memory: it reads the file's own bytes when asked and decodes only when :meth:`ImageFile.image` is
called. :func:`payload` gives the bytes a request carries under a backend's :class:`ImageLimits`:

- the file's own bytes when their format, sniffed from the magic bytes (never the suffix), is one the
  judge accepts (PNG, JPEG, WebP, or only ``image_format`` when set), their pixels are 8-bit in a plain
  mode and the image is within ``image_max_side``. The file is checked without a decode (the header,
  then PNG chunk CRCs up to IEND, JPEG's end marker, WebP's RIFF length), so a truncated or corrupt file
  is reported, never sent;
- otherwise the image decoded, made 8-bit RGB(A), resized to ``image_max_side`` and encoded in
  ``image_format`` (PNG by default), once per image content and limits: the result is kept in a
  temporary folder for every later request of that image in the process (the judge and the AIBench
  examination send the same image). ``sciir.images.conversion_workers.prepare_payloads`` does those
  conversions up front in worker processes, only when some image needs one.

A :class:`Payload` is ``bytes`` carrying its format, size and sha256, computed once when made, so the
response cache keys every request of the image without hashing it again. An image that cannot be read
raises :class:`UnreadableImageFile` naming the file and the reason.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from sciir.images.bit_depth import eight_bit

ACCEPTED_FORMATS = ("PNG", "JPEG", "WEBP")
# The image files a folder a user hands in may hold (their own images to judge, training pairs).
FOLDER_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
MIME_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}
# Modes every judge reads as they are; anything else (16-bit, CMYK, float ...) is converted.
_PLAIN_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA"})
_ENCODE_OPTIONS: dict[str, dict[str, Any]] = {"PNG": {}, "JPEG": {"quality": 92}, "WEBP": {"quality": 92}}
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class UnreadableImageFile(ValueError):
    """An image file that cannot be read; the message names the file and the reason."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name} is not a readable image: {reason}")


@dataclass(frozen=True)
class ImageLimits:
    """What a backend accepts: ``max_side`` pixels on the longer side (None: any) and, when set, the one
    ``image_format`` it reads (else PNG, JPEG and WebP, and conversions give PNG)."""

    max_side: int | None = None
    image_format: str | None = None

    def __post_init__(self) -> None:
        if self.max_side is not None and self.max_side < 1:
            raise ValueError(f"image_max_side must be positive, got {self.max_side}")
        if self.image_format is not None and self.image_format not in ACCEPTED_FORMATS:
            raise ValueError(
                f"image_format must be one of {', '.join(ACCEPTED_FORMATS)}, got {self.image_format}"
            )

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ImageLimits:
        """The limits a backend's config sets (``image_max_side``, ``image_format``; both optional)."""
        image_format = config.get("image_format")
        return cls(config.get("image_max_side"), str(image_format).upper() if image_format else None)

    @property
    def formats(self) -> tuple[str, ...]:
        return (self.image_format,) if self.image_format else ACCEPTED_FORMATS

    @property
    def target_format(self) -> str:
        """The format a converted image is encoded in."""
        return self.image_format or "PNG"


class Payload(bytes):
    """Image bytes ready for a request, with their ``format``, pixel ``size`` and ``sha256``."""

    format: str
    size: tuple[int, int]
    sha256: str

    @property
    def mime_type(self) -> str:
        return MIME_TYPES[self.format]

    def fits(self, limits: ImageLimits) -> bool:
        """Whether these bytes can be sent as they are under ``limits``."""
        return self.format in limits.formats and (
            limits.max_side is None or max(self.size) <= limits.max_side
        )


def make_payload(data: bytes, image_format: str, size: tuple[int, int], sha256: str | None = None) -> Payload:
    made = Payload(data)
    made.format, made.size = image_format, size
    made.sha256 = sha256 or hashlib.sha256(data).hexdigest()
    return made


@dataclass(frozen=True)
class ImageFile:
    """A lazy handle on one image: a file ``path`` (any fsspec path) or ``data`` in memory; ``name``
    names it in messages."""

    name: str
    path: str | None = None
    data: bytes | None = field(default=None, repr=False)

    @classmethod
    def at(cls, path: str | os.PathLike[str]) -> ImageFile:
        return cls(name=str(path), path=str(path))

    @classmethod
    def of_bytes(cls, data: bytes, name: str = "image") -> ImageFile:
        return cls(name=name, data=data)

    @classmethod
    def of_image(cls, image: Image.Image, name: str = "image") -> ImageFile:
        """An image already decoded (a pipeline run in memory), encoded as PNG once."""
        return cls.of_bytes(encode(image, "PNG"), name)

    def read(self) -> bytes:
        """The file's own bytes; UnreadableImageFile when the file cannot be read."""
        return self.data if self.data is not None else self._read(None)

    def head(self, size: int) -> bytes:
        """The first ``size`` bytes (enough for a header check), without reading the rest."""
        return self.data[:size] if self.data is not None else self._read(size)

    def _read(self, size: int | None) -> bytes:
        """Read the file, a local one straight from disk (fsspec costs more than the read itself)."""
        try:
            if "://" not in str(self.path):
                with open(str(self.path), "rb") as file:
                    return file.read(size) if size is not None else file.read()
            import fsspec

            with fsspec.open(self.path, "rb") as file:
                return file.read(size) if size is not None else file.read()
        except OSError as error:
            raise UnreadableImageFile(self.name, f"the file cannot be read ({error})") from error

    def image(self) -> Image.Image:
        """The image fully decoded; UnreadableImageFile when it cannot be."""
        return _decoded(self.read(), self.name)


def image_file(entry: Callable[[], Any] | Any) -> ImageFile:
    """The handle an entry of an image mapping gives: a handle, a loader of one (Kedro's partitioned
    dataset), or a decoded image or a loader of one (encoded as PNG)."""
    value = entry() if callable(entry) else entry
    return value if isinstance(value, ImageFile) else ImageFile.of_image(value)


# ---- reading without decoding


def sniff_format(data: bytes) -> str | None:
    """PNG, JPEG or WEBP from the magic bytes; None for anything else."""
    if data.startswith(_PNG_SIGNATURE):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


@dataclass(frozen=True)
class Header:
    """What an image file says about itself before any pixel is decoded."""

    format: str | None  # sniffed, one of ACCEPTED_FORMATS or None
    size: tuple[int, int]
    mode: str
    deep: bool  # more than 8 bits a sample (16-bit PNG)
    transparency: bool  # a palette or grey image with a transparent colour

    def fits(self, limits: ImageLimits) -> bool:
        """Whether the file's own bytes can be sent under ``limits``."""
        plain = self.mode in _PLAIN_MODES and not self.deep and not (self.mode == "P" and self.transparency)
        small = limits.max_side is None or max(self.size) <= limits.max_side
        return self.format in limits.formats and plain and small


def read_header(data: bytes, name: str) -> Header:
    """The header of an image file (no decode); UnreadableImageFile when it is not an image."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            size, mode, transparency = image.size, image.mode, "transparency" in image.info
    except UnidentifiedImageError:
        raise UnreadableImageFile(name, "not a recognised image format") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        raise UnreadableImageFile(name, f"{type(error).__name__}: {error}") from None
    image_format = sniff_format(data)
    deep = image_format == "PNG" and len(data) > 24 and data[24] > 8  # IHDR bit depth
    return Header(image_format, size, mode, deep, transparency)


def check_complete(data: bytes, header: Header, name: str) -> None:
    """Whether the file is whole, without decoding it: PNG chunks and CRCs up to IEND (Pillow's
    ``verify``), JPEG's end-of-image marker, WebP's RIFF length. UnreadableImageFile when not."""
    if header.format == "PNG":
        try:
            with Image.open(io.BytesIO(data)) as image:
                image.verify()
        except (OSError, ValueError, SyntaxError) as error:
            raise UnreadableImageFile(name, f"corrupt or truncated PNG ({error})") from None
    elif header.format == "JPEG" and not data.rstrip(b"\0").endswith(b"\xff\xd9"):
        raise UnreadableImageFile(name, "truncated JPEG (no end-of-image marker)")
    elif header.format == "WEBP" and int.from_bytes(data[4:8], "little") + 8 > len(data):
        raise UnreadableImageFile(name, "truncated WebP (shorter than its RIFF header says)")


# ---- decoding and converting


def _decoded(data: bytes, name: str) -> Image.Image:
    """The image fully decoded; UnreadableImageFile when it cannot be."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            return image.copy()
    except UnidentifiedImageError:
        raise UnreadableImageFile(name, "not a recognised image format") from None
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        raise UnreadableImageFile(name, f"{type(error).__name__}: {error}") from None


def _eight_bit_rgb(image: Image.Image, alpha: bool) -> Image.Image:
    """The image as 8-bit RGB, or RGBA when ``alpha``; 16-bit and float grey scaled by their real value
    range, not clipped (``sciir.images.bit_depth.eight_bit``, as curate does)."""
    return eight_bit(image).convert("RGBA" if alpha else "RGB")


def encode(image: Image.Image, image_format: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=image_format, **_ENCODE_OPTIONS.get(image_format, {}))
    return buffer.getvalue()


def converted(data: bytes, name: str, limits: ImageLimits) -> Payload:
    """The image decoded, made 8-bit RGB(A), shrunk to ``limits.max_side`` and encoded in the target format."""
    image = _decoded(data, name)
    alpha = limits.target_format != "JPEG" and (
        image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    )
    image = _eight_bit_rgb(image, alpha)
    if limits.max_side is not None and max(image.size) > limits.max_side:
        image.thumbnail((limits.max_side, limits.max_side), Image.Resampling.LANCZOS)
    return make_payload(encode(image, limits.target_format), limits.target_format, image.size)


# ---- conversions made once: kept on disk for the process (made ahead in workers: conversion_workers)


@dataclass(frozen=True)
class Stored:
    """A conversion kept on disk: where, and what the payload is."""

    path: str
    image_format: str
    size: tuple[int, int]
    sha256: str


class ConversionStore:
    """Conversions by (source sha256, limits), in a temporary folder removed at exit; failures by
    their message. Only an index is held in memory."""

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._entries: dict[tuple[str, ImageLimits], Stored | str] = {}
        self._lock = threading.Lock()

    def folder(self) -> Path:
        with self._lock:
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix="sciir-payloads-"))
                atexit.register(shutil.rmtree, self._folder, True)
            return self._folder

    def get(self, key: tuple[str, ImageLimits]) -> Stored | str | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: tuple[str, ImageLimits], entry: Stored | str) -> None:
        with self._lock:
            self._entries[key] = entry


STORE = ConversionStore()


class ConversionFailed(UnreadableImageFile):
    """A conversion that failed before (in this process or a worker); the message is the stored one."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


def stored_path(store: ConversionStore, key: tuple[str, ImageLimits]) -> str:
    """Where the conversion of the image with sha256 ``key[0]`` under limits ``key[1]`` is kept."""
    source, limits = key
    return str(store.folder() / f"{source}-{limits.max_side or 0}-{limits.image_format or 'any'}")


def convert_to_file(data: bytes, name: str, limits: ImageLimits, path: str) -> Stored | str:
    """One conversion written to ``path`` (run in a worker process): what was stored, or why not."""
    try:
        made = converted(data, name, limits)
    except UnreadableImageFile as error:
        return str(error)
    Path(path).write_bytes(made)
    return Stored(path, made.format, made.size, made.sha256)


def converted_payload(data: bytes, name: str, limits: ImageLimits, store: ConversionStore = STORE) -> Payload:
    """The stored conversion of ``data`` under ``limits``, made here when there is none yet."""
    key = (hashlib.sha256(data).hexdigest(), limits)
    entry = store.get(key)
    if entry is None:
        entry = convert_to_file(data, name, limits, stored_path(store, key))
        store.put(key, entry)
    if isinstance(entry, str):
        raise ConversionFailed(entry)
    return make_payload(Path(entry.path).read_bytes(), entry.image_format, entry.size, entry.sha256)


def payload(handle: ImageFile, limits: ImageLimits, store: ConversionStore = STORE) -> Payload:
    """The bytes a request carries for ``handle`` under ``limits``: its own bytes when they fit,
    else its conversion (made once); UnreadableImageFile naming the file when it cannot be read."""
    data = handle.read()
    own = own_payload(data, handle.name, limits)
    return own if own is not None else converted_payload(data, handle.name, limits, store)


def own_payload(data: bytes, name: str, limits: ImageLimits) -> Payload | None:
    """A file's own bytes as a payload when they can be sent as they are under ``limits`` (checked to
    be whole); None when they need converting. UnreadableImageFile naming the file when it is not an
    image or is truncated."""
    header = read_header(data, name)
    if not header.fits(limits):
        return None
    check_complete(data, header, name)
    return make_payload(data, str(header.format), header.size)


def request_payload(image: bytes, limits: ImageLimits, name: str) -> Payload:
    """The payload of image bytes already in a request: the same object when it was made under limits
    it fits (nothing read again), else checked and converted as :func:`payload` does."""
    if isinstance(image, Payload) and image.fits(limits):
        return image
    return payload(ImageFile.of_bytes(image, name), limits)
