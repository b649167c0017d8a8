"""The offline judge's text checks on real article figures with known labels.

Data: ../shared/external/articles/ beside the checkout (real figures; see its README.md), and
tests/fixtures/real_figure_labels.json: the labels drawn in 46 of those figures, transcribed by eye,
and texts that are not drawn there (caption words, near misses, other figures' labels). Skipped when
the figures are absent. Every entry is asked as the judge asks a Layer-1 text question ("is <text>
drawn with exactly this spelling?") and answered yes / no / abstained by ``judge_item`` on the reading
the judge makes (Tesseract, and the second recogniser where it leaves doubt).

Measured over entries of three characters or more:
- recall: drawn labels answered "yes" / all drawn labels. An abstention counts as a miss, so abstaining
  never raises recall: the target cannot be met by abstaining;
- precision: drawn among the "yes" answers;
- false "no": drawn labels answered "no" / all drawn labels (what made the judge fail correct images);
- "no" precision: absent among the "no" answers;
- abstention rates on drawn labels and on absent texts (printed, and in the failure message; the recall
  bound already bounds abstentions on drawn labels at 1 - recall).
benchmarks/bench_ocr_labels.py prints the same measures for the reader before and after issue 9.
"""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from PIL import Image

from sciir.backends.readers.second_reader import (
    SECOND_RECOGNISER,
    second_recogniser_available,
    with_second_reading,
)
from sciir.backends.readers.tesseract import read_text, require_tesseract
from sciir.images.payload import encode
from sciir.tasks.sight_checks import JudgeItem, answer_text

REPO = Path(__file__).resolve().parents[2]
EXTERNAL = REPO / ".." / "shared" / "external"
FIXTURE = REPO / "tests" / "fixtures" / "real_figure_labels.json"
MIN_CHARS = 3
# Issue 9 asks for recall 0.9; the judge reaches 0.953 here with the second recogniser (0.861 with
# Tesseract alone; docs/benchmarks.md lists what is still missed). The floor guards what is reached.
RECALL_FLOOR = 0.94

pytestmark = [
    pytest.mark.slow,  # Tesseract over every real figure: minutes
    pytest.mark.skipif(
        not (EXTERNAL / "articles").is_dir(), reason="../shared/external/articles not present"
    ),
]


def _png(path: Path) -> bytes:
    with Image.open(path) as image:
        return encode(image, "PNG")


def _verdicts(figure: dict) -> list[tuple[str, str, str | None]]:
    """(kind, text, verdict) for every entry of one figure: kind "labels" (drawn) or "absent"."""
    png = _png(EXTERNAL / figure["file"])
    reading = with_second_reading(read_text(png), png)  # as the judge reads (judge_checklist)
    answers = []
    for kind in ("labels", "absent"):
        for entry in figure[kind]:
            item = JudgeItem(id="q", question="q", layer=1, track="text", expected_text=entry["text"])
            answers.append((kind, entry["text"], answer_text(item, reading)["verdict"]))
    return answers


@pytest.fixture(scope="module")
def answers() -> dict[str, list[tuple[str, str, str | None]]]:
    require_tesseract()
    assert second_recogniser_available(), (
        f'the judge\'s second recogniser is not installed: pip install --no-deps "{SECOND_RECOGNISER}" '
        "(make setup does)"
    )
    figures = json.loads(FIXTURE.read_text(encoding="utf-8"))["figures"]
    # Two figures at a time (each reading runs its own passes two at a time).
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip((f["file"] for f in figures), pool.map(_verdicts, figures), strict=True))


def test_fixture_lists_real_files_and_enough_labels() -> None:
    figures = json.loads(FIXTURE.read_text(encoding="utf-8"))["figures"]
    assert len(figures) >= 30
    assert all((EXTERNAL / figure["file"]).is_file() for figure in figures)
    assert sum(len(f["labels"]) for f in figures) >= 300 and all(f["absent"] for f in figures)
    for figure in figures:
        drawn = {entry["text"] for entry in figure["labels"]}
        assert not drawn & {entry["text"] for entry in figure["absent"]}, figure["file"]


def test_text_checks_on_real_figures(answers) -> None:
    counts: Counter[tuple[str, str | None]] = Counter(
        (kind, verdict)
        for entries in answers.values()
        for kind, text, verdict in entries
        if len(text) >= MIN_CHARS
    )
    drawn = sum(n for (kind, _), n in counts.items() if kind == "labels")
    absent = sum(n for (kind, _), n in counts.items() if kind == "absent")
    said_yes = counts["labels", "yes"] + counts["absent", "yes"]
    said_no = counts["labels", "no"] + counts["absent", "no"]
    recall = counts["labels", "yes"] / drawn
    precision = counts["labels", "yes"] / said_yes
    false_no = counts["labels", "no"] / drawn
    no_precision = counts["absent", "no"] / said_no if said_no else 1.0
    missed = [
        f"{file}: {text!r} -> {verdict}"
        for file, entries in answers.items()
        for kind, text, verdict in entries
        if kind == "labels" and verdict != "yes" and len(text) >= MIN_CHARS
    ]
    summary = (
        f"recall {recall:.3f}, precision {precision:.3f}, false no {false_no:.3f}, no precision "
        f"{no_precision:.3f}, abstained on {counts['labels', None] / drawn:.3f} of {drawn} drawn labels and "
        f"{counts['absent', None] / absent:.3f} of {absent} absent texts; missed:\n" + "\n".join(missed)
    )
    print(summary.split("; missed:")[0])  # shown with pytest -s
    assert recall >= RECALL_FLOOR, summary
    assert precision >= 0.95, summary
    assert false_no <= 0.01, summary
    assert no_precision >= 0.95, summary
