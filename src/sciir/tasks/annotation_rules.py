"""The offline annotator's rules (SciIR annotation tasks), from OCR, drawn shapes and the request's texts only.

Each ``<task>`` function below answers its task for the offline backend (``sciir.tasks.registry``):

- ``track_scores``: track vocabulary found in the caption, the text read in the image and the
  methods text (mapping to 1-10 in ``score_from_cues``); it scores only what text supports.
- ``reasoning``: required text = label-like lines read in the image; terms = those labels plus
  caption words that are also visible; relations = arrows read between labelled shapes, and pairs of
  visible labels that one caption or methods sentence states explicitly where the image cannot
  settle them (``sciir.backends.offline_relations``); laws = the labels that write a law or
  equation, else the caption's sentences that state one; Sci-RCoT narrated from these; per track,
  the terms and visualisations the image itself shows (``sciir.backends.track_evidence``: arrows
  between labelled shapes, equations written and plot axes, labelled structural drawings); a track
  the image does not show gets empty lists, whatever the caption says.
- ``abstract_prompt``: the style of the Sci-RCoT plus the quoted terms, nothing about layout.
- ``checklist``: layer 1 per required text; layer 2 per active track from terms, relations and laws,
  each fact with a positive question and a negative one (duplicated entity, reversed flow,
  contradicted law), each with its kind, polarity and what it is about.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.diagram import grey_levels, read_diagram
from sciir.backends.ocr import OcrReading, decode_png
from sciir.backends.offline_relations import drawn_relations, figure_relations
from sciir.backends.track_evidence import track_sights
from sciir.tasks.registry import Sight

# Bump when a rule below changes, so cached answers of the old rules are not reused.
RULES_VERSION = "offline-rules-v4"  # v4: terms and visualisations per track

# Words that signal each reasoning track, matched case-insensitively at a word start (so "molecules"
# and "proportionality" count). Deliberately narrow: a word that belongs to two tracks would blur both.
TRACK_VOCABULARY: dict[str, tuple[str, ...]] = {
    "entity": ("structure", "structural", "molecule", "molecular", "component", "morphology"),
    "process": ("workflow", "pathway", "step", "stage", "leads to"),
    "law": ("law", "equation", "conservation", "proportional", "relationship"),
}

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
METHODS_SOURCE = "methods text"
# "(b) " before the sentence describing panel b of a multi-panel caption.
_PANEL_LETTER = re.compile(r"^\([a-z]\)\s+")


def _word_start(word: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(word)}", re.IGNORECASE)


_TRACK_PATTERNS = {track: [_word_start(w) for w in words] for track, words in TRACK_VOCABULARY.items()}
_KIND_PATTERNS = {kind: [_word_start(w) for w in words] for kind, words in FIGURE_KIND_CUES.items()}
_LAW_VOCABULARY = _TRACK_PATTERNS["law"]


# ---- contexts each task reads (validated, so a missing key is a clear failure)


class _TextContext(BaseModel):
    caption: str
    methods_text: str = ""


class _AbstractContext(BaseModel):
    caption: str
    terms: list[str]
    sci_rcot: str


class _ChecklistContext(BaseModel):
    terms: list[str]
    required_text: list[str]
    relations: list[tuple[str, str]]
    laws: list[str]
    tracks: list[str]


# ---- evidence rules


class Cue(NamedTuple):
    """A vocabulary word found in one source text."""

    word: str
    source: str

    def __str__(self) -> str:
        return f'"{self.word}" ({self.source})'


def track_cues(sources: dict[str, str]) -> dict[str, list[Cue]]:
    """Per track, the vocabulary cues found: at most one per vocabulary entry and source."""
    return {
        track: [
            Cue(match.group(0).lower(), source)
            for source, text in sources.items()
            for pattern in patterns
            if (match := pattern.search(text))
        ]
        for track, patterns in _TRACK_PATTERNS.items()
    }


def score_from_cues(cues: Sequence[Cue]) -> int:
    """Relevance 1-10 from the cues of one track.

    The figure's own text (caption, text read in the image) decides whether a track is present:
    one cue there gives 7, the label threshold, and each further distinct cue adds 1 up to 10.
    The methods text describes the whole article, so on its own it adds 1 per cue up to 4 and never
    reaches the threshold. No cue at all gives 1.
    """
    own = {cue.word for cue in cues if cue.source != METHODS_SOURCE}
    further = len({cue.word for cue in cues} - own) + max(0, len(own) - 1)
    return min(10, 7 + further) if own else min(4, 1 + further)


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


def sentences(text: str) -> list[str]:
    """Split prose into sentences (at ". " before a capital or a parenthesis)."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z(])", text.strip())


