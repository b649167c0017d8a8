"""Panels whose drawing shows two or three tracks at once (``sciir.sample.panel_kinds.NATIVE_TRACKS``).

- ``circuit_law``: a circuit schematic with its governing equation written below it (entity, law);
- ``reaction``: two molecules drawn by RDKit, each named in a pale box, the boxes joined by a reaction
  arrow (entity, process);
- ``rate_reaction``: the same with its rate law written below (entity, process, law);
- ``staged_plot``: a law plot above the stages of its measurement, boxes joined by arrows (law, process).

Parts are stacked with gaps narrower than curation's smallest gutter, so a panel never looks like two;
text is drawn at the sizes the single-track renderers use, which Tesseract reads.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from PIL import Image, ImageDraw

from sciir.sample.drawing import (
    INK,
    TITLE_GAP_PX,
    WHITE,
    PanelTruth,
    RenderedPanel,
    arrows_shown,
    crop_to_ink,
    font,
    text_box,
    titled_panel,
)
from sciir.sample.renderers import circuit_body, circuit_truth, flow_body, molecule_body, plot_body
from sciir.sample.topics import CircuitTopic, LawTopic, ReactionTopic

# Gap between the parts of one panel: curation cuts along white gutters of 12 px or more.
PART_GAP_PX = TITLE_GAP_PX
EQUATION_PX = 28
NAME_PX = 28
_NAME_PAD = (14, 8)
_NAME_FILLS = ("#d9e4f2", "#dcecdc", "#efe4d2")
# Reaction arrow: shaft width, head length and half width, clearance from each box, and the least
# distance between the two name boxes (closer names are read by OCR as one line with the arrow).
_SHAFT_PX = 3
_HEAD = (20, 9)
_ARROW_CLEAR_PX = 4
_MIN_BOX_DISTANCE_PX = 200
# White kept around a part set flush against another (its neighbour's margin is the rest of the gap).
_TIGHT_PAD_PX = 2
_MOLECULE_SIZE = (340, 340)  # square: two side by side stay inside the accepted aspect ratio


def stack(parts: Sequence[Image.Image], gap: int = PART_GAP_PX) -> Image.Image:
    """Parts one above the other, centred, ``gap`` pixels apart."""
    width = max(part.width for part in parts)
    height = sum(part.height for part in parts) + gap * (len(parts) - 1)
    canvas = Image.new("RGB", (width, height), WHITE)
    top = 0
    for part in parts:
        canvas.paste(part, ((width - part.width) // 2, top))
        top += part.height + gap
    return canvas


def side_by_side(parts: Sequence[Image.Image], gap: int = PART_GAP_PX) -> Image.Image:
    """Parts left to right, centred vertically, ``gap`` pixels apart."""
    turned = stack([part.transpose(Image.Transpose.TRANSPOSE) for part in parts], gap)
    return turned.transpose(Image.Transpose.TRANSPOSE)


def text_line(text: str, size: int = EQUATION_PX) -> Image.Image:
    """``text`` in black serif (Tesseract reads a serif "1" as a one), cropped to a small margin."""
    line_font = font(size, serif=True)
    x0, y0, x1, y1 = text_box(line_font, text)
    canvas = Image.new("RGB", (x1 - x0 + 8, y1 - y0 + 8), WHITE)
    ImageDraw.Draw(canvas).text((4 - x0, 4 - y0), text, fill=INK, font=line_font)
    return canvas


def _name_box_size(name: str) -> tuple[int, int]:
    x0, y0, x1, y1 = text_box(font(NAME_PX), name)
    return x1 - x0 + 2 * _NAME_PAD[0], y1 - y0 + 2 * _NAME_PAD[1]


def _draw_name_box(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], name: str, fill: str) -> None:
    """A pale box without a dark frame (Tesseract skips framed text) holding ``name``."""
    draw.rectangle(box, fill=fill)
    x0, y0, _, _ = text_box(font(NAME_PX), name)
    draw.text((box[0] + _NAME_PAD[0] - x0, box[1] + _NAME_PAD[1] - y0), name, fill=INK, font=font(NAME_PX))


def _draw_arrow(draw: ImageDraw.ImageDraw, start: int, end: int, y: int) -> None:
    """A horizontal arrow from x ``start`` to x ``end`` with a filled head."""
    length, half = _HEAD
    draw.line([(start, y), (end - length, y)], fill=INK, width=_SHAFT_PX)
    draw.polygon([(end - length, y - half), (end, y), (end - length, y + half)], fill=INK)


def reaction_scheme(topic: ReactionTopic, rng: random.Random) -> tuple[Image.Image, list[str]]:
    """Reactant and product drawn side by side, each above its name box, an arrow from box to box, with a
    white margin; returns the image and the element symbols drawn."""
    drawings = [
        molecule_body(name, smiles, rng, _MOLECULE_SIZE, upright=True)
        for name, smiles in ((topic.reactant, topic.reactant_smiles), (topic.product, topic.product_smiles))
    ]
    # Bonds flush above the boxes: their pale padding is no ink, so any more white would read as a gutter.
    drawings = [replace(drawing, image=crop_to_ink(drawing.image, pad=0)) for drawing in drawings]
    names = (topic.reactant, topic.product)
    boxes = [_name_box_size(name) for name in names]
    columns = [max(d.image.width, b[0]) for d, b in zip(drawings, boxes, strict=True)]
    top_height = max(d.image.height for d in drawings)
    box_height = max(b[1] for b in boxes)
    # The boxes sit centred in their columns; widen the space between columns until they are far apart.
    between = max(
        PART_GAP_PX, _MIN_BOX_DISTANCE_PX - (columns[0] - boxes[0][0] + columns[1] - boxes[1][0]) // 2
    )
    width = columns[0] + between + columns[1]
    canvas = Image.new("RGB", (width, top_height + PART_GAP_PX + box_height), WHITE)
    draw = ImageDraw.Draw(canvas)
    fill = rng.choice(_NAME_FILLS)
    lefts = (0, columns[0] + between)
    placed = []
    for left, column, drawing, name, (box_w, box_h) in zip(
        lefts, columns, drawings, names, boxes, strict=True
    ):
        canvas.paste(
            drawing.image, (left + (column - drawing.image.width) // 2, top_height - drawing.image.height)
        )
        x0 = left + (column - box_w) // 2
        box = (x0, top_height + PART_GAP_PX, x0 + box_w, top_height + PART_GAP_PX + box_h)
        _draw_name_box(draw, box, name, fill)
        placed.append(box)
    middle = (placed[0][1] + placed[0][3]) // 2
    _draw_arrow(draw, placed[0][2] + _ARROW_CLEAR_PX, placed[1][0] - _ARROW_CLEAR_PX, middle)
    symbols = sorted({symbol for drawing in drawings for symbol in drawing.symbols})
    return crop_to_ink(canvas), symbols


def _reaction_truth(kind: str, topic: ReactionTopic, symbols: Sequence[str], rate: bool) -> PanelTruth:
    relations = [[topic.reactant, topic.product]]
    text = [topic.title, topic.reactant, topic.product, *([topic.rate_law] if rate else [])]
    shows: dict[str, list[str]] = {
        "entity": [f"structural drawing of {topic.reactant}", f"structural drawing of {topic.product}"],
        "process": arrows_shown(relations),
    }
    if rate:
        shows["law"] = [f"written equation {topic.rate_law}"]
    return PanelTruth(
        kind, topic.title, [*text, *symbols], [topic.reactant, topic.product], relations, text, shows
    )


def render_reaction(topic: ReactionTopic, rng: random.Random) -> RenderedPanel:
    """A one-step reaction scheme of named molecules (entity, process)."""
    scheme, symbols = reaction_scheme(topic, rng)
    truth = _reaction_truth("reaction", topic, symbols, rate=False)
    return titled_panel(scheme, truth, topic)


def render_rate_reaction(topic: ReactionTopic, rng: random.Random) -> RenderedPanel:
    """A reaction scheme with its rate law written below (entity, process, law)."""
    scheme, symbols = reaction_scheme(topic, rng)
    # Close under the name boxes: their pale padding is no ink, so a wider gap would read as a gutter.
    body = stack([scheme, text_line(topic.rate_law)], gap=0)
    truth = _reaction_truth("rate_reaction", topic, symbols, rate=True)
    return titled_panel(body, truth, topic)


def render_circuit_law(topic: CircuitTopic, rng: random.Random) -> RenderedPanel:
    """A circuit schematic with its equation written below (entity, law)."""
    body = stack([circuit_body(topic, rng), text_line(topic.equation)], gap=0)
    truth = circuit_truth("circuit_law", topic, [topic.equation])
    truth = replace(truth, shows={**truth.shows, "law": [f"written equation {topic.equation}"]})
    return titled_panel(body, truth, topic)


def render_staged_plot(topic: LawTopic, rng: random.Random) -> RenderedPanel:
    """A law plot beside the stages of its measurement, boxes joined by arrows top to bottom (a row left to
    right is read by OCR as one line with its arrows) (law, process)."""
    plot, truth = plot_body(topic, rng)
    edges = tuple((index, index + 1) for index in range(len(topic.stages) - 1))
    # Narrow fills, a tight margin and no gap: curation cuts at 12 px of white between the plot and the
    # boxes' fill, and a reader that takes the pale fill for white must see less than a gutter too.
    stages = crop_to_ink(flow_body(topic.stages, edges, rng, margin="0.1,0.08"), pad=_TIGHT_PAD_PX)
    body = side_by_side([plot, stages], gap=0)
    relations = [[topic.stages[a], topic.stages[b]] for a, b in edges]
    truth = replace(
        truth,
        kind="staged_plot",
        labels=[*truth.labels, *topic.stages],
        relations=relations,
        required_text=[*truth.required_text, *topic.stages],
        shows={**truth.shows, "process": arrows_shown(relations)},
    )
    return titled_panel(body, truth, topic)


# Each renderer is named after its kind: render_<kind>.
COMBINED_RENDERERS: Mapping[str, Callable[[Any, random.Random], RenderedPanel]] = {
    renderer.__name__.removeprefix("render_"): renderer
    for renderer in (render_circuit_law, render_reaction, render_rate_reaction, render_staged_plot)
}
