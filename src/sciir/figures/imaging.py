"""Figure images: panel splitting, geometric rules and standardisation (SciIR paper, B.1-B.2).

Decoding is sciir.images.decode's and colour normalisation sciir.images.colour's; standardisation here pads
and resizes an 8-bit sRGB image (shrinking by libvips, sciir.images.vips_resize) and encodes the result.

Panels are found by a recursive XY-cut: the background is the dominant edge colour (within a
tolerance), and a figure is cut along full-width or full-height background gutters at least
``min_gutter_px`` wide, rows first, so panels come out in reading (row-major) order. Parts thinner
than ``min_part_px`` across a cut (a title row, a column of axis labels) stay with their neighbour,
so a plot keeps its title and labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict

from sciir.images.colour import normalise
from sciir.images.decode import Decoded
from sciir.images.decode import UnreadableImageError as UnreadableImageError  # raised by to_srgb

# Edge pixels are binned by their top 4 bits per channel to find the dominant colour despite
# JPEG noise.
_EDGE_BIN_SHIFT = 4
# Pillow shrinks by an integer factor with a box filter first when the Lanczos step would still
# reduce by at least this much; at 3.0 the result is indistinguishable from Lanczos alone.
_REDUCING_GAP = 3.0
# Every so many rows are compared first when looking for a grey image among RGB ones.
_GREY_SAMPLE_ROWS = 16


@dataclass(frozen=True)
class Box:
    """A pixel rectangle; ``x1`` and ``y1`` are exclusive."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def width(self) -> int:
        return self.x1 - self.x0

    @property
    def height(self) -> int:
        return self.y1 - self.y0


@dataclass(frozen=True)
class EdgeColour:
    """Colour statistics of an image's one-pixel border."""

    dominant: tuple[int, int, int]
    dominant_share: float
    mean: tuple[int, int, int]


class SplitSettings(BaseModel):
    """How figures are cut into panels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # A pixel is background when every channel is within this distance of the dominant edge colour.
    background_tolerance: int = 24
    min_gutter_px: int = 12
    # Parts thinner than this across a cut (titles, axis labels, legends) are joined to a neighbour
    # (0 keeps every cut).
    min_part_px: int = 96


class GeometryRules(BaseModel):
    """Which panel regions are kept (paper B.1): minimum short side, aspect range, layout misfires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_side_px: int = 128
    aspect_range: tuple[float, float] = (0.33, 3.0)
    # Among two or more real panels, one covering this share of the figure is likely a whole-layout
    # misdetection (None disables the rule).
    layout_misfire_area: tuple[float, float] | None = (0.75, 0.90)


def to_srgb(image: Image.Image) -> Image.Image:
    """An opened image as 8-bit sRGB ``RGB`` with no profile attached (sciir.images.colour.normalise, minus
    orientation, which an image already decoded by its caller has applied or never had)."""
    decoded = Decoded(image, image.format or "", image.info.get("icc_profile") or None, orientation=1)
    return normalise(decoded).image.convert("RGB")


def edge_colour(rgb: np.ndarray, tolerance: int) -> EdgeColour:
    """Dominant and mean colour of the border of an H x W x 3 array; share counts pixels within tolerance."""
    return edge_colour_of(np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]), tolerance)


def border_pixels(image: Image.Image) -> np.ndarray:
    """The one-pixel border of an image as an N x 3 RGB array, read without converting the whole image."""
    width, height = image.size
    strips = [
        (0, 0, width, 1),
        (0, height - 1, width, height),
        (0, 0, 1, height),
        (width - 1, 0, width, height),
    ]
    return np.concatenate([np.asarray(image.crop(strip).convert("RGB")).reshape(-1, 3) for strip in strips])


