"""Yes/no checks rules can make of an image, each with its evidence, or abstained on with the reason: the
answers of the rule-based judge (``sciir.tasks.judge``), whose local-topology questions the AIBench solver
(``sciir.tasks.aibench_qa``) asks too. They read what the readers see (``sciir.backends.readers``).

- text (layer 1): exact spelling read by OCR. Found is "yes". Not found is "no" only where the reading is
  reliable on the image (``Legibility``: every mark that looks like text lies inside a word read with
  confidence, so a label drawn there would have been read); otherwise, or when the label has glyphs OCR
  does not read, its words were read apart, or text read close to it may be it misread
  (``doubt_about_absence``), the second recogniser reads the image and a label it reads is "yes"; else the
  check is abstained on with the reason. A confident misspelling ("Glucse" read where "Glucose" is asked)
  is a fault and "no".
- entity: "yes" when the label is read inside a drawn closed shape; "no" only when every shape in
  the image holds text that was read, none of it is the label, and nothing read resembles it (a
  misspelt label is still drawn). The negative ("drawn once, not duplicated"): "no" when two or more
  shapes hold the label, "yes" when exactly one does.
- relation [A, B]: both labels must each be read inside exactly one shape. Positive ("an arrow from
  A to B"): "yes" for a stroke from A's shape with its arrowhead at B's; "no" for one pointing from B
  to A, or when no stroke joins them while the image has arrows and no stroke leaving A or B ends
  unattached. Negative ("no arrow from A to B"): "no" for an arrow from A to B, "yes" when every
  stroke between them points from B to A or none joins them.
- law [statement]: only where the law is written in the image. Positive: "yes" when the statement is
  read. Negative ("nothing contradicts it"): "no" when an equation for the same left side with another
  right side is read, "yes" when the statement itself is read and nothing contradicts it.

Whatever cannot be seen (labels unread, no shapes, an arrow without a clear head, a law not written)
is abstained on: a wrong "no" on a correct image costs more than a question left unjudged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError

from sciir.backends.base import VLMRequest, VLMResult
from sciir.backends.readers.diagram import Diagram, Shape, read_diagram
from sciir.backends.readers.misreadings import doubt_about_absence, near_miss, resembles
from sciir.backends.readers.second_reader import with_second_reading
from sciir.backends.readers.text import OcrReading
from sciir.backends.rule_based import Sight
from sciir.tasks.laws import contradicting, states

Answer = dict[str, Any]
QuestionItem = TypeVar("QuestionItem", bound=BaseModel)


def answer_each_question(
    request: VLMRequest,
    sight: Sight,
    question: type[QuestionItem],
    key: str,
    answer: Callable[[list[QuestionItem], OcrReading, bytes], Sequence[Answer]],
    malformed: str = "malformed questions",
    missing: str = "questions",
) -> VLMResult:
    """Validate the questions a request lists under context ``key``, read its one image (the second
    recogniser reading it again where Tesseract leaves doubt) and answer them all; a request without exactly
    one image, or with malformed or no questions, fails naming the task and what is wrong."""
    if len(request.images) != 1:
        return VLMResult.failed(f"{request.task} request needs exactly one image, got {len(request.images)}")
    try:
        items = [question.model_validate(item) for item in request.context.get(key, [])]
    except ValidationError as error:
        return VLMResult.failed(f"{request.task} request has {malformed}: {error}")
    if not items:
        return VLMResult.failed(f"{request.task} request has no {missing} (context key '{key}')")
    reading = with_second_reading(sight.read(request.images[0]), request.images[0])
    return VLMResult(output={"answers": list(answer(items, reading, request.images[0]))})


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


def answer_text(item: JudgeItem, reading: OcrReading) -> dict[str, Any]:
    """Answer one checklist question from what was read; abstain when OCR cannot tell.

    Found: "yes". Not found: "no", unless ``doubt_about_absence`` finds a reason why the label may still
    be drawn: then the second recogniser reads the image (``with_second_reading``; "yes" if it reads the
    label), else abstained on with that reason.
    """
    if not item.expected_text:
        return abstention(item, f"OCR reads text only and cannot judge a {item.track} question")
    label = item.expected_text
    found = reading.find(label) is not None
    doubt = None if found else doubt_about_absence(reading, label)
    # Where Tesseract's reading leaves doubt, the second recogniser reads the image again.
    if found or (doubt is not None and reading.find(label, reread=True) is not None):
        return {
            "id": item.id,
            "verdict": "yes",
            "evidence": reading.excerpt(label),
            "reasoning": f'OCR found "{label}" with exactly this spelling.',
        }
    if doubt is not None:
        return abstention(item, doubt, reading.excerpt(label))
    return {
        "id": item.id,
        "verdict": "no",
        "evidence": reading.excerpt(label),
        "reasoning": (
            f'OCR found "{label}" nowhere with exactly this spelling, and read all the text in the image.'
        ),
    }


def _verdict(item: JudgeItem, verdict: str, evidence: str, reasoning: str) -> Answer:
    return {"id": item.id, "verdict": verdict, "evidence": evidence, "reasoning": reasoning}


def _where(shape: Shape) -> str:
    x0, y0, x1, y1 = shape.box
    return f"shape at x {x0}-{x1}, y {y0}-{y1}"


def _unlocated(label: str, reading: OcrReading) -> str:
    """Why ``label`` was not found inside a shape (for an abstention)."""
    if reading.find(label, ignore_case=True):
        return f'"{label}" is read outside any drawn shape'
    closest = near_miss(reading, label)
    if closest is not None:
        return f'read "{closest}", close to "{label}" (misspelt or misread: OCR cannot tell)'
    return f'"{label}" is not read inside any drawn shape'


def answer_entity(item: JudgeItem, reading: OcrReading, diagram: Diagram) -> Answer:
    """Whether the label is drawn inside a shape (positive) or inside one shape only (negative)."""
    label = item.about[0]
    holding = diagram.labelled(label)
    evidence = "; ".join(_where(shape) for shape in holding)
    if item.polarity == "negative":
        if len(holding) > 1:
            return _verdict(item, "no", evidence, f'"{label}" is read inside {len(holding)} drawn shapes.')
        if len(holding) == 1:
            return _verdict(item, "yes", evidence, f'"{label}" is read inside exactly one drawn shape.')
        return abstention(item, _unlocated(label, reading))
    if holding:
        return _verdict(item, "yes", evidence, f'"{label}" is read inside a drawn shape.')
    if reading.find(label, ignore_case=True) or near_miss(reading, label) is not None:
        return abstention(item, _unlocated(label, reading))
    if not diagram.all_shapes_read:
        return abstention(item, "the image has no drawn shapes whose text was all read")
    close = [shape.text for shape in diagram.shapes if resembles(shape.text, label)]
    if close:
        return abstention(item, f'a shape holds "{close[0]}", close to "{label}" (misspelt or misread)')
    texts = ", ".join(f'"{shape.text}"' for shape in diagram.shapes)
    return _verdict(
        item, "no", f"shapes read: {texts}", f'No drawn shape holds "{label}", nor anything close.'
    )


def _single_shape(label: str, diagram: Diagram) -> Shape | None:
    holding = diagram.labelled(label)
    return holding[0] if len(holding) == 1 else None


def answer_relation(item: JudgeItem, reading: OcrReading, diagram: Diagram) -> Answer:
    """Whether an arrow joins the two labelled shapes in the asked direction (see the module docstring)."""
    source, target = item.about
    ends = {label: _single_shape(label, diagram) for label in (source, target)}
    for label, shape in ends.items():
        if shape is None:
            count = len(diagram.labelled(label))
            why = f'"{label}" is read inside {count} shapes' if count > 1 else _unlocated(label, reading)
            return abstention(item, why)
    # Both shapes are found: the loop above returned otherwise.
    source_shape, target_shape = cast(Shape, ends[source]), cast(Shape, ends[target])
    a, b = source_shape.index, target_shape.index
    evidence = f'"{source}": {_where(source_shape)}; "{target}": {_where(target_shape)}'
    joining = diagram.joining(a, b)
    forward = any(stroke.points(a, b) for stroke in joining)
    backward = any(stroke.points(b, a) for stroke in joining)
    undirected = any(not stroke.directed for stroke in joining)
    arrow, reverse = f'an arrow from "{source}" to "{target}"', f'an arrow from "{target}" to "{source}"'
    if item.polarity == "negative":
        if forward:
            return _verdict(item, "no", evidence, f"There is {arrow}.")
        if undirected:
            return abstention(item, "a line joins the two shapes but its arrowhead is not clear", evidence)
        found = f"only {reverse}" if backward else "no line between the two shapes"
        return _verdict(item, "yes", evidence, f"There is {found}.")
    if forward:
        return _verdict(item, "yes", evidence, f"There is {arrow}.")
    if backward:
        return _verdict(item, "no", evidence, f"The arrow between them points the other way: {reverse}.")
    if undirected:
        return abstention(item, "a line joins the two shapes but its arrowhead is not clear", evidence)
    if not diagram.strokes or {a, b} & diagram.loose:
        return abstention(
            item, "no arrow is seen joining the two shapes, but lines may be unattached", evidence
        )
    return _verdict(item, "no", evidence, "No line joins the two shapes.")


def answer_law(item: JudgeItem, reading: OcrReading) -> Answer:
    """Whether the law is written in the image (positive) and nothing written contradicts it (negative)."""
    statement = item.about[0]
    lines = [line.text for line in reading.lines]
    written = states(statement, reading.normalised_text)
    if item.polarity == "negative":
        against = contradicting(statement, lines)
        if against:
            quoted = "; ".join(f'"{text}"' for text in against)
            return _verdict(
                item, "no", f"read {quoted}", f'The image writes an equation contradicting "{statement}".'
            )
        if written:
            return _verdict(
                item,
                "yes",
                reading.excerpt(statement, ignore_case=True),
                f'The image writes "{statement}" and nothing that contradicts it.',
            )
        return abstention(
            item, "the law is not written in the image, and a drawing's obedience cannot be read"
        )
    if written:
        return _verdict(
            item, "yes", reading.excerpt(statement, ignore_case=True), f'The image writes "{statement}".'
        )
    return abstention(item, "the law is not written in the image, and a drawing's obedience cannot be read")


def answer_item(item: JudgeItem, reading: OcrReading, diagram: Callable[[], Diagram]) -> Answer:
    """One question by its kind; a question without structured fields is judged as text or abstained on."""
    if item.kind in (None, "text"):
        return answer_text(item, reading)
    if not item.about:
        return abstention(item, f"the {item.kind} question names nothing it is about")
    if item.kind == "law":
        return answer_law(item, reading)
    if item.kind == "entity":
        return answer_entity(item, reading, diagram())
    if item.kind == "relation" and len(item.about) == 2:
        return answer_relation(item, reading, diagram())
    return abstention(item, f"no rule reads a {item.kind} question from pixels")


def lazy_diagram(image: bytes, reading: OcrReading) -> Callable[[], Diagram]:
    """The image's diagram, analysed on the first call only (analysis is slow; text questions skip it)."""
    analysed: list[Diagram] = []

    def diagram() -> Diagram:
        if not analysed:
            analysed.append(read_diagram(image, reading))
        return analysed[0]

    return diagram
