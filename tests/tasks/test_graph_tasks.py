"""The AIBench graph and question tasks: requests, strict parsing, and the rule-based answers."""

from __future__ import annotations

import pytest

from sciir.aibench.graph import build_logic_graph
from sciir.aibench.params import QuestionSettings
from sciir.aibench.questions import aibench_questions
from sciir.backends.base import VLMResult
from sciir.backends.rule_based import Sight
from sciir.tasks.aibench_graph import GraphTaskError, build_graph_request, parse_graph_reply
from sciir.tasks.aibench_graph import answer_by_reading as read_graph
from sciir.tasks.aibench_questions import answer_by_rules as write_questions
from sciir.tasks.aibench_questions import build_questions_request, parse_questions_reply

STEPS = ["Cell lysis", "Centrifugation", "Affinity capture", "Elution"]
# Realistic prose: one relation stated outright, one passive, one only implied, and a sentence of context.
METHODS = (
    "Cells were harvested at an optical density of 0.8. Cell lysis is followed by centrifugation at "
    "4 degrees. Affinity capture is preceded by centrifugation. Elution is then carried out with "
    "imidazole. All buffers were filtered."
)
SETTINGS = QuestionSettings(seed=0, distractors=1, non_adjacent=1, max_pairs=2)
NO_SIGHT = Sight(read=lambda png: pytest.fail("these tasks read no image"))


def _reply(output: dict) -> VLMResult:
    return VLMResult(output=output)


def test_the_graph_request_carries_the_method_text_caption_and_terms() -> None:
    request = build_graph_request(METHODS, "Protein purification.", STEPS)
    assert request.task == "aibench_graph" and request.images == []
    assert METHODS in request.prompt and '"Affinity capture"' in request.prompt
    assert request.context == {"methods_text": METHODS, "caption": "Protein purification.", "terms": STEPS}
    assert request.json_schema["required"] == ["components", "flows", "phases"]


def test_rules_read_only_the_relations_the_text_states_and_no_phases() -> None:
    request = build_graph_request(METHODS, "Protein purification.", [*STEPS, "Dialysis"])
    graph = parse_graph_reply(read_graph(request, NO_SIGHT))
    assert graph.nodes == tuple(STEPS)  # "Dialysis" is not in the method text
    # "Elution is then carried out" implies Affinity capture -> Elution; rules do not guess it.
    assert graph.edges == (("Cell lysis", "Centrifugation"), ("Centrifugation", "Affinity capture"))
    assert graph.phases == ()


def test_a_model_graph_keeps_its_phases_in_order() -> None:
    graph = parse_graph_reply(
        _reply(
            {
                "components": [{"name": "Encoder", "kind": "module"}, {"name": "Tokens", "kind": "data"}],
                "flows": [{"source": "Tokens", "target": "Encoder"}],
                "phases": [
                    {"name": "input", "components": ["Tokens"]},
                    {"name": "encoding", "components": ["Encoder"]},
                ],
            }
        )
    )
    assert graph.phases == (("Tokens",), ("Encoder",)) and graph.entries == ["Tokens"]


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (
            {"components": [{"name": "A"}], "flows": [{"source": "A", "target": "B"}], "phases": []},
            r"flows or phases name \['B'\], which are not components",
        ),
        (
            {
                "components": [{"name": "A"}, {"name": "B"}],
                "flows": [],
                "phases": [{"name": "p", "components": ["A"]}, {"name": "q", "components": ["A", "B"]}],
            },
            r"components in more than one phase: \['A'\]",
        ),
        ({"components": [{"name": "A"}, {"name": "A"}], "flows": [], "phases": []}, r"components repeat"),
        ({"components": [], "flows": []}, r"phases: Field required"),
    ],
)
def test_a_graph_that_breaks_a_rule_is_refused_with_the_rule(output: dict, reason: str) -> None:
    with pytest.raises(GraphTaskError, match=reason):
        parse_graph_reply(_reply(output))


def test_a_failed_graph_request_is_a_failure_with_its_reason() -> None:
    with pytest.raises(GraphTaskError, match="aibench_graph failed: HTTP 503"):
        parse_graph_reply(VLMResult.failed("HTTP 503"))


def test_written_questions_parse_back_to_the_rule_writers_questions() -> None:
    graph = build_logic_graph(STEPS, list(zip(STEPS, STEPS[1:], strict=False)), [STEPS[:2], STEPS[2:]])
    request = build_questions_request("s1", graph, ["Nucleation"], SETTINGS)
    assert '"Nucleation"' in request.prompt and request.context["graph"]["phases"] == [STEPS[:2], STEPS[2:]]
    parsed = parse_questions_reply(write_questions(request, NO_SIGHT), graph, ["Nucleation"])
    assert parsed == aibench_questions("s1", graph, ["Nucleation"], SETTINGS)
    assert {question.level for _, question in parsed} == {1, 2, 3, 4}


def _question(**fields) -> dict:
    return {"id": "AIB-L1-01", "level": 1, "kind": "component", "question": "Is there A?", "answer": "yes",
            "about": ["A"], "phases": []} | fields  # fmt: skip


@pytest.mark.parametrize(
    ("questions", "reason"),
    [
        ([_question(about=["Z"])], r"questions are about \['Z'\], neither components nor distractors"),
        ([_question(level=3, phases=[2])], r"questions name phases \[2\]; the graph has 1"),
        ([_question(), _question()], r"question ids repeat: \['AIB-L1-01'\]"),
        ([_question(answer="maybe")], r"questions.0.answer: Input should be 'yes' or 'no'"),
    ],
)
def test_questions_about_what_the_graph_lacks_are_refused(questions: list, reason: str) -> None:
    graph = build_logic_graph(["A", "B"], [["A", "B"]], [["A", "B"]])
    with pytest.raises(GraphTaskError, match=reason):
        parse_questions_reply(_reply({"questions": questions}), graph, ["D"])
