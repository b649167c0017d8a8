"""One renderer per single-track panel kind: process diagrams, molecules, circuits and law plots (the kinds
drawing several tracks at once: ``sciir.sample.combined``).

Every renderer draws dark text on white at a size Tesseract reads (labels at least 25 px), crops its
drawing to the ink and puts the title above it (``sciir.sample.drawing``). Style choices come from the
sample's one seeded ``random.Random``.
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from sciir.sample.captions import law_text, panel_description
from sciir.sample.drawing import PanelTruth, RenderedPanel, add_title, arrows_shown, crop_to_ink, titled_panel
from sciir.sample.topics import COMPONENT_NAMES, CircuitTopic, LawTopic, MoleculeTopic, ProcessTopic

_GRAPHVIZ_FONT = "DejaVu Sans"
_LABEL_PT = 22  # matplotlib and schemdraw labels, at 100 dpi about 30 px
_TICK_PT = 18
_LAW_PT = 20
_DPI = 100
# Boxes are light fills without a dark frame: Tesseract skips text enclosed by dark frames.
# Each fill is at least 30 levels below white, so curation sees a box (not background) and never
# cuts a label between its words.
_BOX_FILLS = ("#d9e4f2", "#dcecdc", "#efe4d2", "#e0e0e0")
_PLOT_COLOURS = ("#1f3b73", "#7a1f1f", "#1d5e2e", "#000000")


def _matplotlib_image(fig: Any) -> Image.Image:
    """Rasterise a matplotlib Figure (no metadata, no file)."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return Image.fromarray(np.asarray(canvas.buffer_rgba())).convert("RGB")


def flow_body(
    steps: Sequence[str], edges: Sequence[tuple[int, int]], rng: random.Random, margin: str = "0.25,0.08"
) -> Image.Image:
    """Filled boxes joined by arrows, top to bottom, drawn by graphviz ``dot`` and cropped to the ink;
    ``margin``: inches of fill around each label, across and down."""
    import graphviz

    fill = rng.choice(_BOX_FILLS)
    graph = graphviz.Digraph(
        graph_attr={
            "rankdir": "TB",
            "dpi": "72",
            "bgcolor": "white",
            "pad": "0.1",
            "nodesep": "0.35",
            "ranksep": "0.3",
        },
        node_attr={
            "shape": "box",
            "style": rng.choice(("rounded,filled", "filled")),
            "fillcolor": fill,
            "color": fill,
            "fontname": _GRAPHVIZ_FONT,
            "fontsize": "28",
            "margin": margin,
            "fontcolor": "black",
        },
        edge_attr={"penwidth": "2", "arrowsize": "1.1", "color": "black"},
    )
    for index, step in enumerate(steps):
        graph.node(f"s{index}", step)
    for src, dst in edges:
        graph.edge(f"s{src}", f"s{dst}")
    return crop_to_ink(Image.open(io.BytesIO(graph.pipe(format="png"))).convert("RGB"))


def render_process(topic: ProcessTopic, rng: random.Random) -> RenderedPanel:
    """Filled boxes joined by arrows, top to bottom, drawn by graphviz ``dot``."""
    body = flow_body(topic.steps, topic.edges, rng)
    relations = [[topic.steps[src], topic.steps[dst]] for src, dst in topic.edges]
    text = [topic.title, *topic.steps]
    shows = {"process": arrows_shown(relations)}
    truth = PanelTruth("process", topic.title, text, list(topic.steps), relations, text, shows)
    return titled_panel(body, truth, topic)


@dataclass(frozen=True)
class MoleculeDrawing:
    """A molecule drawn in black and white: the image (cropped to the ink), its formula and the symbols of
    its non-carbon atoms."""

    image: Image.Image
    formula: str
    symbols: list[str]


def _upright(molecule: Any, rotation: int) -> int:
    """``rotation`` turned a quarter when it would draw the molecule wider than tall."""
    import numpy as np

    positions = molecule.GetConformer().GetPositions()
    width, height = np.ptp(positions[:, 0]), np.ptp(positions[:, 1])
    return (rotation + 90) % 360 if (width > height) == (rotation in (0, 180)) else rotation


