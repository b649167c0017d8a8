"""Privacy, default deny (SciIR paper, appendix A.5): recognisable faces, clinical images and potential
patient identifiers are excluded, each with the reason.

Three checks, each naming what it found: a caption cue (clinical imaging of a person, patient
identifiers), a face found by a Haar cascade (sciir.figures.face_cascade), and ID-like text read by OCR in
the panel (a labelled identifier such as "MRN: 0012345", a date of birth, a social-security-style
number, a long digit run).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from sciir.figures.face_cascade import DEFAULT_CASCADE, Cascade, detect_faces, load_cascade

# Caption phrases that signal a clinical image of a person or a patient identifier. Matched
# case-insensitively at word boundaries; configurable in curate.privacy.caption_cues.
DEFAULT_CAPTION_CUES = (
    # One person's case ("the patient", "a patient with"); a plot over "patients" as a group is not.
    r"(?:a|the|this|one|our) patient",
    r"patient (?:ID|identifier|number|no\.?|name)",
    r"\d+[- ](?:year|yr)s?[- ]old",
    r"(?:MRI|CT|PET|X-ray|radiograph|ultrasound|endoscop\w*|fundus)\s+(?:scan\s+|image\s+)?of\s+(?:a|an|the)\s+"
    r"(?:\d+|male|female|man|woman|boy|girl|child|infant|subject|volunteer)",
    r"clinical (?:photograph|image|photo)s?",
    r"(?:medical record|hospital) (?:number|no\.?)",
    r"de-?identified",
    r"informed consent",
)

# Text read in an image that looks like a personal identifier.
_ID_PATTERNS = (
    re.compile(
        r"\b(?:MRN|DOB|SSN|NHS|patient|pt|subject|accession|acc)\b\s*(?:id|no\.?|number|#)?\s*[:#]?\s*\w*\d",
        re.IGNORECASE,
    ),
    re.compile(r"\b(?:ID|Name)\s*[:#]\s*\w+"),
    re.compile(r"\b\d{3}-\d{2}-\d{4}\b"),
    # Eight or more digits that are not a round number (an axis tick such as 10000000).
    re.compile(r"\b\d(?!0{7,}\b)\d{7,}\b"),
)


class PrivacyParams(BaseModel):
    """The privacy checks and their settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    caption_cues: tuple[str, ...] = DEFAULT_CAPTION_CUES
    face_cascade: str | None = str(DEFAULT_CASCADE)
    # Smallest face side (px, after reducing the panel to face_max_side_px) and the overlapping hits a
    # face needs: 12 keeps microscopy textures from reading as faces (measured on real figures).
    face_min_size_px: int = Field(default=32, ge=8)
    face_min_neighbours: int = Field(default=12, ge=0)
    face_max_side_px: int = Field(default=360, ge=64)
    ocr_ids: bool = True


def caption_cue(caption: str, cues: tuple[str, ...]) -> str | None:
    """The first privacy cue found in a caption, or None."""
    for cue in cues:
        match = re.search(rf"\b{cue}\b", caption or "", re.IGNORECASE)
        if match:
            return match.group(0)
    return None


def id_like_text(text: str) -> str | None:
    """The first ID-like string in text read from an image, or None."""
    for pattern in _ID_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


@lru_cache(maxsize=4)
def _cascade(path: str) -> Cascade:
    return load_cascade(Path(path))


def check_cascade(settings: PrivacyParams) -> None:
    """Fail before any work when the face cascade is configured but cannot be read."""
    if settings.face_cascade is not None:
        _cascade(settings.face_cascade)


def _ocr_text(image: Image.Image) -> str:
    import pytesseract

    return pytesseract.image_to_string(image.convert("L"))


def image_problem(image: Image.Image, settings: PrivacyParams) -> str | None:
    """Why a panel image must be excluded for privacy (a face, ID-like text), or None."""
    if settings.face_cascade is not None:
        faces = detect_faces(
            _cascade(settings.face_cascade),
            image,
            min_size_px=settings.face_min_size_px,
            min_neighbours=settings.face_min_neighbours,
            max_side_px=settings.face_max_side_px,
        )
        if faces:
            x, y, size = faces[0]
            return f"privacy: a face detected at x={x}, y={y} ({size} px; {len(faces)} in all)"
    if settings.ocr_ids:
        found = id_like_text(_ocr_text(image))
        if found:
            return f'privacy: ID-like text read in the image: "{found}"'
    return None