def edge_colour_of(edges: np.ndarray, tolerance: int) -> EdgeColour:
    """Dominant and mean colour of N x 3 border pixels; share counts pixels within tolerance."""
    edges = edges.astype(np.int32)
    bins = edges >> _EDGE_BIN_SHIFT
    keys = (bins[:, 0] << 8) | (bins[:, 1] << 4) | bins[:, 2]
    values, counts = np.unique(keys, return_counts=True)
    in_mode_bin = keys == values[np.argmax(counts)]
    dominant = np.rint(edges[in_mode_bin].mean(axis=0)).astype(int)
    near_dominant = np.abs(edges - dominant).max(axis=1) <= tolerance
    mean = np.rint(edges.mean(axis=0)).astype(int)
    return EdgeColour(
        dominant=(int(dominant[0]), int(dominant[1]), int(dominant[2])),
        dominant_share=float(near_dominant.mean()),
        mean=(int(mean[0]), int(mean[1]), int(mean[2])),
    )


def foreground_mask(rgb: np.ndarray, tolerance: int) -> np.ndarray:
    """True where a pixel differs from the dominant edge colour by more than ``tolerance`` in any channel."""
    background = np.array(edge_colour(rgb, tolerance).dominant, dtype=np.int16)
    return np.abs(rgb.astype(np.int16) - background).max(axis=2) > tolerance


def _trim(foreground: np.ndarray, box: Box) -> Box | None:
    """The smallest box holding all foreground inside ``box``; None when it holds none."""
    region = foreground[box.y0 : box.y1, box.x0 : box.x1]
    rows = np.flatnonzero(region.any(axis=1))
    cols = np.flatnonzero(region.any(axis=0))
    if rows.size == 0:
        return None
    return Box(
        box.x0 + int(cols[0]), box.y0 + int(rows[0]), box.x0 + int(cols[-1]) + 1, box.y0 + int(rows[-1]) + 1
    )


def _merge_thin_segments(segments: list[tuple[int, int]], min_part_px: int) -> list[tuple[int, int]]:
    """Join each segment thinner than ``min_part_px`` to the neighbour across the narrower gutter.

    Keeps panel letters, axis titles and legends with the panel they label instead of cutting
    them off as fragments.
    """
    segments = list(segments)
    while len(segments) > 1:
        extents = [end - start for start, end in segments]
        thinnest = int(np.argmin(extents))
        if extents[thinnest] >= min_part_px:
            break
        gap_before = segments[thinnest][0] - segments[thinnest - 1][1] if thinnest > 0 else None
        gap_after = (
            segments[thinnest + 1][0] - segments[thinnest][1] if thinnest + 1 < len(segments) else None
        )
        merge_before = gap_after is None or (gap_before is not None and gap_before <= gap_after)
        first = thinnest - 1 if merge_before else thinnest
        segments[first : first + 2] = [(segments[first][0], segments[first + 1][1])]
    return segments


def _gutter_segments(has_ink: np.ndarray, min_gutter_px: int, min_part_px: int) -> list[tuple[int, int]]:
    """Split a 1-D ink profile (ink at both ends) at blank runs of at least ``min_gutter_px``."""
    padded = np.concatenate([[True], has_ink, [True]])
    changes = np.flatnonzero(np.diff(padded.astype(np.int8)))
    blank_starts, blank_ends = changes[0::2], changes[1::2]
    segments, start = [], 0
    for blank_start, blank_end in zip(blank_starts, blank_ends, strict=True):
        if blank_end - blank_start >= min_gutter_px:
            segments.append((start, int(blank_start)))
            start = int(blank_end)
    segments.append((start, has_ink.size))
    return _merge_thin_segments(segments, min_part_px)


def _split(foreground: np.ndarray, box: Box, min_gutter_px: int, min_part_px: int) -> list[Box]:
    """Cut a trimmed box along horizontal gutters, else vertical ones; one box when there is none."""
    region = foreground[box.y0 : box.y1, box.x0 : box.x1]
    row_segments = _gutter_segments(region.any(axis=1), min_gutter_px, min_part_px)
    if len(row_segments) > 1:
        return [Box(box.x0, box.y0 + top, box.x1, box.y0 + bottom) for top, bottom in row_segments]
    col_segments = _gutter_segments(region.any(axis=0), min_gutter_px, min_part_px)
    return [Box(box.x0 + left, box.y0, box.x0 + right, box.y1) for left, right in col_segments]