def molecule_body(
    name: str, smiles: str, rng: random.Random, size: tuple[int, int] = (560, 420), upright: bool = False
) -> MoleculeDrawing:
    """An RDKit 2D depiction of ``smiles`` (the molecule ``name``), rotated by ``rng`` (a quarter more when
    ``upright`` and it would be drawn wider than tall)."""
    from rdkit import Chem
    from rdkit.Chem import rdDepictor, rdMolDescriptors
    from rdkit.Chem.Draw import rdMolDraw2D

    molecule = Chem.MolFromSmiles(smiles)
    if molecule is None:
        raise ValueError(f"molecule {name!r}: RDKit cannot parse SMILES {smiles!r}")
    rdDepictor.Compute2DCoords(molecule)
    drawer = rdMolDraw2D.MolDraw2DCairo(*size)
    options = drawer.drawOptions()
    options.useBWAtomPalette()
    # rdkit-stubs types each drawing option's setter as taking the options (its generated signature is
    # (*args, **kwargs), the first being the options themselves); the values are numbers.
    options.minFontSize = 26  # type: ignore[assignment]
    options.bondLineWidth = 2  # type: ignore[assignment]
    rotation = rng.choice((0, 90, 180, 270))
    options.rotate = _upright(molecule, rotation) if upright else rotation  # type: ignore[assignment]
    drawer.DrawMolecule(molecule)
    drawer.FinishDrawing()
    body = Image.open(io.BytesIO(drawer.GetDrawingText())).convert("RGB")
    symbols = sorted({atom.GetSymbol() for atom in molecule.GetAtoms() if atom.GetSymbol() != "C"})
    return MoleculeDrawing(crop_to_ink(body), rdMolDescriptors.CalcMolFormula(molecule), symbols)


def render_molecule(topic: MoleculeTopic, rng: random.Random) -> RenderedPanel:
    """An RDKit 2D depiction in black and white, titled by the molecule's name."""
    drawing = molecule_body(topic.title, topic.smiles, rng)
    truth = PanelTruth(
        "molecule",
        topic.title,
        [topic.title, *drawing.symbols],
        [topic.title, drawing.formula],
        required_text=[topic.title],
        shows={"entity": [f"structural drawing of {topic.title}"]},
    )
    return RenderedPanel(
        add_title(drawing.image, topic.title), truth, panel_description("molecule", topic, drawing.formula)
    )


def _circuit_elements() -> Mapping[str, Callable[[], Any]]:
    """schemdraw element classes by component kind ("line" closes the loop)."""
    import schemdraw.elements as elm

    return {
        "source": elm.SourceV,
        "resistor": elm.Resistor,
        "capacitor": elm.Capacitor,
        "inductor": elm.Inductor2,
        "diode": elm.Diode,
        "line": elm.Line,
    }


def _fit_axes_to_drawing(fig: Any, axes: Any, bbox: Any, margin: float, pixels_per_unit: float) -> None:
    """Size the figure so one drawing unit is ``pixels_per_unit`` pixels, labels included."""
    axes.set_xlim(bbox.xmin - margin, bbox.xmax + margin)
    axes.set_ylim(bbox.ymin - margin, bbox.ymax + margin)
    axes.set_aspect("equal")
    axes.set_axis_off()
    fig.set_size_inches(
        (bbox.xmax - bbox.xmin + 2 * margin) * pixels_per_unit / _DPI,
        (bbox.ymax - bbox.ymin + 2 * margin) * pixels_per_unit / _DPI,
    )


def circuit_labels(topic: CircuitTopic) -> list[str]:
    """The designators a circuit draws: its source's, then its components'."""
    return [topic.source_label, *(label for _, label in topic.components)]


def circuit_body(topic: CircuitTopic, rng: random.Random) -> Image.Image:
    """A series loop by schemdraw: source up the left, components along the top, the last down the right."""
    import schemdraw
    from matplotlib.figure import Figure

    elements = _circuit_elements()
    fig = Figure(dpi=_DPI)
    axes = fig.add_axes((0, 0, 1, 1))
    # Serif labels: Tesseract misreads the sans "1" of "R1" or "C1" as "l".
    drawing = schemdraw.Drawing(
        canvas=axes, show=False, fontsize=_LABEL_PT, font="DejaVu Serif", unit=rng.choice((2.5, 3.0)), lw=2.5
    )
    source = drawing.add(elements["source"]().up().label(topic.source_label, loc="top", ofst=0.2))
    *along_top, (last_kind, last_label) = topic.components
    for kind, label in along_top:
        drawing.add(elements[kind]().right().label(label, ofst=0.2))
    drawing.add(elements[last_kind]().down().label(last_label, loc="bottom", ofst=0.3))
    drawing.add(elements["line"]().left().tox(source.start))
    drawing.draw(show=False)
    _fit_axes_to_drawing(fig, axes, drawing.get_bbox(), margin=1.5, pixels_per_unit=70)
    return crop_to_ink(_matplotlib_image(fig))


def circuit_truth(kind: str, topic: CircuitTopic, extra_text: Sequence[str] = ()) -> PanelTruth:
    """The truth of a circuit panel (with any text written beside the schematic)."""
    kinds = ["source", *(kind for kind, _ in topic.components)]
    text = [topic.title, *circuit_labels(topic), *extra_text]
    entities = list(dict.fromkeys(COMPONENT_NAMES[kind] for kind in kinds))
    shows = {"entity": [f"circuit schematic labelled {', '.join(circuit_labels(topic))}"]}
    return PanelTruth(kind, topic.title, text, entities, required_text=text, shows=shows)


