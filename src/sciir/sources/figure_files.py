"""A figure's image file: the file its JATS ``<graphic>`` href points at inside the article folder (never
outside it), within its size limit and decoding (``sciir.images.decode.probe_file``)."""

from __future__ import annotations

from pathlib import Path

from sciir.figures.jats_reader import JatsFigure
from sciir.images.decode import UnreadableImageError, probe_file
from sciir.sources.params import LimitParams

# Tried in order when a <graphic> href has no extension (PMC style) or the wrong one.
_IMAGE_SUFFIXES = (".tif", ".tiff", ".png", ".jpg", ".jpeg", ".gif")
_HREF_SHOWN = 120  # characters of a hostile href quoted in a reason


class _UnusableHref(ValueError):
    """A ``<graphic>`` href that is not followed: a URL, a path leaving the article folder, or a name
    the file system refuses (too long ...)."""


def _resolve_image(folder: Path, href: str) -> Path | None:
    """The image file a ``<graphic>`` href points at, trying usual suffixes; None when absent.

    Every candidate is checked after resolving ``..`` and symbolic links, so neither an href nor
    a link inside the folder can reach a file outside it.
    """
    shown = repr(href if len(href) <= _HREF_SHOWN else f"{href[:_HREF_SHOWN]}...")
    if "://" in href or href.lower().startswith(("file:", "data:")):
        raise _UnusableHref(f"graphic href {shown} is a URL; images are read from the article folder only")
    root = folder.resolve()
    target = folder / href
    candidates = [target] + [target.with_name(target.name + suffix) for suffix in _IMAGE_SUFFIXES]
    candidates += [target.with_suffix(suffix) for suffix in _IMAGE_SUFFIXES]
    for candidate in candidates:
        if not candidate.resolve().is_relative_to(root):
            raise _UnusableHref(f"graphic href {shown} points outside the article folder {folder}")
        try:
            if candidate.is_file():
                return candidate
        except OSError as error:
            raise _UnusableHref(f"graphic href {shown} cannot be looked up: {error.strerror}") from error
    return None


def _decode_problem(image_path: Path, limits: LimitParams) -> str | None:
    """Why the image file cannot be used (too large, or it does not decode); None when it decodes."""
    size = image_path.stat().st_size
    if size > limits.max_image_bytes:
        return f"image file {image_path}: {size} bytes, over the {limits.max_image_bytes}-byte limit"
    try:
        probe_file(image_path)
    except UnreadableImageError as error:
        return f"image file {image_path}: {error}"
    # A decoder can raise anything on a hostile file (IndexError, NotImplementedError ...); one
    # file must never stop the run, so every error becomes this figure's reason.
    except Exception as error:
        return f"image file {image_path}: cannot decode image: {type(error).__name__}: {error}"
    return None


def figure_image_file(
    folder: Path, figure: JatsFigure, limits: LimitParams
) -> tuple[Path | None, str | None]:
    """The figure's image file, and what is wrong with it (None when it decodes)."""
    href = figure.graphic_href
    if not href:
        return None, "no <graphic> element"
    try:
        image_path = _resolve_image(folder, href)
    except _UnusableHref as unusable:
        return None, str(unusable)
    if image_path is None:
        return None, f"image file {folder / href} not found"
    return image_path, _decode_problem(image_path, limits)
