"""Text reading with Tesseract, and a judge that answers exact-spelling checks from it.

The judge answers only what OCR can establish: whether an expected text string is
rendered with exactly that spelling. Every other question is abstained on (verdict
null), never guessed. As an AIBench solver (task ``aibench_qa``) it answers only
component existence (level 1): a label read in the image is "yes", a label clearly
absent is "no", a near match (misspelt or misread, OCR cannot tell) and every other
level are abstained on.

Figures draw text inside boxes and beside arrows, which Tesseract misreads as
characters; before reading, ink that cannot be a glyph (frames enclosing other ink,
long thin lines, shapes taller than any label) is erased, and the image is rescaled
so that glyphs have the size Tesseract reads best.
"""

from __future__ import annotations

import difflib
import io
import re
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytesseract
from PIL import Image
from pydantic import BaseModel, ValidationError

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult, sha256_hex

# Tesseract reads glyphs best when lowercase letters are about this many pixels tall.
_TARGET_GLYPH_PX = 20.0
_MAX_UPSCALE = 3.0
_MIN_SCALE = 0.5
_MARGIN = 0.05
_MAX_SIDE_PX = 3072
# Shapes taller or wider than these fractions of the image are drawing, not text (standardised
# panels can scale a title's letters up to about a tenth of the image).
_MAX_GLYPH_HEIGHT = 0.15
_MAX_GLYPH_WIDTH = 0.2
# Specks below this height (dots, hatching, i-dots) say nothing about the size of letters.
_MIN_GLYPH_PX = 8
_INK_THRESHOLD = 128
_EXCERPT_CHARS = 40
# A run of words read this similar (0-1, ignoring case) to a label asked about may be that label
# misspelt or misread; OCR cannot tell which, so the question is abstained on rather than answered "no".
_NEAR_MATCH = 0.75


class OcrUnavailableError(RuntimeError):
    """The Tesseract binary or its language data is not installed."""


@dataclass(frozen=True)
class OcrWord:
    """One word as Tesseract read it; ``confidence`` is 0-100, box in pixels of the read image."""

    text: str
    confidence: float
    left: int
    top: int
    width: int
    height: int


@dataclass(frozen=True)
class OcrLine:
    """Words read on one line, with no gap wider than a label's own spacing between them."""

    words: tuple[OcrWord, ...]

    @property
    def text(self) -> str:
        return " ".join(word.text for word in self.words)

    @property
    def confidence(self) -> float:
        """Mean word confidence (0-100)."""
        return float(np.mean([word.confidence for word in self.words]))


@dataclass(frozen=True)
class OcrReading:
    """Everything read in one image, line by line in reading order.

    Word boxes are in pixels of the image Tesseract read: the original scaled by ``scale`` and shifted
    by ``offset`` pixels of margin (``image_box`` maps a word back onto the original image).
    """

    lines: tuple[OcrLine, ...]
    scale: float = 1.0
    offset: int = 0

    def image_box(self, word: OcrWord) -> tuple[float, float, float, float]:
        """The word's box (x0, y0, x1, y1) in pixels of the original image."""
        x0, y0 = (word.left - self.offset) / self.scale, (word.top - self.offset) / self.scale
        return x0, y0, x0 + word.width / self.scale, y0 + word.height / self.scale

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.lines)

    @property
    def normalised_text(self) -> str:
        """All text on one line with single spaces, so a phrase matches across line breaks."""
        return normalise_whitespace(self.text)

    def find(self, phrase: str, ignore_case: bool = False) -> re.Match[str] | None:
        """Where ``phrase`` occurs (case-sensitively unless ``ignore_case``), not inside a longer word."""
        wanted = normalise_whitespace(phrase)
        if not wanted:
            return None
        flags = re.IGNORECASE if ignore_case else 0
        return re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", self.normalised_text, flags)

    def excerpt(self, phrase: str, ignore_case: bool = False) -> str:
        """A short quote of what was read: around ``phrase`` if found, else the closest text read."""
        text = self.normalised_text
        if not text:
            return "no text was read in the image"
        match = self.find(phrase, ignore_case)
        if match:
            start, end = max(0, match.start() - _EXCERPT_CHARS), match.end() + _EXCERPT_CHARS
            return f'read "...{text[start:end]}..."'
        closest = closest_span(text, normalise_whitespace(phrase))
        return f'closest text read: "{closest}"'