def xy_cut(foreground: np.ndarray, min_gutter_px: int, min_part_px: int = 0) -> list[Box]:
    """Recursive XY-cut of a foreground mask into content boxes, in reading order."""
    panels: list[Box] = []
    pending = [Box(0, 0, foreground.shape[1], foreground.shape[0])]
    while pending:
        trimmed = _trim(foreground, pending.pop())
        if trimmed is None:
            continue
        parts = _split(foreground, trimmed, min_gutter_px, min_part_px)
        if len(parts) == 1:
            panels.append(trimmed)
        else:
            # Reversed so the first part is processed next: a depth-first walk keeps reading order.
            pending.extend(reversed(parts))
    return panels


def split_panels(image: Image.Image, settings: SplitSettings) -> list[Box]:
    """Panel boxes of a figure in row-major order; one box for a single-panel figure, none for a blank one."""
    rgb = np.asarray(image.convert("RGB"))
    mask = foreground_mask(rgb, settings.background_tolerance)
    return xy_cut(mask, settings.min_gutter_px, settings.min_part_px)


def _shape_rejection(box: Box, rules: GeometryRules) -> str | None:
    """Why a region is too small or too elongated to be a panel, or None."""
    size = f"{box.width}x{box.height} px"
    if min(box.width, box.height) < rules.min_side_px:
        return f"{size}, short side below {rules.min_side_px} px"
    aspect = box.width / box.height
    low, high = rules.aspect_range
    if not low <= aspect <= high:
        return f"{size}, aspect ratio {aspect:.2f} outside [{low}, {high}]"
    return None


def _layout_misfire(box: Box, figure_size: tuple[int, int], rules: GeometryRules) -> str | None:
    """Why a region looks like the whole layout rather than one panel, or None."""
    if rules.layout_misfire_area is None:
        return None
    share = box.width * box.height / (figure_size[0] * figure_size[1])
    low, high = rules.layout_misfire_area
    if low <= share <= high:
        return f"{box.width}x{box.height} px, covers {share:.0%} of the figure (likely a whole-layout region)"
    return None


def panel_rejections(
    boxes: list[Box], figure_size: tuple[int, int], rules: GeometryRules
) -> list[str | None]:
    """Per region, why it is rejected (None when kept).

    The area rule applies only when at least two regions pass the shape rules: a figure whose
    other regions are mere fragments (labels, legends) is a single-panel figure.
    """
    reasons = [_shape_rejection(box, rules) for box in boxes]
    if sum(reason is None for reason in reasons) < 2:
        return reasons
    return [
        reason or _layout_misfire(box, figure_size, rules) for box, reason in zip(boxes, reasons, strict=True)
    ]


def padding_colour(edges: np.ndarray, tolerance: int, dominant_share: float) -> tuple[int, int, int]:
    """Dominant edge colour when it covers more than ``dominant_share`` of the border, else the mean edge RGB."""
    colours = edge_colour_of(edges, tolerance)
    return colours.dominant if colours.dominant_share > dominant_share else colours.mean


