"""The ``prompt_checklist`` task: a DSG-style reply parses into typed questions with categories and parent
ids, a reply that breaks a rule fails with the reason, and the offline writer writes only the text
questions of a prompt's quoted strings, saying that it wrote nothing else."""

from __future__ import annotations

import pytest

from sciir.backends.base import VLMResult
from sciir.backends.offline import OfflineVLM
from sciir.tasks.prompt_checklist import PROMPT_CHECKLIST_TASK, build_prompt_checklist_request, checklist_of
from sciir.tasks.registry import rule_book
from sciir.tasks.required_text import quoted_strings
from sciir.tasks.task import TaskReplyError


def question(qid: str, category: str, text: str, parents: list[str], expected: str | None = None) -> dict:
    return {
        "id": qid,
        "category": category,
        "question": text,
        "parent_ids": parents,
        "expected_text": expected,
    }


# A DSG-style reply for "the word 'START' on a blue t-shirt" (TIFA v1.0, partiprompt_1412).
START = [
    question("1", "entity", "Is there a t-shirt?", []),
    question("2", "attribute", "Is the t-shirt blue?", ["1"]),
    question("3", "text", 'Is the word "START" written on the t-shirt?', ["1"], "START"),
]


def reply(questions: list[dict], note: str | None = None) -> VLMResult:
    return VLMResult(output={"questions": questions, "note": note})


def test_a_dsg_reply_becomes_typed_questions_with_categories_and_parents():
    checklist = checklist_of(reply(START))
    assert [(q.id, q.category, q.parent_ids, q.expected_text) for q in checklist.questions] == [
        ("1", "entity", [], None),
        ("2", "attribute", ["1"], None),
        ("3", "text", ["1"], "START"),
    ]
    assert checklist.note is None


@pytest.mark.parametrize(
    ("questions", "reason"),
    [
        ([*START, question("3", "entity", "Is there a sidewalk?", [])], r"question ids repeat: \['3'\]"),
        ([question("1", "attribute", "Is it blue?", ["7"])], r"parent_ids name no question of the reply: \{'1': \['7'\]\}"),
        (
            [question("1", "entity", "Is there a cat?", ["3"]), question("2", "attribute", "Is the cat black?", ["1"]),
             question("3", "relation", "Is the cat on the mat?", ["2"])],
            r"parent_ids form a cycle: 1 -> 3 -> 2 -> 1",
        ),
        ([question("1", "entity", "Is there a cat?", ["1"])], r"parent_ids form a cycle: 1 -> 1"),
        ([question("1", "entity", "   ", [])], r"questions\.0\.question: String should have at least 1 character"),
        ([question("1", "text", "Is START written?", [])], r"a text question needs the expected_text it checks"),
        ([question("1", "entity", "Is there a sign?", [], "STOP")], r"only a text question has an expected_text"),
        ([question("1", "relation", "Is the zebra right of it?", [])], r"a relation question depends on its entities"),
        ([question("1", "shape", "Is it round?", [])], r"questions\.0\.category: Input should be 'entity'"),
    ],
)  # fmt: skip
def test_a_reply_that_breaks_a_rule_fails_with_the_reason(questions, reason):
    with pytest.raises(
        TaskReplyError, match=rf"prompt_checklist answer does not match its schema: .*{reason}"
    ):
        checklist_of(reply(questions))


def test_a_failed_request_is_a_failure_not_an_empty_checklist():
    with pytest.raises(TaskReplyError, match="prompt_checklist failed: HTTP 503"):
        checklist_of(VLMResult.failed("HTTP 503"))


@pytest.mark.parametrize(
    ("prompt", "strings"),
    [
        ('Draw a lever labelled "Fulcrum"', ["Fulcrum"]),
        ("the word 'START' on a blue t-shirt", ["START"]),  # TIFA v1.0, partiprompt_1412
        ('\u201cGlucose\u201d -> "Pyruvate" -> \u2018Lactate\u2019, then "Glucose" again', ["Glucose", "Pyruvate", "Lactate"]),
        ('a sign reading "Don\'t walk" and \'Exit\'', ["Don't walk", "Exit"]),
        ("a pumpkin on a man's head", []),  # TIFA v1.0, partiprompt_1115: an apostrophe opens nothing
        ("Photo of a mega Lego space station inside a kid's bedroom.", []),  # DrawBench 149
        ("Portrait of a gecko wearing a train conductor\u2019s hat", []),  # PartiPrompts 1164
    ],
)  # fmt: skip
def test_quoted_strings_are_read_in_order_once_each(prompt, strings):
    assert quoted_strings(prompt) == strings


@pytest.fixture(scope="module")
def offline() -> OfflineVLM:
    return OfflineVLM(rule_book("offline"))


def test_the_offline_writer_writes_the_text_questions_of_quoted_strings_and_says_so(offline):
    result = offline.generate([build_prompt_checklist_request('Draw a lever labelled "Fulcrum" and "Load"')])[
        0
    ]
    checklist = checklist_of(result)
    assert [(q.id, q.category, q.expected_text, q.parent_ids) for q in checklist.questions] == [
        ("1", "text", "Fulcrum", []),
        ("2", "text", "Load", []),
    ]
    assert checklist.questions[0].question == 'Is the text "Fulcrum" written, with exactly this spelling?'
    assert checklist.note.startswith("offline writer: text questions only, one per string the prompt quotes")
    assert "it wrote no entity, attribute, count or relation question" in checklist.note


def test_the_offline_writer_invents_nothing_for_a_prompt_without_quotes(offline):
    # TIFA v1.0, drawbench_123: entities and a relation, none of them something a rule can tell.
    result = offline.generate([build_prompt_checklist_request("A zebra to the right of a fire hydrant.")])[0]
    checklist = checklist_of(result)
    assert checklist.questions == []
    assert checklist.note.startswith("offline writer: the prompt quotes no text")


def test_the_request_is_text_only_and_carries_the_prompt_and_strict_schema():
    request = build_prompt_checklist_request("two red flowers and three white flowers")
    assert request.task == PROMPT_CHECKLIST_TASK and request.images == []
    assert "<<<\ntwo red flowers and three white flowers\n>>>" in request.prompt
    assert request.json_schema["additionalProperties"] is False
    assert request.json_schema["required"] == ["questions", "note"]