def normalise_whitespace(text: str) -> str:
    return " ".join(text.split())


def closest_span(text: str, phrase: str) -> str:
    """The run of words in ``text`` (as many words as ``phrase``) most similar to ``phrase``."""
    words = text.split()
    size = max(1, len(phrase.split()))
    spans = [" ".join(words[i : i + size]) for i in range(max(1, len(words) - size + 1))]
    return max(spans, key=lambda span: difflib.SequenceMatcher(None, span, phrase).ratio())


def require_tesseract(lang: str = "eng") -> None:
    """Fail early, naming the system package to install, when Tesseract cannot run."""
    command = pytesseract.pytesseract.tesseract_cmd
    if shutil.which(command) is None:
        raise OcrUnavailableError(
            f"the OCR backend needs the Tesseract binary ({command!r}), which is not on PATH: install the "
            "system package tesseract-ocr (Debian/Ubuntu: apt-get install tesseract-ocr)"
        )
    missing = [code for code in lang.split("+") if code not in pytesseract.get_languages(config="")]
    if missing:
        packages = " ".join(f"tesseract-ocr-{code}" for code in missing)
        raise OcrUnavailableError(
            f"Tesseract has no language data for {', '.join(missing)}: apt-get install {packages}"
        )


def decode_png(png: bytes) -> Image.Image:
    """Decode image bytes; raises ValueError naming what is wrong."""
    try:
        image = Image.open(io.BytesIO(png))
        image.load()
    except (OSError, Image.DecompressionBombError) as error:
        raise ValueError(f"image could not be decoded ({len(png)} bytes): {error}") from error
    return image