def fitted_size(size: tuple[int, int], target: int) -> tuple[int, int]:
    """``size`` scaled so its longer side is ``target``."""
    scale = target / max(size)
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def standardised_pixels(image: Image.Image, size: int, tolerance: int, dominant_share: float) -> np.ndarray:
    """An 8-bit sRGB ``L`` or ``RGB`` image resized (Lanczos, aspect kept) to fit ``size`` and centred on
    a ``size`` x ``size`` canvas padded with the edge colour (paper B.2), as an array with the image's
    bands: ``size`` x ``size`` for ``L``, ``size`` x ``size`` x 3 for ``RGB``.

    Shrinking is libvips' (three to five times faster than Pillow on one core, the same pixels within a
    fraction of a level); enlarging is Pillow's.
    """
    fill = padding_colour(border_pixels(image), tolerance, dominant_share)
    band_fill = fill[:1] if image.mode == "L" else fill
    new_size = fitted_size(image.size, size)
    if new_size[0] <= image.width and new_size[1] <= image.height:
        from sciir.images.vips_resize import shrink_and_pad  # pyvips only where images are standardised

        return shrink_and_pad(image, new_size, size, band_fill, _REDUCING_GAP)
    # Enlarging: libvips has no Lanczos interpolator for it (sciir.images.vips_resize), Pillow has.
    resized = image.resize(new_size, Image.Resampling.LANCZOS, reducing_gap=_REDUCING_GAP)
    canvas = Image.new(image.mode, (size, size), band_fill[0] if image.mode == "L" else band_fill)
    canvas.paste(resized, ((size - new_size[0]) // 2, (size - new_size[1]) // 2))
    return np.asarray(canvas)


def standardise(image: Image.Image, size: int, tolerance: int, dominant_share: float) -> Image.Image:
    """``standardised_pixels`` as an ``RGB`` image (a grey image made RGB)."""
    standardised = Image.fromarray(standardised_pixels(image, size, tolerance, dominant_share))
    return standardised if standardised.mode == "RGB" else standardised.convert("RGB")


def standardised_png(image: Image.Image, size: int, tolerance: int, dominant_share: float) -> bytes:
    """The PNG curate writes for a panel: ``standardised_pixels`` encoded with no Pillow image between
    the resizer and the encoder, a grey panel (``L``, or ``RGB`` with three equal bands) as a grey PNG: a
    third of the bytes to filter and compress and, read as RGB, the same pixels as ``standardise``."""
    return encoded_png(_one_band_if_grey(standardised_pixels(image, size, tolerance, dominant_share)))


def _one_band_if_grey(pixels: np.ndarray) -> np.ndarray:
    """An H x W x 3 array whose bands are all equal as its first band; any other array as it is.

    Sampled rows rule out a colour image first, so it costs a colour panel almost nothing; a grey one is
    then compared whole on split bands (OpenCV splits in one pass, three times faster than comparing
    numpy's strided views).
    """
    import cv2

    sample = pixels[::_GREY_SAMPLE_ROWS]
    if (
        pixels.ndim == 2
        or (sample[..., 0] != sample[..., 1]).any()
        or (sample[..., 1] != sample[..., 2]).any()
    ):
        return pixels
    red, green, blue = cv2.split(pixels)
    grey = cv2.countNonZero(cv2.absdiff(red, green)) == 0 and cv2.countNonZero(cv2.absdiff(green, blue)) == 0
    return red if grey else pixels


def standardise_changes(source_size: tuple[int, int], size: int) -> list[str]:
    """What standardising an image of ``source_size`` to ``size`` x ``size`` does to it."""
    changes = ["resized"] if max(source_size) != size else []
    return changes + (["padded"] if source_size[0] != source_size[1] else [])


def encoded_png(pixels: np.ndarray) -> bytes:
    """A PNG of an H x W (grey) or H x W x 3 (RGB) uint8 array, encoded by OpenCV's libpng with Paeth
    filtering and run-length deflate: about three times faster than Pillow's default encoder at about the
    same size; libvips' encoder is faster only at larger sizes (docs/benchmarks.md)."""
    import cv2

    if pixels.dtype != np.uint8 or not (pixels.ndim == 2 or (pixels.ndim == 3 and pixels.shape[2] == 3)):
        raise ValueError(f"an H x W or H x W x 3 uint8 array is expected, not {pixels.shape} {pixels.dtype}")
    bands = pixels if pixels.ndim == 2 else cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR)
    options = [
        cv2.IMWRITE_PNG_FILTER,
        cv2.IMWRITE_PNG_FILTER_PAETH,
        cv2.IMWRITE_PNG_STRATEGY,
        cv2.IMWRITE_PNG_STRATEGY_RLE,
    ]
    ok, encoded = cv2.imencode(".png", bands, options)
    if not ok:
        raise ValueError(f"OpenCV could not encode a {pixels.shape[1]}x{pixels.shape[0]} image as PNG")
    return encoded.tobytes()


def png_bytes(image: Image.Image) -> bytes:
    """A PNG of an ``L`` or ``RGB`` image (``encoded_png``), in the image's mode."""
    if image.mode not in ("L", "RGB"):
        raise ValueError(f"an L or RGB image is expected, not {image.mode}")
    return encoded_png(np.asarray(image))
