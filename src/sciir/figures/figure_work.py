"""The work on one figure file, done in a worker process: decode, normalise, split, check, standardise, encode.

It returns an outcome for the figure and for each panel region, never raises for a bad file, and sends
back encoded PNG bytes (not pixels), so only small results cross to the parent process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from PIL import Image

from sciir.figures.geometry_rules import panel_rejections
from sciir.figures.panel_split import Box
from sciir.figures.panels import detector_for
from sciir.figures.params import CurateParams
from sciir.figures.privacy import image_problem
from sciir.figures.standardisation import standardise_changes, standardised_png
from sciir.images.colour import normalise
from sciir.images.decode import UnreadableImageError, decode_file


@dataclass(frozen=True)
class FigureTask:
    """One figure file and the settings to curate it with."""

    image_path: str
    settings: CurateParams


@dataclass(frozen=True)
class PanelOutcome:
    """A panel region: why it is rejected, or its standardised PNG and the changes made to get it."""

    box: Box
    problem: str | None
    png: bytes | None = None
    changes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FigureOutcome:
    """A figure's panel regions, or why it yields none."""

    problem: str | None
    panels: tuple[PanelOutcome, ...] = ()


def _standardised_panel(
    normalised_image: Image.Image, box: Box, changes: tuple[str, ...], task: FigureTask
) -> PanelOutcome:
    settings = task.settings
    full = box == Box(0, 0, *normalised_image.size)
    crop = normalised_image if full else normalised_image.crop((box.x0, box.y0, box.x1, box.y1))
    private = image_problem(crop, settings.privacy)
    if private:
        return PanelOutcome(box, private)
    size = settings.standardise.size_px
    png = standardised_png(
        crop, size, settings.split.background_tolerance, settings.standardise.dominant_edge_share
    )
    made = [*changes, *([] if full else ["cropped"]), *standardise_changes(crop.size, size)]
    return PanelOutcome(box, None, png, tuple(made))


@cache
def single_threaded_opencv() -> None:
    """OpenCV on one thread: a curate worker has a core to itself (one worker per core), where OpenCV's
    thread pool only adds CPU time (about 2 ms a panel in benchmarks/bench_standardise.py), and panel
    detection then runs the same way on every figure."""
    import cv2

    cv2.setNumThreads(1)


def curate_figure_file(task: FigureTask) -> FigureOutcome:
    """Every panel region of one figure file with its outcome, or the reason the file yields none."""
    single_threaded_opencv()
    settings = task.settings
    try:
        normalised = normalise(decode_file(Path(task.image_path), settings.decode.limits()))
    except UnreadableImageError as error:
        return FigureOutcome(str(error))
    image = normalised.image
    boxes = detector_for(settings.split, settings.detector).detect(image)
    if not boxes:
        return FigureOutcome("it holds only background, no panel content")
    problems = panel_rejections(boxes, image.size, settings.geometry.for_figure(image.width))
    return FigureOutcome(
        None,
        tuple(
            PanelOutcome(box, problem)
            if problem
            else _standardised_panel(image, box, normalised.changes, task)
            for box, problem in zip(boxes, problems, strict=True)
        ),
    )
