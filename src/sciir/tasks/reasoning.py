"""The ``reasoning`` task (SciIR appendix F): a figure's terms, the text it must render, the directed relations
between its labels, its laws, the Sci-RCoT narrating them, and per reasoning track the terms and
visualisations the image shows (the image first, then the caption).

Offline (``answer_by_sight``), from what the readers see and the request's texts only: required text =
label-like lines read in the image; terms = those labels plus caption words that are also visible;
relations = arrows read between labelled shapes, and pairs of visible labels that one caption or methods
sentence states explicitly where the image cannot settle them (``sciir.tasks.relations``); laws = the
labels that write a law or equation, else the caption's sentences that state one; the Sci-RCoT narrated
from these; per track, what the image itself shows (``track_sights``: arrows between labelled shapes for
the process, equations written and plot axes for the law, labelled line art for entity structure); a track
the image does not show gets empty lists, whatever the caption says.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
from pydantic import BaseModel, Field, model_validator

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.readers.diagram import Diagram, drawn_relations, grey_levels, read_diagram
from sciir.backends.readers.drawings import PixelBox, PlotAxes, line_art, near, plot_axes
from sciir.backends.readers.tesseract import decode_png
from sciir.backends.readers.text import OcrReading
from sciir.backends.rule_based import Sight
from sciir.tasks.annotation import (
    TRACKS,
    AnnotationTask,
    NonEmpty,
    image_of,
    quoted,
    sentences,
    sentences_with_cues,
    unique,
    word_start,
)
from sciir.tasks.relations import figure_relations
from sciir.tasks.track_scores import LAW_VOCABULARY, names_a_law

Relation = Annotated[list[NonEmpty], Field(min_length=2, max_length=2)]
# Labels read within this many pixels of a drawing name or annotate it.
LABEL_REACH_PX = 40
_EQUATION = re.compile(r"=|\u221d|\u2248")

# Caption words naming the kind of figure (``figure_kind`` decides which sentence is asked first;
# within a sentence the earliest word wins, since a description names the drawing before its subject).
FIGURE_KIND_CUES: dict[str, tuple[str, ...]] = {
    "flow diagram": ("workflow", "pathway", "flow chart", "flowchart"),
    "circuit schematic": ("circuit", "schematic"),
    "structural drawing": ("structure", "molecule"),
    "data plot": ("plot", "graph", "curve", "axis", "axes", "versus", "relationship between"),
}

_STOPWORDS = frozenset(
    "the and for with from into onto that this these those their which where when while shown shows "
    "show figure panel each between over under after before through during using used are was were "
    "has have been its also then than".split()
)
# "(b) " before the sentence describing panel b of a multi-panel caption.
_PANEL_LETTER = re.compile(r"^\([a-z]\)\s+")
_KIND_PATTERNS = {kind: [word_start(w) for w in words] for kind, words in FIGURE_KIND_CUES.items()}


class TrackEvidence(BaseModel):
    """What the image (then the caption) shows of one track: its terms, and how the image draws them
    ("arrow from Filtration to Disinfection", "written equation V = I R"); both empty when not shown."""

    terms: list[NonEmpty]
    visualizations: list[NonEmpty]

    @model_validator(mode="after")
    def _unique_items(self) -> TrackEvidence:
        self.terms, self.visualizations = unique(self.terms), unique(self.visualizations)
        return self

    @property
    def shown(self) -> bool:
        """Terms and visualisations both: the track is shown (SciIR C.2)."""
        return bool(self.terms) and bool(self.visualizations)


class TracksEvidence(BaseModel):
    """Terms and visualisations per reasoning track (SciIR appendix F)."""

    entity: TrackEvidence
    process: TrackEvidence
    law: TrackEvidence

    def of(self, track: str) -> TrackEvidence:
        evidence: TrackEvidence = getattr(self, track)  # one of the three fields above
        return evidence


class Reasoning(BaseModel):
    """Terms, text to render, directed relations between labels, laws, the Sci-RCoT narration, and the
    terms and visualisations per track (``tracks``; null from an annotator that does not give them)."""

    terms: list[NonEmpty]
    required_text: list[NonEmpty]
    relations: list[Relation]
    laws: list[NonEmpty]
    sci_rcot: NonEmpty
    tracks: TracksEvidence | None = None

    @model_validator(mode="after")
    def _relations_join_labels(self) -> Reasoning:
        self.terms, self.required_text = unique(self.terms), unique(self.required_text)
        self.laws = unique(self.laws)
        labels = set(self.terms) | set(self.required_text)
        unknown = sorted({end for pair in self.relations for end in pair} - labels)
        if unknown:
            raise ValueError(f"relations name {unknown}, which are neither terms nor required_text")
        if self.tracks is not None:
            stray = sorted({term for track in TRACKS for term in self.tracks.of(track).terms} - labels)
            if stray:
                raise ValueError(f"tracks name terms {stray}, which are neither terms nor required_text")
        return self


# ---- offline: what the image shows, then the caption


def _alphabetic_share(text: str) -> float:
    visible = [c for c in text if not c.isspace()]
    return sum(c.isalpha() for c in visible) / len(visible) if visible else 0.0


def plausible_labels(reading: OcrReading, min_confidence: float, min_alpha: float = 0.5) -> list[str]:
    """Lines read in the image that look like labels: confident, two characters or more, starting
    with a letter or digit, at least half letters ("R1" is a label, "2.5" a tick)."""
    labels = [
        line.text
        for line in reading.lines
        if line.confidence >= min_confidence
        and len(line.text) >= 2
        and line.text[0].isalnum()
        and _alphabetic_share(line.text) >= min_alpha
    ]
    return list(dict.fromkeys(labels))


def visible_caption_terms(
    caption: str, reading: OcrReading, labels: Sequence[str], min_confidence: float
) -> list[str]:
    """Caption words that were also read in the image but are not already part of a label."""
    seen = {
        w.text.casefold().strip(".,;:()")
        for line in reading.lines
        for w in line.words
        if w.confidence >= min_confidence
    }
    in_labels = {word.casefold() for label in labels for word in label.split()}
    words = re.findall(r"[A-Za-z][A-Za-z\-]{3,}", caption)
    return list(
        dict.fromkeys(
            w
            for w in words
            if w.casefold() in seen and w.casefold() not in in_labels and w.casefold() not in _STOPWORDS
        )
    )


def _gap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Characters between two spans of a text (0 when they touch or overlap)."""
    return max(0, b[0] - a[1], a[0] - b[1])


