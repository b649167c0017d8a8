"""What every panel renderer of the embedded sample shares: the panel's truth, the font, cropping to the ink,
the title above the drawing, and the icon that curation must drop.

Text is dark on white at a size Tesseract reads (titles 32 px), and the title sits above the drawing with
a gap narrower than any gutter between panels, so a panel never looks like two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import cast

from PIL import Image, ImageDraw, ImageFont

from sciir.sample.captions import panel_description
from sciir.sample.topics import Topic

WHITE = (255, 255, 255)
INK = (0, 0, 0)
TITLE_PX = 32
TITLE_GAP_PX = 8
PANEL_PAD_PX = 6
# Pixels darker than this count as ink when cropping.
_INK_LEVEL = 245


@dataclass(frozen=True)
class PanelTruth:
    """What a panel draws, for the truth file (never read by annotate or evaluate).

    ``labels`` is every text drawn (for a molecule its name and the element symbols of its
    non-carbon atoms, which RDKit may draw with attached hydrogens, such as "OH");
    ``required_text`` is the subset a reader must find spelled exactly; ``shows`` names, per track
    the drawing itself shows, how it shows it (a track only the caption states is not there).
    """

    kind: str
    title: str
    labels: list[str]
    entities: list[str]
    relations: list[list[str]] = field(default_factory=list)
    required_text: list[str] = field(default_factory=list)
    shows: Mapping[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderedPanel:
    """A drawn panel, its truth and the caption sentence that describes it."""

    image: Image.Image
    truth: PanelTruth
    description: str


@lru_cache(maxsize=8)
def font(size: int, bold: bool = False, serif: bool = False) -> ImageFont.FreeTypeFont:
    """DejaVu Sans (or Serif) as shipped inside matplotlib, so text renders the same on every machine."""
    import matplotlib

    name = f"DejaVu{'Serif' if serif else 'Sans'}{'-Bold' if bold else ''}.ttf"
    return ImageFont.truetype(str(Path(matplotlib.get_data_path()) / "fonts" / "ttf" / name), size)


def text_box(text_font: ImageFont.FreeTypeFont, text: str) -> tuple[int, int, int, int]:
    """The box (x0, y0, x1, y1) of ``text`` in ``text_font``, in whole pixels (Pillow types the box float,
    for text drawn with a fractional stroke width; none is drawn here)."""
    return cast("tuple[int, int, int, int]", text_font.getbbox(text))


def crop_to_ink(image: Image.Image, pad: int = PANEL_PAD_PX) -> Image.Image:
    """Crop white borders away, keeping ``pad`` white pixels around the ink."""
    grey = image.convert("L").point(lambda v: 255 if v < _INK_LEVEL else 0)
    box = grey.getbbox()
    if box is None:
        raise ValueError("drawing has no ink to crop to")
    x0, y0, x1, y1 = box
    cropped = image.convert("RGB").crop((x0, y0, x1, y1))
    canvas = Image.new("RGB", (cropped.width + 2 * pad, cropped.height + 2 * pad), WHITE)
    canvas.paste(cropped, (pad, pad))
    return canvas


def add_title(body: Image.Image, title: str) -> Image.Image:
    """Put ``title`` centred above ``body`` in bold black."""
    title_font = font(TITLE_PX, bold=True)
    x0, y0, x1, y1 = text_box(title_font, title)
    text_w, text_h = x1 - x0, y1 - y0
    width = max(body.width, text_w + 2 * PANEL_PAD_PX)
    top = PANEL_PAD_PX + text_h + TITLE_GAP_PX
    canvas = Image.new("RGB", (width, top + body.height), WHITE)
    ImageDraw.Draw(canvas).text(
        ((width - text_w) // 2 - x0, PANEL_PAD_PX - y0), title, fill=INK, font=title_font
    )
    canvas.paste(body, ((width - body.width) // 2, top))
    return canvas


def arrows_shown(relations: Sequence[Sequence[str]]) -> list[str]:
    """How a drawing shows its process: one arrow per relation."""
    return [f"arrow from {a} to {b}" for a, b in relations]


def titled_panel(body: Image.Image, truth: PanelTruth, topic: Topic) -> RenderedPanel:
    """The panel: ``body`` under the topic's title, with its truth and the caption sentence of its kind."""
    return RenderedPanel(add_title(body, topic.title), truth, panel_description(truth.kind, topic))


def render_icon(size: int = 90) -> Image.Image:
    """A tiny flask pictogram with no text: too small to be a figure, so curation must drop it."""
    image = Image.new("RGB", (size, size), WHITE)
    draw = ImageDraw.Draw(image)
    neck, base = size * 0.38, size * 0.12
    outline = [
        (neck, base),
        (size - neck, base),
        (size - neck, size * 0.42),
        (size * 0.86, size * 0.86),
        (size * 0.14, size * 0.86),
        (neck, size * 0.42),
    ]
    draw.polygon(outline, outline=INK, width=3)
    draw.line([(size * 0.24, size * 0.68), (size * 0.76, size * 0.68)], fill=INK, width=3)
    return image