def _gap(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Characters between two spans of a text (0 when they touch or overlap)."""
    return max(0, b[0] - a[1], a[0] - b[1])


def figure_kind(caption: str, labels: Sequence[str] = ()) -> str:
    """The kind of figure the caption names ("scientific figure" when it names none).

    A caption may describe several panels; the kind word that describes this image is taken from
    the sentence naming the most labels read in the image, and within it (or among equals) the
    one closest to such a label ("structure of the Dopamine molecule"); then caption order.
    """
    named = [_word_start(label) for label in labels]
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


def sentences_with_cues(text: str, patterns: Sequence[re.Pattern[str]]) -> list[str]:
    """The sentences of ``text`` that contain one of ``patterns`` (e.g. the caption's statements of a law)."""
    return [s for s in sentences(text) if any(p.search(s) for p in patterns)]


def _quoted(items: Sequence[str]) -> str:
    return ", ".join(f'"{item}"' for item in items)


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
        f"Required text: {_quoted(required_text)}." if required_text else "Required text: none was read.",
        f"Entity structure: {len(terms)} labelled element{'s' if len(terms) > 1 else ''}: {_quoted(terms)}."
        if terms
        else "Entity structure: no labelled elements were read.",
        f"Topology: arrows connect {arrows}."
        if relations
        else "Topology: no connections between labels are stated.",
        "Process: " + ", then ".join(f"{a} leads to {b}" for a, b in relations) + "." if relations else "",
        f"Law: {' '.join(law_statements)}" if law_statements else "",
    ]
    return " ".join(part for part in parts if part)


def style_from_rcot(sci_rcot: str) -> str | None:
    """The style a Sci-RCoT states in its 'Style:' sentence, if it has one."""
    match = re.search(r"Style:\s*(.+?)(?:\.\s|\.?$)", sci_rcot)
    return match.group(1).strip() if match else None


def abstract_from_terms(style: str, terms: Sequence[str]) -> str:
    """A short prompt naming the terms in the given style, leaving layout and connections to the model."""
    subject = f"showing {_quoted(terms)}" if terms else "of the described scientific content"
    return f"A {style} {subject}; render every quoted label with exactly this spelling."


def _names_a_law(term: str) -> bool:
    """An equation or a term carrying law vocabulary ("Ohm's law", "Energy conservation")."""
    return "=" in term or any(pattern.search(term) for pattern in _LAW_VOCABULARY)


def stated_laws(caption: str, labels: Sequence[str]) -> list[str]:
    """The laws a figure states: its labels that write a law or an equation (the image first), else the
    caption's sentences with law vocabulary."""
    written = [label for label in labels if _names_a_law(label)]
    return written or [_PANEL_LETTER.sub("", s) for s in sentences_with_cues(caption, _LAW_VOCABULARY)]


class _ChecklistBuilder:
    """Collects questions and numbers them per layer and track: L1-01, L2-process-01, ..."""

    def __init__(self) -> None:
        self.questions: list[dict[str, Any]] = []
        self._counts: dict[str, int] = {}

    def add(
        self,
        track: str,
        kind: str,
        about: Sequence[str],
        question: str,
        *,
        negative: bool = False,
        parents: Sequence[str] = (),
    ) -> str:
        prefix = "L1" if track == "text" else f"L2-{track}"
        self._counts[prefix] = self._counts.get(prefix, 0) + 1
        qid = f"{prefix}-{self._counts[prefix]:02d}"
        self.questions.append(
            {
                "id": qid,
                "layer": 1 if track == "text" else 2,
                "track": track,
                "kind": kind,
                "polarity": "negative" if negative else "positive",
                "about": list(about),
                "question": question,
                "expected_text": about[0] if kind == "text" else None,
                "parent_ids": list(parents),
            }
        )
        return qid


def _entity_questions(checklist: _ChecklistBuilder, terms: Sequence[str]) -> dict[str, str]:
    """Per entity term: drawn as a component (positive), drawn once (negative, incoherent structure)."""
    ids: dict[str, str] = {}
    for term in terms:
        ids[term] = checklist.add(
            "entity", "entity", [term], f'Is "{term}" drawn as a distinct, identifiable component?'
        )
        checklist.add(
            "entity",
            "entity",
            [term],
            f'Is "{term}" drawn as one component only, not duplicated?',
            negative=True,
            parents=[ids[term]],
        )
    return ids


def _process_questions(
    checklist: _ChecklistBuilder, relations: Sequence[tuple[str, str]], entity_ids: dict[str, str]
) -> None:
    """Per relation [A, B]: an arrow from A to B (positive), none from B to A (negative, reversed flow)."""
    for a, b in relations:
        parents = [entity_ids[end] for end in (a, b) if end in entity_ids]
        checklist.add(
            "process", "relation", [a, b], f'Is there an arrow from "{a}" to "{b}"?', parents=parents
        )
        checklist.add(
            "process",
            "relation",
            [b, a],
            f'Is there no arrow from "{b}" to "{a}" (the flow is not reversed)?',
            negative=True,
            parents=parents,
        )


def _law_questions(checklist: _ChecklistBuilder, laws: Sequence[str]) -> None:
    """Per law: stated or obeyed (positive), nothing contradicting it (negative, impossible law)."""
    for law in laws:
        first = checklist.add("law", "law", [law], f'Does the figure state or obey the law "{law}"?')
        checklist.add(
            "law",
            "law",
            [law],
            f'Is nothing in the figure contradicting "{law}" (no conflicting equation or impossible depiction)?',
            negative=True,
            parents=[first],
        )


def checklist_questions(context: _ChecklistContext) -> list[dict[str, Any]]:
    """Layer 1 per required text; layer 2 per active track, each fact with a positive and a negative
    question: entity per term that names no law, process per relation, law per law statement."""
    checklist = _ChecklistBuilder()
    for text in context.required_text:
        checklist.add("text", "text", [text], f'Is the text "{text}" rendered with exactly this spelling?')
    tracks = set(context.tracks)
    entity_ids: dict[str, str] = {}
    if "entity" in tracks:
        entity_ids = _entity_questions(checklist, [term for term in context.terms if not _names_a_law(term)])
    if "process" in tracks:
        _process_questions(checklist, context.relations, entity_ids)
    if "law" in tracks:
        _law_questions(checklist, context.laws)
    return checklist.questions


# ---- the answers


def _image(request: VLMRequest) -> bytes:
    if len(request.images) != 1:
        raise ValueError(f"needs exactly one image, got {len(request.images)}")
    return request.images[0]


def track_scores(request: VLMRequest, sight: Sight) -> VLMResult:
    context = _TextContext.model_validate(request.context)
    reading = sight.read(_image(request))
    sources = {
        "caption": context.caption,
        METHODS_SOURCE: context.methods_text,
        "image text": reading.text,
    }
    cues = track_cues(sources)
    scores = {track: score_from_cues(found) for track, found in cues.items()}
    rationale = "; ".join(
        f"{track} {scores[track]}: {', '.join(map(str, found)) or 'no cue found'}"
        for track, found in cues.items()
    )
    return VLMResult(output={**scores, "rationale": f"Keyword evidence in text only. {rationale}."})


def reasoning(request: VLMRequest, sight: Sight) -> VLMResult:
    context = _TextContext.model_validate(request.context)
    image = _image(request)
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


def abstract_prompt(request: VLMRequest, sight: Sight) -> VLMResult:
    context = _AbstractContext.model_validate(request.context)
    style = style_from_rcot(context.sci_rcot) or figure_kind(context.caption)
    return VLMResult(output={"prompt": abstract_from_terms(style, context.terms)})


def checklist(request: VLMRequest, sight: Sight) -> VLMResult:
    context = _ChecklistContext.model_validate(request.context)
    questions = checklist_questions(context)
    if not questions:
        return VLMResult.failed(
            "nothing to check: no required text, and no terms or relations for the active tracks"
        )
    return VLMResult(output={"questions": questions})