def _component_boxes(ink: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label 8-connected ink; return the label image and one box (y0, y1, x0, x1) per component."""
    from scipy import ndimage

    labels, count = ndimage.label(ink, structure=np.ones((3, 3), dtype=bool))
    slices = ndimage.find_objects(labels)
    boxes = np.array([(s[0].start, s[0].stop, s[1].start, s[1].stop) for s in slices], dtype=int)
    return labels, boxes.reshape(count, 4)


def _encloses_other_ink(boxes: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """True for candidate components whose box strictly contains another component's box (a frame)."""
    encloses = np.zeros(len(boxes), dtype=bool)
    for index in np.flatnonzero(candidates):
        y0, y1, x0, x1 = boxes[index]
        inside = (boxes[:, 0] > y0) & (boxes[:, 1] < y1) & (boxes[:, 2] > x0) & (boxes[:, 3] < x1)
        encloses[index] = bool(inside.any())
    return encloses


def _glyph_mask(boxes: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """True for components that could be glyphs; frames, arrows and large shapes are False."""
    if len(boxes) == 0:
        return np.zeros(0, dtype=bool)
    height, width = boxes[:, 1] - boxes[:, 0], boxes[:, 3] - boxes[:, 2]
    too_large = (height > _MAX_GLYPH_HEIGHT * shape[0]) | (width > _MAX_GLYPH_WIDTH * shape[1])
    # No glyph contains another glyph, so anything that does is a frame around a label.
    sizeable = (height >= _MIN_GLYPH_PX) & (width >= _MIN_GLYPH_PX)
    drawing = too_large | _encloses_other_ink(boxes, ~too_large & sizeable)
    sized = ~drawing & (height >= _MIN_GLYPH_PX)
    if not sized.any():
        return ~drawing
    # Relative to the typical glyph: arrow shafts are long and flat, axes and leader lines tall.
    typical = float(np.median(height[sized]))
    long_flat = (width > 3 * typical) & (width > 2.5 * height)
    tall = height > 3 * typical
    return ~(drawing | long_flat | tall)


def _margin_px(image: Image.Image, fraction: float = _MARGIN) -> int:
    return round(fraction * max(image.size))


def _with_margin(image: Image.Image, fraction: float = _MARGIN) -> Image.Image:
    """The image on a white canvas with a margin: Tesseract misses text that touches the border."""
    pad = _margin_px(image, fraction)
    canvas = Image.new("L", (image.width + 2 * pad, image.height + 2 * pad), 255)
    canvas.paste(image, (pad, pad))
    return canvas


def _grey_on_white(image: Image.Image) -> np.ndarray:
    """Grey levels, with transparent pixels shown on white (a transparent background is not ink)."""
    if image.mode in ("RGBA", "LA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(white, rgba)
    return np.asarray(image.convert("L"))


def prepare_for_ocr(image: Image.Image) -> Image.Image:
    """Black glyphs on white with drawing ink erased, rescaled to Tesseract's preferred glyph size."""
    return _prepared(image)[0]


def _prepared(image: Image.Image) -> tuple[Image.Image, float, int]:
    """``prepare_for_ocr``'s image, with the scale applied and the margin added (pixels, each side)."""
    ink = _grey_on_white(image) < _INK_THRESHOLD
    labels, boxes = _component_boxes(ink)
    keep = _glyph_mask(boxes, ink.shape)
    glyph_ink = np.concatenate([[False], keep])[labels]
    cleaned = Image.fromarray(np.where(glyph_ink, 0, 255).astype(np.uint8))
    heights = boxes[keep, 1] - boxes[keep, 0]
    scale = 1.0
    if (heights >= _MIN_GLYPH_PX).any():
        glyph_height = float(np.median(heights[heights >= _MIN_GLYPH_PX]))
        scale = min(_MAX_UPSCALE, _TARGET_GLYPH_PX / glyph_height, _MAX_SIDE_PX / max(ink.shape))
        scale = max(scale, _MIN_SCALE)
        if abs(scale - 1.0) > 0.1:
            size = (round(cleaned.width * scale), round(cleaned.height * scale))
            cleaned = cleaned.resize(size, Image.Resampling.LANCZOS)
            scale = cleaned.width / ink.shape[1]
        else:
            scale = 1.0
    return _with_margin(cleaned), scale, _margin_px(cleaned)


def _words_by_line(data: dict[str, list[Any]]) -> list[list[OcrWord]]:
    """Group Tesseract's words by its (block, paragraph, line), in reading order."""
    lines: dict[tuple[int, int, int], list[OcrWord]] = {}
    for i, text in enumerate(data["text"]):
        confidence = float(data["conf"][i])
        if not text.strip() or confidence < 0:
            continue
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        word = OcrWord(
            text.strip(), confidence, data["left"][i], data["top"][i], data["width"][i], data["height"][i]
        )
        lines.setdefault(key, []).append(word)
    return [sorted(words, key=lambda w: w.left) for _, words in sorted(lines.items())]


def _split_on_gaps(words: list[OcrWord]) -> list[OcrLine]:
    """Split a line where the gap between words is wider than the words are tall (separate labels)."""
    segments: list[list[OcrWord]] = [[words[0]]]
    for previous, word in zip(words, words[1:], strict=False):
        gap = word.left - (previous.left + previous.width)
        if gap > 1.5 * max(previous.height, word.height):
            segments.append([])
        segments[-1].append(word)
    return [OcrLine(tuple(segment)) for segment in segments]


def read_text(png: bytes, lang: str = "eng") -> OcrReading:
    """Read all text in a PNG (or any format PIL decodes). Raises ValueError for undecodable bytes."""
    prepared, scale, offset = _prepared(decode_png(png))
    # Sparse-text mode: figures scatter labels instead of laying out paragraphs.
    data = pytesseract.image_to_data(
        prepared, lang=lang, config="--psm 11", output_type=pytesseract.Output.DICT
    )
    lines = [line for words in _words_by_line(data) for line in _split_on_gaps(words)]
    return OcrReading(tuple(lines), scale, offset)


class _ReadingMemo:
    """Readings of recently seen images, so several tasks on one image read it once."""

    def __init__(self, read: Callable[[bytes], OcrReading], size: int = 1024) -> None:
        self._read, self._size = read, size
        self._readings: OrderedDict[str, OcrReading] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, png: bytes) -> OcrReading:
        key = sha256_hex(png)
        with self._lock:
            if key in self._readings:
                self._readings.move_to_end(key)
                return self._readings[key]
        reading = self._read(png)
        with self._lock:
            self._readings[key] = reading
            if len(self._readings) > self._size:
                self._readings.popitem(last=False)
        return reading


# One memo per language for the whole process: Kedro builds a fresh judge for every node, and the
# nodes of one run (checklist judging, AIBench questions) ask about the same images.
_SHARED_MEMOS: dict[str, _ReadingMemo] = {}


def shared_reader(lang: str) -> _ReadingMemo:
    """The process-wide memo of Tesseract readings in ``lang`` (a reading depends only on the bytes)."""
    if lang not in _SHARED_MEMOS:
        _SHARED_MEMOS[lang] = _ReadingMemo(lambda png: read_text(png, lang))
    return _SHARED_MEMOS[lang]


class JudgeItem(BaseModel):
    """One checklist question as the judge task receives it."""

    id: str
    question: str
    layer: int
    track: str
    expected_text: str | None = None
    # Structured fields of SciIR checklists (absent from checklists made elsewhere): what kind of fact,
    # whether the question asserts it or the absence of a fault, and the strings it is about.
    kind: str | None = None
    polarity: str = "positive"
    about: list[str] = []


def abstention(item: JudgeItem, reasoning: str, evidence: str = "") -> dict[str, Any]:
    """A null verdict with the reason the question cannot be judged."""
    return {"id": item.id, "verdict": None, "evidence": evidence, "reasoning": f"abstained: {reasoning}"}


def judge_item(item: JudgeItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one checklist question from what was read; abstain when OCR cannot tell."""
    if not item.expected_text:
        return abstention(item, f"OCR reads text only and cannot judge a {item.track} question")
    found = reading.find(item.expected_text) is not None
    how = "with exactly this spelling" if found else "nowhere with exactly this spelling"
    return {
        "id": item.id,
        "verdict": "yes" if found else "no",
        "evidence": reading.excerpt(item.expected_text),
        "reasoning": f'OCR found "{item.expected_text}" {how}.',
    }


def judge_by_ocr(request: VLMRequest, read: Callable[[bytes], OcrReading]) -> VLMResult:
    """The ``judge`` task answered from OCR: spelling checks judged, everything else abstained."""
    return judge_checklist(
        request, read, lambda items, reading, image: [judge_item(item, reading) for item in items]
    )


ItemsAnswerer = Callable[[Sequence[JudgeItem], OcrReading, bytes], list[dict[str, Any]]]


def judge_checklist(
    request: VLMRequest, read: Callable[[bytes], OcrReading], answer: ItemsAnswerer
) -> VLMResult:
    """The ``judge`` task: validate the request's checklist, read its image, answer every item."""
    if len(request.images) != 1:
        return VLMResult.failed(f"judge request needs exactly one image, got {len(request.images)}")
    try:
        items = [JudgeItem.model_validate(item) for item in request.context.get("checklist", [])]
    except ValidationError as error:
        return VLMResult.failed(f"judge request has a malformed checklist: {error}")
    if not items:
        return VLMResult.failed("judge request has no checklist questions (context key 'checklist')")
    reading = read(request.images[0])
    return VLMResult(output={"answers": answer(items, reading, request.images[0])})


class SolverItem(BaseModel):
    """One AIBench question as the ``aibench_qa`` task receives it (``label``: the component a level-1
    question asks about)."""

    id: str
    level: int
    question: str
    label: str | None = None


def one_edit_apart(first: str, second: str) -> bool:
    """Whether one character substituted, inserted or deleted turns ``first`` into ``second`` (or they are
    equal): "R1" read as "Rl" is as close as two short labels get without being the same."""
    if abs(len(first) - len(second)) > 1:
        return False
    shorter, longer = sorted((first, second), key=len)
    for index, (a, b) in enumerate(zip(shorter, longer, strict=False)):
        if a != b:
            rest = index + 1 if len(shorter) == len(longer) else index
            return shorter[rest:] == longer[index + 1 :]
    return True


def resembles(text: str, label: str) -> bool:
    """Whether ``text`` read may be ``label`` misspelt or misread (ignoring case): similar by at least
    ``_NEAR_MATCH``, or one character apart (a short label's one misread glyph)."""
    a, b = text.casefold(), label.casefold()
    return one_edit_apart(a, b) or difflib.SequenceMatcher(None, a, b).ratio() >= _NEAR_MATCH


def near_miss(reading: OcrReading, label: str) -> str | None:
    """A run of words read that is close to ``label`` without being it (misspelt or misread: OCR cannot
    tell which), ignoring case; None when nothing read is that close."""
    words = reading.normalised_text.split()
    size = max(1, len(label.split()))
    spans = [" ".join(words[i : i + size]) for i in range(len(words) - size + 1)] or [" ".join(words)]
    return next((span for span in spans if span and resembles(span, label)), None)


def _solver_answer(item: SolverItem, answer: str | None, evidence: str) -> dict[str, Any]:
    return {"id": item.id, "answer": answer, "evidence": evidence}


def answer_component(item: SolverItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one AIBench question from what was read: only component existence, and only when clear."""
    if item.level != 1 or not item.label:
        return _solver_answer(
            item, None, f"abstained: OCR reads text only and cannot answer a level-{item.level} question"
        )
    text = reading.normalised_text
    if not text:
        return _solver_answer(item, None, "abstained: no text was read in the image")
    if reading.find(item.label, ignore_case=True):
        return _solver_answer(item, "yes", reading.excerpt(item.label, ignore_case=True))
    closest = near_miss(reading, item.label)
    if closest is not None:
        return _solver_answer(
            item,
            None,
            f'abstained: read "{closest}", close to "{item.label}" (misspelt or misread: OCR cannot tell)',
        )
    closest = closest_span(text, normalise_whitespace(item.label))
    return _solver_answer(item, "no", f'"{item.label}" was not read; closest text read: "{closest}"')


def answer_aibench_by_ocr(request: VLMRequest, read: Callable[[bytes], OcrReading]) -> VLMResult:
    """The ``aibench_qa`` task answered from OCR: component existence judged, every other level abstained."""
    if len(request.images) != 1:
        return VLMResult.failed(f"aibench_qa request needs exactly one image, got {len(request.images)}")
    try:
        items = [SolverItem.model_validate(item) for item in request.context.get("questions", [])]
    except ValidationError as error:
        return VLMResult.failed(f"aibench_qa request has malformed questions: {error}")
    if not items:
        return VLMResult.failed("aibench_qa request has no questions (context key 'questions')")
    reading = read(request.images[0])
    return VLMResult(output={"answers": [answer_component(item, reading) for item in items]})


# The tasks OCR can answer honestly, each from the image's text.
OCR_TASKS: dict[str, Callable[[VLMRequest, Callable[[bytes], OcrReading]], VLMResult]] = {
    "judge": judge_by_ocr,
    "aibench_qa": answer_aibench_by_ocr,
}


class OcrVLM(VisionLanguageModel):
    """Answers exact-spelling checks (``judge``) and component existence (``aibench_qa``) with Tesseract;
    abstains on the rest.

    Config: ``lang`` (Tesseract language codes, default ``eng``).
    """

    def __init__(self, **config: Any) -> None:
        super().__init__(**config)
        self.lang: str = config.get("lang", "eng")
        require_tesseract(self.lang)
        self.read = shared_reader(self.lang)

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        return [self._answer(request) for request in requests]

    def _answer(self, request: VLMRequest) -> VLMResult:
        handler = OCR_TASKS.get(request.task)
        if handler is None:
            return VLMResult.failed(f"ocr backend does not handle task {request.task!r}")
        try:
            return handler(request, self.read)
        except (ValueError, pytesseract.TesseractError) as error:  # this request fails, the batch goes on
            return VLMResult.failed(f"{request.task} request could not be read by OCR: {error}")