def render_circuit(topic: CircuitTopic, rng: random.Random) -> RenderedPanel:
    """A schematic of the circuit, titled."""
    return titled_panel(circuit_body(topic, rng), circuit_truth("circuit", topic), topic)


_CURVES: Mapping[str, Callable[[float, float], float]] = {
    "linear": lambda x, c: c * x,
    "inverse": lambda x, c: c / x,
    "inverse_square": lambda x, c: c / (x * x),
    "decay": lambda x, c: 100.0 * math.exp(-x / c),
}
# Curves undefined at zero start at a tenth of the range.
_STARTS_AWAY_FROM_ZERO = frozenset({"inverse", "inverse_square"})
# Falling curves leave the upper right corner empty, rising ones the upper left: the law is written there.
_FALLING = frozenset({"inverse", "inverse_square", "decay"})


def _drawn_tick_labels(axes: Any) -> list[str]:
    """Tick label strings matplotlib drew inside the view range, x axis first."""
    (x_low, x_high), (y_low, y_high) = sorted(axes.get_xlim()), sorted(axes.get_ylim())
    x_ticks = [
        tick.get_text() for tick in axes.get_xticklabels() if x_low <= tick.get_position()[0] <= x_high
    ]
    y_ticks = [
        tick.get_text() for tick in axes.get_yticklabels() if y_low <= tick.get_position()[1] <= y_high
    ]
    return [text for text in (*x_ticks, *y_ticks) if text]


def _write_law(axes: Any, topic: LawTopic) -> str:
    """Write the law's equation ("V = I R") in the empty upper corner of the plot; returns the text."""
    text = law_text(topic)
    x, align = (0.94, "right") if topic.curve in _FALLING else (0.08, "left")
    axes.text(x, 0.93, text, transform=axes.transAxes, ha=align, va="top", fontsize=_LAW_PT, color="black")
    return text


def plot_body(topic: LawTopic, rng: random.Random) -> tuple[Image.Image, PanelTruth]:
    """The law's curve with noisy measurements and the law written in an empty corner (cropped to the
    ink), and the truth of a plot panel; the y label sits level above the axis so OCR reads it."""
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    coefficient = rng.choice(topic.coefficients)
    curve = _CURVES[topic.curve]
    start = topic.x_max / 10 if topic.curve in _STARTS_AWAY_FROM_ZERO else 0.0
    xs = np.linspace(start, topic.x_max, 200)
    measured_x = np.linspace(start, topic.x_max, 7)
    measured_y = [curve(x, coefficient) * (1 + rng.gauss(0.0, 0.03)) for x in measured_x]

    fig = Figure(figsize=(6.2, 4.6), dpi=_DPI)
    axes = fig.add_axes((0.17, 0.18, 0.78, 0.70))
    axes.plot(xs, [curve(x, coefficient) for x in xs], lw=3, color=rng.choice(_PLOT_COLOURS))
    axes.plot(measured_x, measured_y, "o", color="black", ms=8)
    axes.set_xlabel(topic.x_label, fontsize=_LABEL_PT)
    axes.set_ylabel(topic.y_label, fontsize=_LABEL_PT, rotation=0, ha="left", va="bottom")
    axes.yaxis.set_label_coords(-0.17, 1.03)
    axes.tick_params(labelsize=_TICK_PT)
    axes.xaxis.set_major_locator(MaxNLocator(5))
    axes.yaxis.set_major_locator(MaxNLocator(5))
    written = _write_law(axes, topic)
    image = _matplotlib_image(fig)  # draws, so tick labels below are the drawn ones

    text = [topic.title, topic.x_label, topic.y_label, written]
    entities = [label.split(" (")[0] for label in (topic.x_label, topic.y_label)]
    shows = {
        "law": [f"written equation {written}", f"plotted curve of {topic.y_label} against {topic.x_label}"]
    }
    truth = PanelTruth(
        "plot", topic.title, [*text, *_drawn_tick_labels(axes)], entities, required_text=text, shows=shows
    )
    return crop_to_ink(image), truth


def render_plot(topic: LawTopic, rng: random.Random) -> RenderedPanel:
    """A law plot, titled."""
    body, truth = plot_body(topic, rng)
    return titled_panel(body, truth, topic)


RENDERERS: Mapping[str, Callable[[Any, random.Random], RenderedPanel]] = {
    "process": render_process,
    "molecule": render_molecule,
    "circuit": render_circuit,
    "plot": render_plot,
}
