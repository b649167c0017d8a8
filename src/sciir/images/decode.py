"""Decoding untrusted image files: one decoder chosen by the file's content, bounded, every failure explained.

The format is read from the magic bytes, never the suffix, and checked against an allow-list of raster
formats; only that format's decoder is tried (``Image.open(..., formats=[...])``), so the decoder that
claims a file never depends on what was opened before. Pixel counts are checked from the header before
any pixel is decoded. Samples that Pillow would cut to 8 bits (16-bit RGB, floating-point RGB TIFF) are
decoded by OpenCV with their full range. Whatever a decoder raises becomes an
:class:`UnreadableImageError` that says what is wrong in words and keeps the decoder's own message.

Vector formats (PDF, EPS, SVG) are recognised and rejected as unsupported: SciIR renders none.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, TiffImagePlugin

from sciir.images.payload import Header, UnreadableImageFile, check_complete

# Pillow format -> what a person calls it. Only these are decoded.
ALLOWED_FORMATS = {
    "PNG": "PNG",
    "JPEG": "JPEG",
    "TIFF": "TIFF",
    "GIF": "GIF",
    "BMP": "BMP",
    "WEBP": "WebP",
    "JPEG2000": "JPEG 2000",
}
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"BM", "BMP"),
    (b"\x00\x00\x00\x0cjP  \r\n\x87\n", "JPEG2000"),
    (b"\xff\x4f\xff\x51", "JPEG2000"),
    (b"%PDF-", "PDF"),
    (b"%!PS", "EPS"),
    (b"\xc5\xd0\xd3\xc6", "EPS"),
    (b"8BPS", "Photoshop PSD"),
    (b"II+\x00", "BigTIFF"),
    (b"MM\x00+", "BigTIFF"),
)
VECTOR_FORMATS = frozenset({"PDF", "EPS", "SVG"})
_TIFF_BITS_PER_SAMPLE, _TIFF_SAMPLE_FORMAT, _TIFF_ORIENTATION, _TIFF_ICC = 258, 339, 274, 34675
_TIFF_FLOAT = 3
_EXIF_ORIENTATION = 0x0112


class UnreadableImageError(ValueError):
    """An image that cannot be decoded or converted: ``problem`` in words, ``detail`` the decoder's message."""

    def __init__(self, problem: str, detail: str | None = None) -> None:
        self.problem, self.detail = problem, detail
        super().__init__(f"cannot decode image: {problem}" + (f" (decoder: {detail})" if detail else ""))


@dataclass(frozen=True)
class DecodeLimits:
    """Bounds on one image file: its size on disk and its pixel count (decompression bombs)."""

    max_pixels: int = 64_000_000
    max_file_mb: int = 256


@dataclass(frozen=True)
class Decoded:
    """A decoded image and what it says about itself.

    ``pixels`` is a Pillow image, or an H x W x 3|4 RGB(A) array of uint16 or float32 where Pillow
    would cut the samples to 8 bits. ``orientation`` is the EXIF/XMP orientation still to apply (1: none).
    """

    pixels: Image.Image | np.ndarray
    format: str
    icc_profile: bytes | None
    orientation: int
    frames: int = 1
    oriented_by_decoder: bool = False  # the stored orientation was applied while decoding


def sniff(data: bytes) -> str | None:
    """The format the magic bytes name (a Pillow format name, or e.g. ``PDF``); None when unknown."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data[4:8] == b"ftyp" and data[8:12] in (b"heic", b"heix", b"mif1", b"avif", b"avis"):
        return "HEIF/AVIF"
    text = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if text.startswith((b"<?xml", b"<svg", b"<!doctype svg")) and b"<svg" in text:
        return "SVG"
    return None


def allowed_format(data: bytes) -> str:
    """The allowed raster format of ``data``; UnreadableImageError saying why it is not one."""
    if not data:
        raise UnreadableImageError("the file is empty (0 bytes)")
    found = sniff(data)
    if found in ALLOWED_FORMATS:
        return found
    if found in VECTOR_FORMATS:
        raise UnreadableImageError(
            f"{found} is a vector format, which SciIR does not render; export the figure as PNG or TIFF"
        )
    if found is not None:
        raise UnreadableImageError(f"{found} is not a supported image format ({_supported()})")
    raise UnreadableImageError(f"not an image in a supported format ({_supported()}); it starts {data[:8]!r}")


def _supported() -> str:
    return "supported: " + ", ".join(ALLOWED_FORMATS.values())


def read_file(path: Path, limits: DecodeLimits) -> bytes:
    """The file's bytes; UnreadableImageError when it cannot be read or is over the size limit."""
    try:
        size = path.stat().st_size
        if size > limits.max_file_mb * 1024 * 1024:
            raise UnreadableImageError(
                f"the file is {size / 1024 / 1024:.0f} MB, over the limit of {limits.max_file_mb} MB"
            )
        return path.read_bytes()
    except OSError as error:
        raise UnreadableImageError("the file cannot be read", f"{type(error).__name__}: {error}") from None


def _check_pixels(size: tuple[int, int], limits: DecodeLimits) -> None:
    pixels = size[0] * size[1]
    if pixels > limits.max_pixels:
        raise UnreadableImageError(
            f"{size[0]}x{size[1]} = {pixels:,} pixels, over the limit of {limits.max_pixels:,} "
            "(a decompression bomb, or a figure too large to curate)"
        )
    if pixels == 0:
        raise UnreadableImageError(f"the image has no pixels ({size[0]}x{size[1]})")


