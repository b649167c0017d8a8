"""Privacy, default deny: a face found by OpenCV's Haar cascade (read from Debian's opencv-data), caption
cues, and ID-like text read by OCR in a rendered image."""

from __future__ import annotations

from pathlib import Path

import pytest
from matplotlib import cbook
from PIL import Image, ImageDraw, ImageFont

from sciir.figures.face_cascade import DEFAULT_CASCADE, load_cascade
from sciir.figures.privacy import (
    DEFAULT_CAPTION_CUES,
    PrivacyParams,
    caption_cue,
    id_like_text,
    image_problem,
)

needs_cascade = pytest.mark.skipif(not DEFAULT_CASCADE.is_file(), reason="opencv-data is not installed")
FACES_ONLY = PrivacyParams(ocr_ids=False)
FONT = ImageFont.load_default(size=40)


def _portrait() -> Image.Image:
    """Grace Hopper's portrait, as matplotlib ships it."""
    return Image.open(cbook.get_sample_data("grace_hopper.jpg")).convert("RGB")


def _plot() -> Image.Image:
    image = Image.new("RGB", (600, 450), "white")
    draw = ImageDraw.Draw(image)
    draw.line((50, 400, 550, 400), fill="black", width=3)
    draw.line((50, 50, 50, 400), fill="black", width=3)
    draw.line((60, 380, 540, 80), fill=(30, 90, 200), width=4)
    for tick in range(5):
        draw.text((40 + tick * 120, 410), str(tick * 250), fill="black", font=ImageFont.load_default(size=20))
    return image


@needs_cascade
def test_a_face_is_found_and_excluded_with_where_it_is() -> None:
    reason = image_problem(_portrait(), FACES_ONLY)
    assert reason is not None and reason.startswith("privacy: a face detected at x=")


@needs_cascade
def test_a_plot_and_a_texture_hold_no_face() -> None:
    assert image_problem(_plot(), FACES_ONLY) is None
    noise = Image.effect_noise((400, 400), 60).convert("RGB")
    assert image_problem(noise, FACES_ONLY) is None


def test_a_missing_cascade_names_the_package(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="apt-get install opencv-data"):
        load_cascade(tmp_path / "none.xml")


@pytest.mark.parametrize(
    ("caption", "cue"),
    [
        ("MRI of a 45-year-old man with a lesion.", "45-year-old"),
        ("Fundus photograph of the patient before treatment.", "the patient"),
        ("Survival of 1,200 patients by genotype.", None),  # a group statistic, not a person
        ("Patient ID and scan date are masked.", "Patient ID"),
        ("CT scan of a woman after surgery.", "CT scan of a woman"),
        ("Clinical photographs of the lesion.", "Clinical photographs"),
        ("Phase diagram of water at 25 C.", None),
        ("Flow chart of the simulation.", None),
    ],
)
def test_caption_cues(caption: str, cue: str | None) -> None:
    assert caption_cue(caption, DEFAULT_CAPTION_CUES) == cue


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("MRN: 00123456", "MRN: 00123456"),
        ("Patient 12", "Patient 12"),
        ("ID: AB1234", "ID: AB1234"),
        ("123-45-6789", "123-45-6789"),
        ("Time (s) 0 250 500 2018", None),
        ("10000000 20000000", None),
    ],
)
def test_id_like_text(text: str, found: str | None) -> None:
    assert id_like_text(text) == found


def test_id_text_read_by_ocr_in_a_rendered_image_is_excluded() -> None:
    image = Image.new("RGB", (700, 300), "white")
    draw = ImageDraw.Draw(image)
    draw.text((40, 60), "Patient ID: 48213377", fill="black", font=FONT)
    draw.text((40, 160), "DOB: 1961-04-12", fill="black", font=FONT)
    reason = image_problem(image, PrivacyParams(face_cascade=None))
    assert reason is not None and reason.startswith("privacy: ID-like text read in the image")
    assert "48213377" in reason
    assert image_problem(_plot(), PrivacyParams(face_cascade=None)) is None
