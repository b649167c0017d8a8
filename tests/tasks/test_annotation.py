"""Prompt templates, request building and strict output parsing of the annotation tasks."""

from __future__ import annotations

import json

import pytest

from sciir.backends.base import VLMResult
from sciir.tasks.annotation import AnnotationError
from sciir.tasks.registry import ANNOTATION_TASKS
from sciir.tasks.registry import ANNOTATION_TASKS as TASKS
from sciir.tasks.track_scores import TrackScores, labels_from_scores

CONTEXTS = {
    "track_scores": {"caption": "Workflow of $glycolysis.", "methods_text": "Glucose leads to Pyruvate."},
    "reasoning": {"caption": "Workflow of glycolysis.", "methods_text": "Glucose leads to Pyruvate."},
    "abstract_prompt": {"caption": "c", "terms": ["Glucose", "Pyruvate"], "sci_rcot": "Style: flow diagram."},
    "checklist": {
        "terms": ["Glucose", "Pyruvate"],
        "required_text": ["Glucose"],
        "relations": [["Glucose", "Pyruvate"]],
        "laws": ["Mass is conserved."],
        "tracks": ["process"],
    },
}
PNG = b"\x89PNG fake bytes"


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_template_renders_its_context_and_schema(task: str) -> None:
    request = ANNOTATION_TASKS[task].build(CONTEXTS[task], PNG)
    spec = TASKS[task]
    assert request.template_version == spec.version
    assert request.json_schema == spec.schema()
    assert request.context == CONTEXTS[task]
    assert '"properties"' in request.prompt  # the schema is spelled out for the model
    for value in CONTEXTS[task].values():  # texts verbatim, lists as JSON
        assert (value if isinstance(value, str) else json.dumps(value)) in request.prompt
    assert request.images == ([PNG] if spec.sees_image else [])


def test_dollar_signs_in_captions_survive_rendering() -> None:
    assert (
        "Workflow of $glycolysis."
        in ANNOTATION_TASKS["track_scores"].build(CONTEXTS["track_scores"], PNG).prompt
    )


def test_missing_context_and_missing_image_are_errors() -> None:
    with pytest.raises(KeyError, match="methods_text"):
        ANNOTATION_TASKS["reasoning"].build({"caption": "c"}, PNG)
    with pytest.raises(ValueError, match="no image"):
        ANNOTATION_TASKS["track_scores"].build(CONTEXTS["track_scores"])


def test_track_scores_parse_and_label_at_tau() -> None:
    result = VLMResult(output={"entity": 7, "process": 6, "law": 10, "rationale": "arrows and an equation"})
    scores = ANNOTATION_TASKS["track_scores"].parse_output(result)
    assert isinstance(scores, TrackScores)
    assert labels_from_scores(scores, tau=7) == {"entity": True, "process": False, "law": True}


def _question(qid: str, layer: int, track: str, kind: str, about: list[str], **fields) -> dict:
    """A checklist question; the text questions' expected_text defaults to ``about``."""
    question = {
        "id": qid,
        "layer": layer,
        "track": track,
        "kind": kind,
        "polarity": "positive",
        "about": about,
        "question": "q",
        "expected_text": None,
    }
    return question | fields


@pytest.mark.parametrize(
    ("task", "output", "problem"),
    [
        ("track_scores", {"entity": 11, "process": 1, "law": 1, "rationale": "r"}, "entity"),
        ("track_scores", {"entity": 5, "process": 1, "rationale": "r"}, "law"),
        (
            "reasoning",
            {"terms": ["A"], "required_text": ["A"], "relations": [["A", "Z"]], "laws": [], "sci_rcot": "s"},
            "Z",
        ),
        (
            "reasoning",
            {"terms": ["A"], "required_text": [" "], "relations": [], "laws": [], "sci_rcot": "s"},
            "required_text",
        ),
        (
            "reasoning",
            {"terms": ["A"], "required_text": ["A"], "relations": [], "sci_rcot": "s"},
            "laws",
        ),
        ("abstract_prompt", {"prompt": ""}, "prompt"),
        (
            "checklist",
            {"questions": [_question("L1-01", 1, "text", "text", ["A"], parent_ids=[])]},
            "expected_text",
        ),
        (
            "checklist",
            {"questions": [_question("L2-law-01", 2, "law", "law", ["F = m a"], parent_ids=["X"])]},
            "parent_ids name no question",
        ),
        (
            "checklist",
            {
                "questions": [
                    _question("a", 2, "law", "law", ["F = m a"]),
                    _question("a", 2, "entity", "entity", ["Pump"]),
                ]
            },
            "repeat",
        ),
        (
            "checklist",
            {"questions": [_question("L2-process-01", 2, "process", "relation", ["Pump"])]},
            "a relation question is about 2",
        ),
        (
            "checklist",
            {"questions": [_question("L1-01", 1, "text", "text", ["B"], expected_text="A")]},
            "about its expected_text",
        ),
        (
            "checklist",
            {"questions": [_question("L2-entity-01", 2, "entity", "text", ["Pump"])]},
            "layer 2 needs a reasoning track and kind",
        ),
        (
            "checklist",
            {"questions": [_question("L2-entity-01", 2, "entity", "entity", ["Pump"], polarity="reversed")]},
            "polarity",
        ),
        (
            "checklist",
            {
                "questions": [
                    {k: v for k, v in _question("a", 2, "law", "law", ["x"]).items() if k != "about"}
                ]
            },
            "about",
        ),
        ("checklist", {"questions": []}, "questions"),
    ],
)
def test_answers_that_break_the_schema_are_failures(task: str, output: dict, problem: str) -> None:
    with pytest.raises(AnnotationError, match=problem):
        ANNOTATION_TASKS[task].parse_output(VLMResult(output=output))


def test_a_failed_call_stays_a_failure_with_its_reason() -> None:
    with pytest.raises(AnnotationError, match="reasoning failed: HTTP 503 after 3 retries"):
        ANNOTATION_TASKS["reasoning"].parse_output(VLMResult.failed("HTTP 503 after 3 retries"))


def test_reasoning_strips_and_deduplicates_strings() -> None:
    output = {
        "terms": [" A ", "A", "B"],
        "required_text": ["A"],
        "relations": [["A", "B"]],
        "laws": ["F = m a", " F = m a "],
        "sci_rcot": "s",
    }
    reasoning = ANNOTATION_TASKS["reasoning"].parse_output(VLMResult(output=output))
    assert reasoning.terms == ["A", "B"]
    assert reasoning.laws == ["F = m a"]


def test_checklist_questions_carry_kind_polarity_and_about() -> None:
    questions = [
        _question("L1-01", 1, "text", "text", ["Pump"], expected_text="Pump"),
        _question("L2-process-01", 2, "process", "relation", ["Pump", "Tank"], polarity="negative"),
        _question("L2-law-01", 2, "law", "law", ["F = m a"]),
    ]
    checklist = ANNOTATION_TASKS["checklist"].parse_output(VLMResult(output={"questions": questions}))
    relation = checklist.questions[1]
    assert (relation.kind, relation.polarity, relation.about) == ("relation", "negative", ["Pump", "Tank"])
    schema = TASKS["checklist"].schema()
    item = schema["$defs"]["ChecklistQuestion"] if "$defs" in schema else schema
    assert {"kind", "polarity", "about"} <= set(item["required"])
