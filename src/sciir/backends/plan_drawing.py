"""Drawing a :class:`sciir.backends.plan_faults.DrawingPlan` (labelled boxes and arrows) with graphviz, shared by the
code-based generators.

:class:`PlanDrawingGenerator` is the common generator: a subclass only says where its plan comes from
(``programmatic``: the prompt text; ``plan_reference``: the annotation's plan, as a reference). It
draws the labels in large type, so OCR can read them, one arrow per edge and a titled dashed frame per group
(an AIBench phase), and records what it drew (``drawn_labels``, ``drawn_edges``, ``drawn_groups``). Configured with ``faults`` it draws the plan after deterministic
edits from :mod:`sciir.backends.plan_faults`, each one recorded (``planted_faults``).
"""

from __future__ import annotations

import io
import math
import textwrap
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import graphviz
from PIL import Image

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator
from sciir.backends.plan_faults import DrawingPlan, FaultConfig, plant_faults

FONT_NAME = "DejaVu Sans"
POINTS_PER_INCH = 72
# A two-box plan scaled to fill the canvas would have letters hundreds of pixels tall.
MAX_UPSCALE = 3.0
WRAP_CHARS = 20
# Pale filled boxes: a dark outline close to the text breaks Tesseract's line finding.
BOX_FILL = "#EEF3FA"
BOX_BORDER = "#B8C6DA"
# A group's frame: dashed and faint. A solid frame crosses the arrows and hides them from diagram
# analysis, a tinted area hides the boxes; a faint dash costs only OCR's certainty that nothing else
# is written (a few dashes read as text-like marks).
GROUP_BORDER = "#E2E2E2"


class PlanError(ValueError):
    """A request with nothing drawable; the message names the sample and what is wrong."""


def _node_label(label: str) -> str:
    """The label as graphviz text: wrapped into lines, backslashes and ``<...>`` taken literally."""
    lines = textwrap.wrap(label, WRAP_CHARS, break_long_words=False) or [label]
    text: str = graphviz.nohtml("\\n".join(line.replace("\\", "\\\\") for line in lines))  # a str subclass
    return text


def _reading_order_rows(dot: graphviz.Digraph, node_ids: list[str]) -> None:
    """Lay out unconnected labels as a near-square grid read left to right, top to bottom.

    The invisible edges only pin the order; they are never drawn as arrows.
    """
    per_row = math.ceil(math.sqrt(len(node_ids)))
    rows = [node_ids[start : start + per_row] for start in range(0, len(node_ids), per_row)]
    for row in rows:
        with dot.subgraph() as same_rank:
            same_rank.attr(rank="same")
            for left, right in zip(row, row[1:], strict=False):
                same_rank.edge(left, right, style="invis")
    for upper, lower in zip(rows, rows[1:], strict=False):
        dot.edge(upper[0], lower[0], style="invis")


def _draw_groups(
    dot: graphviz.Digraph, plan: DrawingPlan, node_ids: dict[str, str], font_size: int
) -> set[str]:
    """Each group as a titled, dashed frame around its boxes (a graphviz cluster, which must declare its
    nodes itself); returns the labels drawn in a group."""
    grouped: set[str] = set()
    for index, (title, members) in enumerate(plan.groups):
        with dot.subgraph(name=f"cluster_{index}") as cluster:
            cluster.attr(
                label=_node_label(title),
                style="dashed,rounded",
                color=GROUP_BORDER,
                fontname=FONT_NAME,
                fontsize=str(font_size),
                margin="24",
            )
            for member in members:
                if member not in grouped:
                    cluster.node(node_ids[member], label=_node_label(member))
                    grouped.add(member)
    return grouped


def plan_to_dot(plan: DrawingPlan, font_size: int) -> graphviz.Digraph:
    """A top-to-bottom DOT graph: one pale box per label, one black arrow per edge, a titled dashed frame
    per group, on white."""
    dot = graphviz.Digraph(
        graph_attr={"bgcolor": "white", "rankdir": "TB", "pad": "0.3", "nodesep": "0.5", "ranksep": "0.6"},
        node_attr={
            "shape": "box",
            "style": "rounded,filled",
            "fillcolor": BOX_FILL,
            "color": BOX_BORDER,
            "fontname": FONT_NAME,
            "fontsize": str(font_size),
            "margin": "0.3,0.15",
            "penwidth": "2",
        },
        edge_attr={"penwidth": "2", "arrowsize": "1.3"},
    )
    node_ids = {label: f"n{index}" for index, label in enumerate(plan.labels)}
    grouped = _draw_groups(dot, plan, node_ids, font_size)
    for label, node_id in node_ids.items():
        if label not in grouped:
            dot.node(node_id, label=_node_label(label))
    for src, dst in plan.edges:
        dot.edge(node_ids[src], node_ids[dst])
    if not plan.edges:
        _reading_order_rows(dot, list(node_ids.values()))
    return dot