def _problem(error: BaseException) -> str:
    """What a decoder's exception means, in words."""
    if isinstance(error, Image.DecompressionBombError):
        return "the header declares more pixels than allowed (a decompression bomb)"
    if isinstance(error, MemoryError):
        return "decoding it ran out of memory"
    if isinstance(error, OSError | SyntaxError | EOFError | ValueError | UnreadableImageFile):
        return "the file is truncated or corrupt"
    return "the decoder failed on this file"


def _open(data: bytes, image_format: str) -> Image.Image:
    """The image opened lazily by the one decoder of its format (header parsed, no pixels yet)."""
    return Image.open(io.BytesIO(data), formats=[image_format])


def _tiff_tags(data: bytes) -> TiffImagePlugin.ImageFileDirectory_v2:
    """The first directory of a TIFF file, read without Pillow's mode table (which lacks float RGB)."""
    tags = TiffImagePlugin.ImageFileDirectory_v2(data[:8])  # the header gives the first directory's offset
    stream = io.BytesIO(data)
    stream.seek(tags.next)
    tags.load(stream)
    return tags


def _needs_full_depth(data: bytes, image_format: str) -> bool:
    """Whether this file holds colour samples Pillow would cut to 8 bits (16-bit or float RGB)."""
    if image_format == "PNG":
        if len(data) < 26:
            return False  # Pillow's decoder reports the truncated header
        bit_depth, colour_type = data[24], data[25]  # IHDR
        return bit_depth == 16 and colour_type in (2, 6)
    if image_format == "TIFF":
        tags = _tiff_tags(data)
        bits = tags.get(_TIFF_BITS_PER_SAMPLE, (8,))
        bits = bits if isinstance(bits, tuple) else (bits,)
        sample_format = tags.get(_TIFF_SAMPLE_FORMAT, (1,))
        sample_format = sample_format if isinstance(sample_format, tuple) else (sample_format,)
        return len(bits) >= 3 and (max(bits) > 8 or _TIFF_FLOAT in sample_format)
    return False


def _full_depth_pixels(data: bytes) -> np.ndarray:
    """RGB(A) samples at their stored depth (OpenCV reads them; it gives BGR(A) order, made RGB(A))."""
    import cv2

    pixels = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if pixels is None or pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
        raise UnreadableImageError("the file is truncated or corrupt", "OpenCV could not decode its samples")
    order = [2, 1, 0, 3][: pixels.shape[2]]
    return np.ascontiguousarray(pixels[..., order])


def _full_depth_decode(data: bytes, image_format: str, limits: DecodeLimits) -> Decoded:
    """A 16-bit or float RGB(A) file, its metadata from the header (TIFF tags, or Pillow for PNG)."""
    if image_format == "TIFF":
        tags = _tiff_tags(data)
        _check_pixels((int(tags.get(256, 0)), int(tags.get(257, 0))), limits)
        icc, orientation = tags.get(_TIFF_ICC), int(tags.get(_TIFF_ORIENTATION, 1))
    else:
        with _open(data, image_format) as header:
            _check_pixels(header.size, limits)
            icc = header.info.get("icc_profile")
            orientation = int(header.getexif().get(_EXIF_ORIENTATION, 1))
    return Decoded(_full_depth_pixels(data), image_format, bytes(icc) if icc else None, orientation)


def _pillow_decode(data: bytes, image_format: str, limits: DecodeLimits) -> Decoded:
    image = _open(data, image_format)
    _check_pixels(image.size, limits)
    frames = int(getattr(image, "n_frames", 1))
    stored_orientation = int(image.getexif().get(_EXIF_ORIENTATION, 1))
    image.load()
    icc = image.info.get("icc_profile")
    # Pillow's TIFF decoder applies the orientation itself and drops the tag.
    orientation = int(image.getexif().get(_EXIF_ORIENTATION, 1))
    oriented = stored_orientation != 1 and orientation == 1
    return Decoded(image, image_format, icc or None, orientation, frames, oriented)


def decode(data: bytes, limits: DecodeLimits = DecodeLimits()) -> Decoded:
    """The image in ``data`` fully decoded (its first frame); UnreadableImageError when it cannot be."""
    image_format = allowed_format(data)
    try:
        if _needs_full_depth(data, image_format):
            return _full_depth_decode(data, image_format, limits)
        return _pillow_decode(data, image_format, limits)
    except UnreadableImageError:
        raise
    except Exception as error:  # whatever a decoder raises is the file's fault
        raise UnreadableImageError(_problem(error), f"{type(error).__name__}: {error}") from None


def decode_file(path: Path, limits: DecodeLimits = DecodeLimits()) -> Decoded:
    """The image file at ``path`` fully decoded; UnreadableImageError when it cannot be."""
    return decode(read_file(path, limits), limits)


def probe_file(path: Path, limits: DecodeLimits = DecodeLimits()) -> None:
    """Check an image file without decoding its pixels: allowed format, header, pixel count, and that
    PNG, JPEG and WebP files are whole. UnreadableImageError when it fails."""
    data = read_file(path, limits)
    image_format = allowed_format(data)
    try:
        with _open(data, image_format) as image:
            _check_pixels(image.size, limits)
            header = Header(image_format, image.size, image.mode, deep=False, transparency=False)
        check_complete(data, header, str(path))
    except UnreadableImageError:
        raise
    except Exception as error:  # whatever a decoder raises is the file's fault
        raise UnreadableImageError(_problem(error), f"{type(error).__name__}: {error}") from None
