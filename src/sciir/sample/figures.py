"""One figure of the embedded sample drawn from its plan: its panels rendered and laid out, its PNG bytes
(no metadata, so equal pixels give equal bytes), its truth per panel and its caption."""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from sciir.sample.captions import caption_text, caption_title
from sciir.sample.compose import PanelBounds, layout_figure
from sciir.sample.drawing import RenderedPanel, render_icon
from sciir.sample.panel_kinds import NATIVE_TRACKS, render_panel
from sciir.sample.plan import FigurePlan, FigureSlot
from sciir.sample.topics import Topic

ICON_CAPTION = "Pictogram of a laboratory flask."


@dataclass(frozen=True)
class DrawnFigure:
    """A figure ready to write: PNG bytes, truth (none for the icon) and caption."""

    figure_id: str
    png: bytes
    truth: dict[str, Any] | None
    kind: str
    caption_title: str
    caption: str


def encode_png(image: Image.Image) -> bytes:
    """PNG bytes with no metadata chunks (no software name, no time), so equal pixels give equal bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=6)
    return buffer.getvalue()


def _panel_truth(index: int, panel: RenderedPanel, box: Sequence[int]) -> dict[str, Any]:
    """The truth entry of one panel."""
    truth = panel.truth
    return {
        "panel_index": index,
        "kind": truth.kind,
        "title": truth.title,
        "labels": truth.labels,
        "entities": truth.entities,
        "relations": truth.relations,
        "required_text": truth.required_text,
        "shows": {track: list(views) for track, views in truth.shows.items()},
        "bbox": list(box),
    }


def _track_facts(slot: FigureSlot, topics: Sequence[Topic]) -> list[str]:
    """Fact sentences for the figure's tracks that no panel shows by drawing alone."""
    native = {track for kind in slot.kinds for track in NATIVE_TRACKS[kind]}
    return [topics[0].facts[track] for track in slot.tracks if track not in native]


def _rescaled(
    image: Image.Image, boxes: Sequence[PanelBounds], scale: float
) -> tuple[Image.Image, list[PanelBounds]]:
    """The figure and its panel boxes at ``scale`` (Lanczos), as a figure is published at another size."""
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    scaled = [
        (
            round(x0 * scale),
            round(y0 * scale),
            min(size[0], round(x1 * scale)),
            min(size[1], round(y1 * scale)),
        )
        for x0, y0, x1, y1 in boxes
    ]
    return image.resize(size, Image.Resampling.LANCZOS), scaled


def draw_figure(plan: FigurePlan, figure_id: str, rng: random.Random, scale: float = 1.0) -> DrawnFigure:
    """Render every panel, lay them out at ``scale`` and assemble the figure's truth and caption."""
    if plan.slot is None:
        return DrawnFigure(
            figure_id, encode_png(render_icon()), None, "icon", "Laboratory icon.", ICON_CAPTION
        )
    panels = [
        render_panel(kind, topic, rng) for kind, topic in zip(plan.slot.kinds, plan.topics, strict=True)
    ]
    image, boxes = layout_figure([panel.image for panel in panels], rng)
    if scale != 1.0:
        image, boxes = _rescaled(image, boxes, scale)
    kind = panels[0].truth.kind if len(panels) == 1 else "composite"
    panel_truths = [
        _panel_truth(index, panel, box) for index, (panel, box) in enumerate(zip(panels, boxes, strict=True))
    ]
    truth = {"figure_id": figure_id, "kind": kind, "tracks": list(plan.slot.tracks), "panels": panel_truths}
    caption = caption_text(
        [panel.description for panel in panels],
        _track_facts(plan.slot, plan.topics),
        third_party=plan.reject_reason == "third_party",
    )
    return DrawnFigure(
        figure_id,
        encode_png(image),
        truth,
        kind,
        caption_title([panel.truth.title for panel in panels]),
        caption,
    )
