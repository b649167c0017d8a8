"""The ``track_scores`` task (SciIR appendix F): the relevance of a figure to each reasoning track (entity
structure, scientific process, scientific law), 1 (absent) to 10 (the figure's purpose); a track is active
(its multi-hot label) at tau and above (appendix B.4).

Offline (``answer_by_keywords``), only what text supports: the track's vocabulary found in the caption, the
text read in the image and the methods text, mapped to 1-10 by ``score_from_cues``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, NamedTuple

from pydantic import BaseModel, Field

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.annotation import TRACKS, AnnotationTask, NonEmpty, image_of, word_start

Score = Annotated[int, Field(ge=1, le=10)]

# Words that signal each reasoning track, matched case-insensitively at a word start (so "molecules"
# and "proportionality" count). Deliberately narrow: a word that belongs to two tracks would blur both.
TRACK_VOCABULARY: dict[str, tuple[str, ...]] = {
    "entity": ("structure", "structural", "molecule", "molecular", "component", "morphology"),
    "process": ("workflow", "pathway", "step", "stage", "leads to"),
    "law": ("law", "equation", "conservation", "proportional", "relationship"),
}
TRACK_PATTERNS = {track: [word_start(w) for w in words] for track, words in TRACK_VOCABULARY.items()}
LAW_VOCABULARY = TRACK_PATTERNS["law"]
METHODS_SOURCE = "methods text"


class TrackScores(BaseModel):
    """Relevance of the figure to each reasoning track, 1 (absent) to 10 (the figure's purpose)."""

    entity: Score
    process: Score
    law: Score
    rationale: NonEmpty


def labels_from_scores(scores: TrackScores, tau: int) -> dict[str, bool]:
    """Multi-hot labels of appendix B.4: a track is active when its relevance score is at least tau."""
    return {track: getattr(scores, track) >= tau for track in TRACKS}


def names_a_law(term: str) -> bool:
    """An equation or a term carrying law vocabulary ("Ohm's law", "Energy conservation")."""
    return "=" in term or any(pattern.search(term) for pattern in LAW_VOCABULARY)


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
        for track, patterns in TRACK_PATTERNS.items()
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


class _TextContext(BaseModel):
    caption: str
    methods_text: str = ""


def answer_by_keywords(request: VLMRequest, sight: Sight) -> VLMResult:
    """Track vocabulary found in the caption, the text read in the image and the methods text (module
    docstring)."""
    context = _TextContext.model_validate(request.context)
    reading = sight.read(image_of(request))
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


TASK = AnnotationTask(
    name="track_scores",
    summary="relevance of a figure to the entity, process and law tracks, 1-10 (SciIR F)",
    reply_schema=TrackScores,
    answerers={"offline": answer_by_keywords},
    context_keys=("caption", "methods_text"),
    sees_image=True,
)
