"""What tests read back from a drawn diagram: the words Tesseract sees and the arrows a dot source draws."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import pytesseract
from PIL import Image


def ocr_words(png: bytes) -> set[str]:
    """Words Tesseract reads in the image; sparse-text mode suits boxes scattered on a canvas."""
    text = pytesseract.image_to_string(Image.open(io.BytesIO(png)), config="--psm 11")
    return set(re.findall(r"[A-Za-z]+", text))


def visible_edges(dot_source: str) -> list[str]:
    """The edge lines of a graphviz source that draw an arrow (invisible layout edges left out)."""
    return [line for line in dot_source.splitlines() if "->" in line and "invis" not in line]


FILL = "#dce6f2"


def draw_boxes(
    boxes: Sequence[str],
    edges: Sequence[tuple[int, int]],
    free: Sequence[str] = (),
    outlined: bool = False,
    arrowheads: bool = True,
    pad: float = 0.3,
) -> bytes:
    """A graphviz PNG: boxes (indexed labels, so one label may be drawn twice), edges between them (with or
    without arrowheads) and free text outside any box; ``pad`` (inches) keeps a one-row drawing tall
    enough that OCR takes its letters for text, not drawing."""
    import graphviz

    style = (
        {"style": "filled", "fillcolor": "white", "color": "black", "penwidth": "2"}
        if outlined
        else {"style": "rounded,filled", "fillcolor": FILL, "color": FILL}
    )
    graph = graphviz.Digraph(
        graph_attr={"rankdir": "TB", "dpi": "110", "bgcolor": "white", "pad": str(pad), "nodesep": "0.6"},
        node_attr={"shape": "box", "fontname": "DejaVu Sans", "fontsize": "24", "margin": "0.3,0.12", **style},
        edge_attr={
            "penwidth": "2", "arrowsize": "1.2", "color": "black", "arrowhead": "normal" if arrowheads else "none"
        },
    )  # fmt: skip
    for index, label in enumerate(boxes):
        graph.node(f"n{index}", label)
    for index, text in enumerate(free):
        graph.node(f"t{index}", text, shape="plaintext", style="")
    for src, dst in edges:
        graph.edge(f"n{src}", f"n{dst}")
    return graph.pipe(format="png")