def figure_kind(caption: str, labels: Sequence[str] = ()) -> str:
    """The kind of figure the caption names ("scientific figure" when it names none).

    A caption may describe several panels; the kind word that describes this image is taken from
    the sentence naming the most labels read in the image, and within it (or among equals) the
    one closest to such a label ("structure of the Dopamine molecule"); then caption order.
    """
    named = [word_start(label) for label in labels]
    ranked: list[tuple[tuple[float, ...], str]] = []
    for position, sentence in enumerate(sentences(caption)):
        label_spans = [match.span() for pattern in named for match in pattern.finditer(sentence)]
        hits = sum(bool(pattern.search(sentence)) for pattern in named)
        for kind, patterns in _KIND_PATTERNS.items():
            for match in (m for pattern in patterns for m in pattern.finditer(sentence)):
                distance = min((_gap(span, match.span()) for span in label_spans), default=math.inf)
                ranked.append(((-hits, distance, position, match.start()), kind))
    return min(ranked)[1] if ranked else "scientific figure"


def background_name(png: bytes) -> str:
    """White, light or dark, from the mean colour of the image border."""
    pixels = np.asarray(decode_png(png).convert("RGB"), dtype=float)
    border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    mean = border.mean(axis=0)
    if mean.min() > 235:
        return "white"
    return "light" if mean.mean() > 160 else "dark"


def narrate_rcot(
    style: str,
    required_text: Sequence[str],
    terms: Sequence[str],
    relations: Sequence[tuple[str, str]],
    law_statements: Sequence[str],
) -> str:
    """Sci-RCoT in the paper's order: style, required text, entity structure, topology, process and law."""
    arrows = "; ".join(f"{a} -> {b}" for a, b in relations)
    parts = [
        f"Style: {style}.",
        f"Required text: {quoted(required_text)}." if required_text else "Required text: none was read.",
        f"Entity structure: {len(terms)} labelled element{'s' if len(terms) > 1 else ''}: {quoted(terms)}."
        if terms
        else "Entity structure: no labelled elements were read.",
        f"Topology: arrows connect {arrows}."
        if relations
        else "Topology: no connections between labels are stated.",
        "Process: " + ", then ".join(f"{a} leads to {b}" for a, b in relations) + "." if relations else "",
        f"Law: {' '.join(law_statements)}" if law_statements else "",
    ]
    return " ".join(part for part in parts if part)


def stated_laws(caption: str, labels: Sequence[str]) -> list[str]:
    """The laws a figure states: its labels that write a law or an equation (the image first), else the
    caption's sentences with law vocabulary."""
    written = [label for label in labels if names_a_law(label)]
    return written or [_PANEL_LETTER.sub("", s) for s in sentences_with_cues(caption, LAW_VOCABULARY)]


