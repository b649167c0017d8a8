"""The offline backend's rules on a drawn workflow figure with a realistic caption and methods text."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib
import pytest
from PIL import Image, ImageDraw, ImageFont

from sciir.backends.base import VLMRequest
from sciir.backends.offline import OfflineVLM
from sciir.backends.readers.text import OcrLine, OcrReading, OcrWord
from sciir.tasks.checklist import Checklist
from sciir.tasks.reasoning import Reasoning, figure_kind, plausible_labels, stated_laws, visible_caption_terms
from sciir.tasks.registry import ANNOTATION_TASKS, rule_book
from sciir.tasks.track_scores import TrackScores, score_from_cues, track_cues

FONT = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
STEPS = ("Sample collection", "RNA extraction", "Sequencing")
CAPTION = (
    "Workflow for RNA sequencing in three steps starting at Sample collection; each stage leads to the next. "
    "Read counts are proportional to transcript abundance."
)
# The methods imply the order across sentences and state no pair explicitly: relations come from the arrows.
METHODS = (
    "The protocol begins with sample collection. RNA extraction is then carried out. Reads were aligned."
)


def _workflow_png() -> bytes:
    """Three boxed steps top to bottom joined by arrows, plus a tick-like number that is not a label."""
    image = Image.new("RGB", (1024, 1024), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(FONT), 32)
    for index, step in enumerate(STEPS):
        top = 120 + 280 * index
        width = draw.textlength(step, font=font)
        draw.rectangle((512 - width / 2 - 36, top, 512 + width / 2 + 36, top + 90), outline="black", width=3)
        draw.text((512 - width / 2, top + 26), step, fill="black", font=font)
        if index < len(STEPS) - 1:
            draw.line((512, top + 90, 512, top + 260), fill="black", width=3)
            draw.polygon([(498, top + 250), (526, top + 250), (512, top + 280)], fill="black")
    draw.text((60, 960), "2.5", fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def figure() -> bytes:
    return _workflow_png()


@pytest.fixture(scope="module")
def offline() -> OfflineVLM:
    return OfflineVLM(rule_book("offline"))


def _ask(offline: OfflineVLM, task: str, context: dict, image: bytes | None = None):
    [result] = offline.generate([ANNOTATION_TASKS[task].build(context, image)])
    return ANNOTATION_TASKS[task].parse_output(result)


def test_track_scores_follow_text_evidence_only(offline: OfflineVLM, figure: bytes) -> None:
    scores = _ask(offline, "track_scores", {"caption": CAPTION, "methods_text": METHODS}, figure)
    assert isinstance(scores, TrackScores)
    assert scores.process == 10  # workflow, step, stage, leads to in the caption
    assert scores.law == 7  # "proportional" once in the caption
    assert scores.entity == 1
    assert '"proportional" (caption)' in scores.rationale


def test_methods_text_alone_never_reaches_the_label_threshold() -> None:
    cues = track_cues({"caption": "A figure.", "methods text": "The equation and the law of conservation."})
    assert score_from_cues(cues["law"]) == 4
    assert score_from_cues(cues["entity"]) == 1


def test_reasoning_reads_labels_and_relations_from_the_arrows(offline: OfflineVLM, figure: bytes) -> None:
    reasoning = _ask(offline, "reasoning", {"caption": CAPTION, "methods_text": METHODS}, figure)
    assert isinstance(reasoning, Reasoning)
    assert reasoning.required_text == list(STEPS)  # "2.5" is not a label
    assert reasoning.terms[: len(STEPS)] == list(STEPS)
    assert reasoning.relations == [["Sample collection", "RNA extraction"], ["RNA extraction", "Sequencing"]]
    rcot = reasoning.sci_rcot
    assert rcot.startswith("Style: flow diagram on a white background.")
    assert rcot.index("Required text") < rcot.index("Entity structure") < rcot.index("Topology")
    assert "Law: Read counts are proportional to transcript abundance." in rcot
    # No label writes a law, so the law is the caption's statement of it.
    assert reasoning.laws == ["Read counts are proportional to transcript abundance."]
    # Per track, only what the drawing shows: its arrows; the caption's law is drawn nowhere.
    assert reasoning.tracks is not None
    assert reasoning.tracks.process.visualizations == [
        "arrow from Sample collection to RNA extraction",
        "arrow from RNA extraction to Sequencing",
    ]
    assert reasoning.tracks.process.terms == list(STEPS)
    assert reasoning.tracks.law.terms == reasoning.tracks.law.visualizations == []
    assert reasoning.tracks.entity.terms == reasoning.tracks.entity.visualizations == []


def test_laws_written_in_the_image_come_before_the_caption() -> None:
    caption = "Ohm's law for a resistor: the equation V = I R, written on the plot, gives the relationship."
    assert stated_laws(caption, ["Ohmic resistor", "Voltage (V)", "V = I R"]) == ["V = I R"]
    assert stated_laws(caption, ["Ohmic resistor"]) == [caption]
    assert stated_laws("A workflow in three steps.", ["Pump"]) == []
    panels = "Ohmic resistor and Pump. (a) Workflow of a pump. (b) Ohm's law holds for the resistor."
    assert stated_laws(panels, ["Pump"]) == ["Ohm's law holds for the resistor."]


def test_abstract_prompt_keeps_style_and_names_terms(offline: OfflineVLM) -> None:
    context = {
        "caption": CAPTION,
        "terms": list(STEPS),
        "sci_rcot": "Style: flow diagram on a white background. Required text: ...",
    }
    prompt = _ask(offline, "abstract_prompt", context).prompt
    assert prompt.startswith("A flow diagram on a white background")
    assert all(f'"{step}"' in prompt for step in STEPS)
    assert "leads to" not in prompt  # no description of the flow: the model must reason it out


def _checklist_context(tracks: list[str], laws: list[str] | None = None) -> dict:
    return {
        "terms": ["Glucose", "Pyruvate", "Mass conservation"],
        "required_text": ["Glucose", "Pyruvate"],
        "relations": [["Glucose", "Pyruvate"]],
        "laws": ["Mass conservation: six carbons in = six carbons out"] if laws is None else laws,
        "tracks": tracks,
    }


def _fields(question) -> tuple:
    return question.kind, question.polarity, question.about


def test_checklist_layers_ids_and_parents(offline: OfflineVLM) -> None:
    checklist = _ask(offline, "checklist", _checklist_context(["entity", "process", "law"]))
    assert isinstance(checklist, Checklist)
    by_id = {q.id: q for q in checklist.questions}
    assert by_id["L1-01"].question == 'Is the text "Glucose" rendered with exactly this spelling?'
    assert (
        _fields(by_id["L1-02"]) == ("text", "positive", ["Pyruvate"])
        and by_id["L1-02"].expected_text == "Pyruvate"
    )
    # entity: a positive and a negative (not duplicated) question per term; the term naming a law is left out
    entity = [q for q in checklist.questions if q.track == "entity"]
    assert [(q.id, *_fields(q)) for q in entity] == [
        ("L2-entity-01", "entity", "positive", ["Glucose"]),
        ("L2-entity-02", "entity", "negative", ["Glucose"]),
        ("L2-entity-03", "entity", "positive", ["Pyruvate"]),
        ("L2-entity-04", "entity", "negative", ["Pyruvate"]),
    ]
    assert "not duplicated" in by_id["L2-entity-02"].question
    assert by_id["L2-process-01"].question == 'Is there an arrow from "Glucose" to "Pyruvate"?'
    assert _fields(by_id["L2-process-01"]) == ("relation", "positive", ["Glucose", "Pyruvate"])
    assert by_id["L2-process-01"].parent_ids == ["L2-entity-01", "L2-entity-03"]
    assert 'no arrow from "Pyruvate" to "Glucose"' in by_id["L2-process-02"].question
    assert _fields(by_id["L2-process-02"]) == ("relation", "negative", ["Pyruvate", "Glucose"])
    law = [q for q in checklist.questions if q.track == "law"]
    statement = ["Mass conservation: six carbons in = six carbons out"]
    assert [_fields(q) for q in law] == [("law", "positive", statement), ("law", "negative", statement)]
    assert law[1].parent_ids == [law[0].id]


@pytest.mark.parametrize("track", ["entity", "process", "law"])
def test_each_labelled_track_gets_positive_and_negative_questions(offline: OfflineVLM, track: str) -> None:
    checklist = _ask(offline, "checklist", _checklist_context([track]))
    layer2 = [q for q in checklist.questions if q.layer == 2]
    assert {q.track for q in layer2} == {track}
    assert {q.polarity for q in layer2} == {"positive", "negative"}


def test_checklist_without_anything_to_check_fails(offline: OfflineVLM) -> None:
    request = ANNOTATION_TASKS["checklist"].build(
        {"terms": [], "required_text": [], "relations": [], "laws": [], "tracks": ["law"]}
    )
    [result] = offline.generate([request])
    assert not result.ok and "nothing to check" in result.failure


def _item(qid: str, kind: str | None, about: list[str], polarity: str = "positive", **fields) -> dict:
    track = {"text": "text", "entity": "entity", "relation": "process", "law": "law", None: "entity"}[kind]
    item = {
        "id": qid,
        "question": "q",
        "layer": 1 if kind == "text" else 2,
        "track": track,
        "expected_text": about[0] if kind == "text" else None,
    }
    if kind is not None:
        item |= {"kind": kind, "polarity": polarity, "about": about}
    return item | fields


def test_judge_answers_what_the_drawing_shows_and_unknown_tasks_fail(
    offline: OfflineVLM, figure: bytes
) -> None:
    checklist = [
        _item("text", "text", ["RNA extraction"]),
        _item("entity", "entity", ["RNA extraction"]),
        _item("once", "entity", ["RNA extraction"], "negative"),
        _item("arrow", "relation", ["Sample collection", "RNA extraction"]),
        _item("not reversed", "relation", ["RNA extraction", "Sample collection"], "negative"),
        _item("reversed", "relation", ["Sequencing", "RNA extraction"]),
        _item("skipping", "relation", ["Sample collection", "Sequencing"]),
        _item("law", "law", ["Read counts are proportional to transcript abundance."]),
        _item("unstructured", None, ["RNA extraction"]),  # a checklist without kinds: only text is judged
    ]
    context = {"checklist": checklist, "prompt": "p"}
    answers, unknown = offline.generate(
        [
            VLMRequest(task="judge", prompt="p", images=[figure], context=context),
            VLMRequest(task="caption", prompt="p"),
        ]
    )
    verdicts = {a["id"]: a["verdict"] for a in answers.output["answers"]}
    assert verdicts == {
        "text": "yes",
        "entity": "yes",
        "once": "yes",
        "arrow": "yes",
        "not reversed": "yes",
        "reversed": "no",
        "skipping": "no",
        "law": None,  # not written in the image
        "unstructured": None,
    }
    assert unknown.failure.startswith(
        "offline backend: no task 'caption' is registered (known: ['abstract_prompt'"
    )


def test_answers_are_deterministic(figure: bytes) -> None:
    request = ANNOTATION_TASKS["reasoning"].build({"caption": CAPTION, "methods_text": METHODS}, figure)
    first, second = (
        OfflineVLM(rule_book("offline")).generate([request]),
        OfflineVLM(rule_book("offline")).generate([request]),
    )
    assert first[0].output == second[0].output


def test_figure_kind_comes_from_the_panels_own_description() -> None:
    caption = (
        "RL circuit, Capacitor discharge and Dopamine. (a) Schematic of the RL circuit built from Vin and R1. "
        "(b) The discharge law: the equation gives the relationship between Voltage (%) and Time (ms). "
        "(c) Two-dimensional structure of the Dopamine molecule."
    )
    assert figure_kind(caption, ["RL circuit", "Vin", "R1"]) == "circuit schematic"
    assert figure_kind(caption, ["Capacitor discharge", "Voltage (%)", "Time (ms)"]) == "data plot"
    assert figure_kind(caption, ["Dopamine", "OH"]) == "structural drawing"
    assert figure_kind("A photograph.", []) == "scientific figure"


def test_caption_terms_count_only_when_read_in_the_image_outside_labels() -> None:
    def line(*words: tuple[str, float]) -> OcrLine:
        return OcrLine(tuple(OcrWord(text, conf, 0, 0, 10, 10) for text, conf in words))

    reading = OcrReading((line(("Glucose", 95.0)), line(("Pyruvate", 90.0), ("~~", 5.0))))
    labels = plausible_labels(reading, min_confidence=60)
    assert labels == ["Glucose"]  # the second line's mean confidence is too low for a label
    caption = "Glucose is oxidised to pyruvate and lactate with their enzymes."
    assert visible_caption_terms(caption, reading, labels, min_confidence=60) == ["pyruvate"]


def _blank_png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (256, 256), "white").save(buffer, format="PNG")
    return buffer.getvalue()


def test_aibench_component_existence_is_answered_from_the_text_read(
    offline: OfflineVLM, figure: bytes
) -> None:
    items = [
        {"id": "present", "level": 1, "question": "q", "label": "Sample collection"},
        {"id": "other case", "level": 1, "question": "q", "label": "rna extraction"},
        {"id": "absent", "level": 1, "question": "q", "label": "Aspirin"},
        {"id": "near", "level": 1, "question": "q", "label": "Sequencng"},
        {"id": "topology", "level": 2, "question": 'Does "Sequencing" feed directly into "RNA extraction"?'},
    ]
    [result] = offline.generate(
        [VLMRequest(task="aibench_qa", prompt="p", images=[figure], context={"questions": items})]
    )
    answers = {a["id"]: a for a in result.output["answers"]}
    assert {qid: a["answer"] for qid, a in answers.items()} == {
        "present": "yes",
        "other case": "yes",
        "absent": "no",
        "near": None,  # a misspelt label or a misread one: OCR cannot tell, so it does not say "no"
        "topology": None,
    }
    assert "Sample collection" in answers["present"]["evidence"]
    assert "cannot answer a level-2 question" in answers["topology"]["evidence"]


def test_aibench_abstains_when_no_text_is_read_and_fails_bad_requests(offline: OfflineVLM) -> None:
    item = {"id": "q", "level": 1, "question": "q", "label": "Glucose"}
    blank, no_questions, malformed = offline.generate(
        [
            VLMRequest(task="aibench_qa", prompt="p", images=[_blank_png()], context={"questions": [item]}),
            VLMRequest(task="aibench_qa", prompt="p", images=[_blank_png()], context={"questions": []}),
            VLMRequest(
                task="aibench_qa", prompt="p", images=[_blank_png()], context={"questions": [{"id": 1}]}
            ),
        ]
    )
    assert blank.output["answers"] == [
        {"id": "q", "answer": None, "evidence": "abstained: no text was read in the image"}
    ]
    assert not no_questions.ok and "no questions" in no_questions.failure
    assert not malformed.ok and "malformed questions" in malformed.failure


def test_aesthetics_are_abstained_on_for_every_criterion(offline: OfflineVLM, figure: bytes) -> None:
    from sciir.tasks.aesthetics import AESTHETICS_RUBRIC, build_aesthetics_request, parse_aesthetics_reply

    [result] = offline.generate([build_aesthetics_request(figure)])
    assert {name: result.output[name] for name in AESTHETICS_RUBRIC} == dict.fromkeys(AESTHETICS_RUBRIC)
    rating = parse_aesthetics_reply(result, "offline/s1")
    assert rating.status == "abstained" and "cannot judge visual design" in rating.rationale
