"""Colour normalisation (SciIR paper, B.2): any decoded image to 8-bit sRGB, upright, without transparency.

- Samples deeper than 8 bits are scaled by their real value range (sciir.images.bit_depth).
- Palettes are expanded and 1-bit images made grey; CMYK, LAB and an embedded ICC profile are converted
  to sRGB (a profile that leaves sRGB values as they are is recognised once and skipped).
- Transparency is composited onto white, or onto black when most of the visible content is near white,
  so that white text on a transparent background stays readable.
- The EXIF or XMP orientation is applied.

Grey images stay single-channel (``L``): their values are sRGB greys already, and one channel is
cheaper to resize than three.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from typing import cast

import numpy as np
from PIL import Image, ImageCms

from sciir.images.bit_depth import eight_bit
from sciir.images.decode import Decoded, UnreadableImageError

_SRGB = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))
_WHITE, _BLACK = 255, 0
# Visible content lighter than this on most of its pixels would vanish on white.
_NEAR_WHITE = 224
_TRANSPOSES = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
# Profile transforms by (profile sha256, input mode); None when the profile is sRGB for that mode.
_TRANSFORMS: dict[tuple[str, str], ImageCms.ImageCmsTransform | None] = {}
_MAX_CACHED_TRANSFORMS = 64


@dataclass(frozen=True)
class Normalised:
    """An 8-bit sRGB image (mode ``L`` or ``RGB``, no profile attached) and what was done to get it."""

    image: Image.Image
    changes: tuple[str, ...]


def _plain_mode(image: Image.Image) -> Image.Image:
    """Palettes expanded, 1-bit made grey, premultiplied or padded alpha made plain RGBA/LA/RGB."""
    mode = image.mode
    if mode in ("P", "PA"):
        return image.convert("RGBA" if mode == "PA" or "transparency" in image.info else "RGB")
    if mode in ("L", "RGB") and "transparency" in image.info:  # a transparent colour key (PNG tRNS)
        return image.convert({"L": "LA", "RGB": "RGBA"}[mode])
    conversions = {"1": "L", "RGBX": "RGB", "RGBa": "RGBA", "La": "LA"}
    return image.convert(conversions[mode]) if mode in conversions else image


def _transform(icc: bytes, mode: str) -> ImageCms.ImageCmsTransform | None:
    """The cached transform from ``icc`` to sRGB for ``mode`` images; None when it changes nothing."""
    key = (hashlib.sha256(icc).hexdigest(), mode)
    if key not in _TRANSFORMS:
        if len(_TRANSFORMS) >= _MAX_CACHED_TRANSFORMS:
            _TRANSFORMS.clear()
        try:
            transform = ImageCms.buildTransform(ImageCms.ImageCmsProfile(io.BytesIO(icc)), _SRGB, mode, "RGB")
        except (ImageCms.PyCMSError, OSError, ValueError, TypeError) as error:
            raise UnreadableImageError(
                f"its embedded ICC profile cannot convert a {mode} image to sRGB",
                f"{type(error).__name__}: {error}",
            ) from None
        _TRANSFORMS[key] = None if _leaves_srgb(transform, mode) else transform
    return _TRANSFORMS[key]


def _leaves_srgb(transform: ImageCms.ImageCmsTransform, mode: str) -> bool:
    """Whether the transform maps a grid of colours (or greys) to themselves within one level."""
    if mode not in ("L", "RGB"):
        return False
    levels = np.linspace(0, 255, 16).astype(np.uint8)
    if mode == "L":
        probe = levels[None, :]
        expected = np.repeat(probe[..., None], 3, axis=2)
    else:
        probe = np.stack(np.meshgrid(levels, levels, levels), axis=-1).reshape(1, -1, 3)
        expected = probe
    converted = np.asarray(ImageCms.applyTransform(Image.fromarray(probe), transform))
    return int(np.abs(converted.astype(np.int16) - expected).max()) <= 1


def _lab_to_srgb() -> ImageCms.ImageCmsTransform:
    key = ("builtin-lab", "LAB")
    if key not in _TRANSFORMS:
        _TRANSFORMS[key] = ImageCms.buildTransform(ImageCms.createProfile("LAB"), _SRGB, "LAB", "RGB")
    transform = _TRANSFORMS[key]
    assert transform is not None
    return transform


def _applied(image: Image.Image, transform: ImageCms.ImageCmsTransform) -> Image.Image:
    """``image`` converted by ``transform``: a new image (Pillow types the result optional, None being what
    an in-place conversion returns)."""
    return cast(Image.Image, ImageCms.applyTransform(image, transform))


def to_srgb_colour(colour: Image.Image, icc: bytes | None) -> tuple[Image.Image, bool]:
    """Colour channels (no alpha) as sRGB ``L`` or ``RGB``, and whether the values changed."""
    if icc:
        transform = _transform(icc, colour.mode)
        if transform is None:
            return colour, False
        try:
            return _applied(colour, transform), True
        except (ImageCms.PyCMSError, OSError, ValueError) as error:
            raise UnreadableImageError(
                f"its embedded ICC profile cannot convert a {colour.mode} image to sRGB",
                f"{type(error).__name__}: {error}",
            ) from None
    if colour.mode in ("L", "RGB"):
        return colour, False
    if colour.mode == "LAB":
        return _applied(colour, _lab_to_srgb()), True
    return colour.convert("RGB"), True  # CMYK without a profile, YCbCr, HSV


def composite_background(colour: Image.Image, alpha: Image.Image) -> int:
    """White, or black when most visible pixels are near white (they would vanish on white)."""
    visible = np.asarray(alpha) >= 128
    if not visible.any():
        return _WHITE
    luminance = np.asarray(colour.convert("L"))[visible]
    return _BLACK if (luminance >= _NEAR_WHITE).mean() > 0.5 else _WHITE


def _flattened(image: Image.Image, icc: bytes | None) -> tuple[Image.Image, list[str]]:
    """Colour to sRGB and transparency composited; the changes made."""
    changes: list[str] = []
    alpha = image.getchannel("A") if image.mode in ("LA", "RGBA") else None
    colour = image.convert(image.mode[:-1]) if alpha is not None else image
    colour, colour_changed = to_srgb_colour(colour, icc)
    if colour_changed:
        changes.append("colour-converted")
    # One band's extrema: (lowest, highest).
    if alpha is not None and cast("tuple[int, int]", alpha.getextrema())[0] < 255:
        shade = composite_background(colour, alpha)
        background = Image.new(colour.mode, colour.size, shade if colour.mode == "L" else (shade,) * 3)
        colour = Image.composite(colour, background, alpha)
        changes.append("composited on " + ("white" if shade == _WHITE else "black"))
    return colour, changes


def normalise(decoded: Decoded) -> Normalised:
    """The decoded image as 8-bit sRGB ``L`` or ``RGB``, upright and opaque (module docstring)."""
    changes: list[str] = []
    image = _plain_mode(eight_bit(decoded.pixels))
    if isinstance(decoded.pixels, np.ndarray) or image.mode != decoded.pixels.mode:
        changes.append("converted")
    image, flattening = _flattened(image, decoded.icc_profile)
    changes += flattening
    if decoded.orientation in _TRANSPOSES:
        image = image.transpose(_TRANSPOSES[decoded.orientation])
    if decoded.orientation in _TRANSPOSES or decoded.oriented_by_decoder:
        changes.append("rotated")
    if decoded.frames > 1:
        changes.append("first frame")
    image.info.pop("icc_profile", None)
    return Normalised(image, tuple(changes))


def to_srgb(image: Image.Image) -> Image.Image:
    """An opened image as 8-bit sRGB ``RGB`` with no profile attached (:func:`normalise`, minus
    orientation, which an image already decoded by its caller has applied or never had)."""
    decoded = Decoded(image, image.format or "", image.info.get("icc_profile") or None, orientation=1)
    return normalise(decoded).image.convert("RGB")
