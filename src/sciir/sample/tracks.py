"""The caption vocabulary of each of the three reasoning tracks (``sciir.tasks.annotation.TRACKS``) in the
embedded sample.

Every sentence of a caption uses the vocabulary of its own track and none of the others', so a
text-based annotator reading a caption recovers exactly the tracks of its figure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Words that mark each track in captions; matched at a word start, so plurals count.
CAPTION_VOCABULARY: Mapping[str, tuple[str, ...]] = {
    "entity": ("structure", "molecule", "component", "morphology"),
    "process": ("workflow", "pathway", "steps", "stage", "leads to"),
    "law": ("law", "equation", "conservation", "proportional", "relationship"),
}


def mentions_track(text: str, track: str) -> bool:
    """Whether ``text`` uses a word of ``track``'s vocabulary (case-insensitive, at a word start)."""
    return any(
        re.search(rf"\b{re.escape(word)}", text, flags=re.IGNORECASE) for word in CAPTION_VOCABULARY[track]
    )