def _layout_inches(dot: graphviz.Digraph) -> tuple[float, float]:
    """Width and height of the laid-out graph, from graphviz's ``plain`` output (no raster)."""
    first_line = dot.pipe(format="plain", encoding="utf-8").splitlines()[0]
    _, _, width, height = first_line.split()
    return float(width), float(height)


def fit_on_canvas(image: Image.Image, width: int, height: int) -> Image.Image:
    """Centre ``image`` on a white ``width`` x ``height`` canvas, shrinking it only if it overflows."""
    image = image.convert("RGB")
    image.thumbnail((width, height), Image.Resampling.LANCZOS)
    canvas = Image.new("RGB", (width, height), "white")
    canvas.paste(image, ((width - image.width) // 2, (height - image.height) // 2))
    return canvas


def render_png(dot: graphviz.Digraph, width: int, height: int) -> tuple[bytes, float]:
    """Render at the resolution that fills ``width`` x ``height``, so text stays vector-sharp.

    Returns the PNG bytes and the scale applied to graphviz's natural size.
    """
    width_in, height_in = _layout_inches(dot)
    scale = min(width / (width_in * POINTS_PER_INCH), height / (height_in * POINTS_PER_INCH), MAX_UPSCALE)
    dot.graph_attr["dpi"] = f"{POINTS_PER_INCH * scale:.3f}"
    raster = Image.open(io.BytesIO(dot.pipe(format="png")))
    buffer = io.BytesIO()
    fit_on_canvas(raster, width, height).save(buffer, format="PNG")
    return buffer.getvalue(), scale


class PlanDrawingGenerator(ImageGenerator):
    """Draws one plan per request as a graphviz diagram; subclasses say where the plan comes from.

    Args:
        faults: a :class:`sciir.backends.plan_faults.FaultConfig` as a dict; when given, each sample's plan is
            edited before drawing and the edits are recorded in ``meta["planted_faults"]``.
        font_size: label size in points at the natural scale (the drawing is then fitted to the canvas).
    """

    backend_name: str = "plan_drawing"

    def __init__(self, *, faults: dict[str, Any] | None = None, font_size: int = 28, **extra: Any) -> None:
        super().__init__(faults=faults, font_size=font_size, **extra)
        self.faults = FaultConfig.model_validate(faults) if faults is not None else None
        self.font_size = font_size

    @abstractmethod
    def read_plan(self, request: GenerationRequest) -> DrawingPlan:
        """The plan to draw for ``request``.

        Raises:
            PlanError: nothing drawable; the message names the sample.
        """

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, in order; a bad plan or a graphviz error fails only its request."""
        return [self._draw(request) for request in requests]

    def _draw(self, request: GenerationRequest) -> GenerationResult:
        try:
            plan = self.read_plan(request)
        except PlanError as error:
            return GenerationResult(sample_id=request.sample_id, failure=str(error))
        planted: list[dict[str, Any]] = []
        if self.faults is not None:
            plan, planted = plant_faults(plan, self.faults, request.sample_id)
        try:
            image, scale = render_png(plan_to_dot(plan, self.font_size), request.width, request.height)
        except (graphviz.ExecutableNotFound, graphviz.CalledProcessError, OSError, ValueError) as error:
            reason = f"graphviz could not draw the plan for sample {request.sample_id}: {error}"
            return GenerationResult(sample_id=request.sample_id, failure=reason)
        meta = {
            "backend": self.backend_name,
            "drawn_labels": list(plan.labels),
            "drawn_edges": [list(edge) for edge in plan.edges],
            "drawn_groups": [[title, list(members)] for title, members in plan.groups],
            "planted_faults": planted,
            "scale": round(scale, 4),
        }
        return GenerationResult(sample_id=request.sample_id, image=image, meta=meta)
