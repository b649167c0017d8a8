"""How images reach a model: as PNG bytes within a size (a local model decodes them), or as the data-URL
content parts of an OpenAI-compatible chat request (each image's own bytes when they fit the limits)."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from PIL import Image

from sciir.backends.http.json_body import JSONText
from sciir.images.payload import ImageLimits, UnreadableImageFile, request_payload

_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"})


class UnreadableImage(ValueError):
    """An input image Pillow cannot decode."""


def png_for_upload(image: bytes, max_side: int) -> bytes:
    """``image`` as PNG bytes no larger than ``max_side`` on its longer side (aspect ratio kept).

    A PNG that already fits is sent as is, byte for byte.
    """
    try:
        with Image.open(io.BytesIO(image)) as img:
            img.load()
            if img.format == "PNG" and max(img.size) <= max_side:
                return image
            picture = img if img.mode in _PNG_MODES else img.convert("RGB")
            picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            buffer = io.BytesIO()
            picture.save(buffer, format="PNG")
            return buffer.getvalue()
    except (OSError, ValueError, Image.DecompressionBombError) as err:
        raise UnreadableImage(f"{type(err).__name__}: {err}") from None


def image_parts(images: Sequence[bytes], limits: ImageLimits) -> list[dict[str, Any]]:
    """Chat content parts carrying ``images`` as data URLs of their own format: each image's own bytes
    when they fit ``limits``, else converted (``sciir.images.payload``); names the image that cannot be read."""
    parts = []
    for number, image in enumerate(images, start=1):
        try:
            sent = request_payload(image, limits, f"image {number} of {len(images)}")
        except UnreadableImageFile as err:
            raise UnreadableImage(str(err)) from None
        url = JSONText(f"data:{sent.mime_type};base64,".encode("ascii") + base64.b64encode(sent))
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts
