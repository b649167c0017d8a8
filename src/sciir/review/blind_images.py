"""An image as a rater's browser gets it: its pixels, none of its file's text.

Image files often say where they come from: PNG text chunks (``tEXt``, ``zTXt``, ``iTXt``: a generator's name,
a workflow naming its checkpoint), EXIF and XMP. A blind rating shows none of it. A PNG keeps only the
chunks that draw it (header, palette, transparency, colour space, pixel data); JPEG and WebP are decoded and
sent as PNG, their pixels as they are. A figure of another format a page shows beside a panel (TIFF, GIF, BMP:
``shown_png``) is decoded within the project's bounds and sent as 8-bit sRGB PNG.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

from PIL import Image

from sciir.images.colour import normalise
from sciir.images.decode import UnreadableImageError, decode_file, sniff

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# The chunks that say how to draw the pixels; every other (text, EXIF, time, private) is left out.
DRAWING_CHUNKS = frozenset(
    {b"IHDR", b"PLTE", b"IDAT", b"IEND", b"tRNS", b"gAMA", b"cHRM", b"sRGB", b"iCCP", b"sBIT", b"pHYs"}
)


class NotAnImage(ValueError):
    """A file that is not a PNG, JPEG or WebP image."""


def png_without_text(data: bytes) -> bytes:
    """The PNG ``data`` with only its drawing chunks; NotAnImage when it is not a well-formed PNG."""
    if not data.startswith(PNG_SIGNATURE):
        raise NotAnImage("not a PNG file")
    kept, offset = [PNG_SIGNATURE], len(PNG_SIGNATURE)
    while offset + 8 <= len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        end = offset + 12 + length
        if end > len(data):
            raise NotAnImage("truncated PNG chunk")
        if kind in DRAWING_CHUNKS:
            kept.append(data[offset:end])
        offset = end
        if kind == b"IEND":
            return b"".join(kept)
    raise NotAnImage("PNG without its end chunk")


def reencoded_png(data: bytes) -> bytes:
    """A JPEG or WebP image's pixels as a PNG (no EXIF, XMP or comment)."""
    with Image.open(io.BytesIO(data), formats=["JPEG", "WEBP"]) as image:
        buffer = io.BytesIO()
        image.save(buffer, "PNG", icc_profile=image.info.get("icc_profile"))
    return buffer.getvalue()


def blind_png(path: Path) -> bytes:
    """The image at ``path`` as PNG bytes carrying no text of its file (format read from its bytes)."""
    data = path.read_bytes()
    kind = sniff(data)
    if kind == "PNG":
        return png_without_text(data)
    if kind in ("JPEG", "WEBP"):
        return reencoded_png(data)
    raise NotAnImage(f"{kind or 'an unknown format'} is not served (PNG, JPEG or WebP)")


def shown_png(path: Path) -> bytes:
    """``blind_png`` for PNG, JPEG and WebP; any other format the project decodes (a source figure's TIFF, GIF,
    BMP) as an 8-bit sRGB PNG. NotAnImage when it cannot be decoded."""
    try:
        return blind_png(path)
    except NotAnImage:
        try:
            image = normalise(decode_file(path)).image
        except UnreadableImageError as error:
            raise NotAnImage(str(error)) from None
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()