@dataclass(frozen=True)
class TrackSight:
    """What the image shows of one track: the terms that show it and how it is drawn."""

    terms: list[str] = field(default_factory=list)
    visualizations: list[str] = field(default_factory=list)

    @property
    def seen(self) -> bool:
        return bool(self.terms) and bool(self.visualizations)


def is_equation(label: str) -> bool:
    """A label that writes an equation or proportionality ("V = I R", "rate = k [A]")."""
    return bool(_EQUATION.search(label))


def law_sight(labels: Sequence[str], axes: PlotAxes | None) -> TrackSight:
    """Equations written in the image and the quantities of plot axes."""
    equations = [label for label in labels if is_equation(label)]
    views = [f"written equation {equation}" for equation in equations]
    quantities = [label for label in (axes.y_label, axes.x_label) if label] if axes else []
    if axes is not None:
        if len(quantities) == 2:
            views.append(f"plotted curve of {quantities[0]} against {quantities[1]}")
        else:
            views.append("plot axes with numbered ticks")
    return TrackSight(list(dict.fromkeys([*equations, *quantities])), views)


def entity_sight(
    reading: OcrReading, labels: Sequence[str], drawings: Sequence[PixelBox], axes: PlotAxes | None
) -> TrackSight:
    """Each structural drawing with the labels read on or beside it (equations and axis quantities aside);
    an unlabelled drawing is not named, so it gives nothing."""
    taken = {axes.x_label, axes.y_label} if axes else set()
    terms: list[str] = []
    views: list[str] = []
    for art in drawings:
        named = [
            line.text
            for line in reading.lines
            if line.text in labels
            and line.text not in taken
            and not is_equation(line.text)
            and near(line.box, art, LABEL_REACH_PX)
        ]
        named = list(dict.fromkeys(named))
        if named:
            terms.extend(named)
            views.append(f"structural drawing labelled {', '.join(named)}")
    return TrackSight(list(dict.fromkeys(terms)), views)


def process_sight(drawn: Sequence[tuple[str, str]]) -> TrackSight:
    """The arrows read between labelled shapes."""
    terms = list(dict.fromkeys(end for pair in drawn for end in pair))
    return TrackSight(terms, [f"arrow from {a} to {b}" for a, b in drawn])


def track_sights(
    grey: np.ndarray,
    reading: OcrReading,
    diagram: Diagram,
    labels: Sequence[str],
    drawn: Sequence[tuple[str, str]],
) -> dict[str, TrackSight]:
    """Per track (entity, process, law), what the image shows of it; an empty ``TrackSight`` where
    nothing is seen."""
    axes = plot_axes(grey, reading, labels)
    sights = {
        "entity": entity_sight(reading, labels, line_art(grey, reading, diagram, labels, axes), axes),
        "process": process_sight(drawn),
        "law": law_sight(labels, axes),
    }
    return {track: sight if sight.seen else TrackSight() for track, sight in sights.items()}


class _TextContext(BaseModel):
    caption: str
    methods_text: str = ""


def answer_by_sight(request: VLMRequest, sight: Sight) -> VLMResult:
    """Labels, terms, relations, laws, the Sci-RCoT and what the image shows per track (module docstring)."""
    context = _TextContext.model_validate(request.context)
    image = image_of(request)
    reading = sight.read(image)
    labels = plausible_labels(reading, sight.min_confidence)
    terms = labels + visible_caption_terms(context.caption, reading, labels, sight.min_confidence)
    diagram = read_diagram(image, reading)
    relations = figure_relations(diagram, labels, f"{context.caption}\n{context.methods_text}")
    laws = stated_laws(context.caption, labels)
    style = f"{figure_kind(context.caption, labels)} on a {background_name(image)} background"
    sights = track_sights(grey_levels(image), reading, diagram, labels, drawn_relations(diagram, labels))
    return VLMResult(
        output={
            "terms": terms,
            "required_text": labels,
            "relations": [list(pair) for pair in relations],
            "laws": laws,
            "sci_rcot": narrate_rcot(style, labels, terms, relations, laws),
            "tracks": {
                track: {"terms": sight.terms, "visualizations": sight.visualizations}
                for track, sight in sights.items()
            },
        }
    )


TASK = AnnotationTask(
    name="reasoning",
    summary="terms, required text, relations, laws and the Sci-RCoT of a figure (SciIR F)",
    reply_schema=Reasoning,
    answerers={"offline": answer_by_sight},
    context_keys=("caption", "methods_text"),
    sees_image=True,
)
