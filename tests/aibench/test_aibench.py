"""AIBench: logic graphs, the four levels of questions, the solver protocol and the scores."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from sciir.aibench.distractors import DistractorPool, walk
from sciir.aibench.graph import build_logic_graph
from sciir.aibench.level_accuracy import score_answers
from sciir.aibench.params import AIBenchParams, QuestionSettings
from sciir.aibench.questions import aibench_questions, qa_rows
from sciir.backends.base import VLMResult
from sciir.tasks.aesthetics import (
    AESTHETICS_RUBRIC,
    build_aesthetics_request,
    parse_aesthetics_reply,
    score_aesthetics,
)
from sciir.tasks.aibench_qa import (
    answer_rows,
    answers_frame,
    build_solver_request,
    parse_solver_reply,
    solver_items,
)

# Light -> Split; Split -> O2 and Split -> ETC (parallel); ETC -> Sugar. "Photosynthesis" is on no relation.
TERMS = ["Photosynthesis", "Light", "Split", "O2", "ETC", "Sugar"]
RELATIONS = [["Light", "Split"], ["Split", "O2"], ["Split", "ETC"], ["ETC", "Sugar"]]
# The phases a method text would name, in order.
PHASES = [["Light"], ["Split"], ["O2", "ETC"], ["Sugar"]]
SETTINGS = QuestionSettings(seed=0, distractors=2, non_adjacent=2, max_pairs=4)


@pytest.fixture
def branching():
    return build_logic_graph(TERMS, RELATIONS, PHASES)


def _questions(graph, distractors=("Aspirin",), settings=SETTINGS):
    return aibench_questions("s1", graph, list(distractors), settings)


def test_graph_phases_are_the_declared_ones_and_its_ends_follow_the_flow(branching) -> None:
    assert branching.nodes == tuple(TERMS)
    assert branching.phases == (("Light",), ("Split",), ("O2", "ETC"), ("Sugar",))
    assert branching.phase_of("Photosynthesis") is None and branching.phase_of("ETC") == 2
    assert branching.entries == ["Light"] and branching.exits == ["O2", "Sugar"]
    assert branching.reachable("Split") == {"O2", "ETC", "Sugar"}


def test_a_graph_whose_text_names_no_phases_gets_no_phase_questions() -> None:
    graph = build_logic_graph(TERMS, RELATIONS)
    assert graph.phases == ()
    assert {q.level for _, q in _questions(graph)} == {1, 2, 4}


def test_a_cycle_is_neither_entry_nor_exit_and_a_skip_connection_changes_no_end() -> None:
    graph = build_logic_graph([], [["A", "B"], ["B", "C"], ["C", "B"], ["C", "D"], ["A", "D"]])
    assert graph.entries == ["A"] and graph.exits == ["D"]


def test_every_gold_answer_agrees_with_the_graph(branching) -> None:
    edges = set(branching.edges)
    for _, q in _questions(branching):
        if q.kind in ("edge", "reversed_edge", "non_adjacent"):
            assert (q.gold_answer == "yes") == (tuple(q.nodes) in edges), q
        if q.kind in ("end_to_end", "no_path"):
            a, b = q.nodes
            assert (q.gold_answer == "yes") == (b in branching.reachable(a)), q
        if q.kind in ("same_stage", "different_stage"):
            a, b = q.nodes
            assert (q.gold_answer == "yes") == (branching.phase_of(a) == branching.phase_of(b)), q
        if q.kind.startswith("stage_order"):
            first, second = q.phases
            assert (q.gold_answer == "yes") == (first < second), q
        if q.level == 1:
            assert (q.gold_answer == "yes") == (q.nodes[0] in branching.nodes), q


def test_levels_cover_components_topology_stages_and_the_whole_flow(branching) -> None:
    numbered = _questions(branching)
    kinds = [q.kind for _, q in numbered]
    assert kinds.count("component") == 6 and kinds.count("distractor") == 1
    assert kinds.count("edge") == 4 and kinds.count("reversed_edge") == 4
    # Non-adjacent pairs joined by a longer path come first: they test "directly".
    non_adjacent = [q.nodes for _, q in numbered if q.kind == "non_adjacent"]
    assert len(non_adjacent) == 2 and all(b in branching.reachable(a) for a, b in non_adjacent)
    assert kinds.count("stage_order") == 3 and kinds.count("stage_order_reversed") == 3
    same = [q for _, q in numbered if q.kind == "same_stage"]
    assert [q.nodes for q in same] == [("O2", "ETC")] and same[0].phases == (3,)
    assert kinds.count("different_stage") == 1  # one "no" per "yes"
    ends = next(q for _, q in numbered if q.kind == "flow_ends")
    assert ends.question == 'Does the overall flow start at "Light" and end at "O2" and "Sugar"?'
    assert kinds.count("end_to_end") == 2 and kinds.count("no_path") == 2
    ids = [qid for qid, _ in numbered]
    assert len(set(ids)) == len(ids) and ids[0] == "AIB-L1-01" and "AIB-L4-01" in ids


def test_terms_without_relations_give_component_questions_only() -> None:
    graph = build_logic_graph(["Benzene", "OH"], [])
    assert graph.phases == ()
    assert {q.level for _, q in _questions(graph)} == {1}


def test_a_closed_loop_has_no_entry_or_exit_questions() -> None:
    graph = build_logic_graph([], [["A", "B"], ["B", "A"]])
    assert not [q for _, q in _questions(graph) if q.level == 4]


def test_questions_are_deterministic_and_pairs_are_capped(branching) -> None:
    capped = QuestionSettings(seed=0, distractors=0, non_adjacent=1, max_pairs=1)
    first = _questions(branching, (), capped)
    assert first == _questions(build_logic_graph(TERMS, RELATIONS, PHASES), (), capped)
    kinds = [q.kind for _, q in first]
    assert kinds.count("non_adjacent") == 1 and kinds.count("end_to_end") == 1


def test_distractors_avoid_what_the_sample_may_rightly_show(branching) -> None:
    named = [
        ("Aspirin", "a2"),
        ("light", "a2"),
        ("Sugar cane", "a2"),
        ("Glucose", "a3"),
        ("Nucleation", "a3"),
    ]
    named += [("Harvesting", "a2"), ("Chlorophyll", "a1"), ("aspirin", "a3")]
    pool = DistractorPool.of(named)
    own_texts = ["Style: flow diagram. Glucose is made from the sugar."]
    chosen = pool.choose("s1", "a1", branching, own_texts, QuestionSettings(distractors=10))
    # "light" repeats a component, "Sugar cane" contains one, "Glucose" is named in the Sci-RCoT, and
    # "Chlorophyll" comes from the sample's own article; "Aspirin" is one name however it is spelled.
    assert sorted(chosen) == ["Aspirin", "Harvesting", "Nucleation"]
    few = pool.choose("s1", "a1", branching, own_texts, QuestionSettings(distractors=2))
    assert few == DistractorPool.of(reversed(named)).choose(
        "s1", "a1", branching, own_texts, QuestionSettings(distractors=2)
    )
    assert len(few) == 2 and set(few) <= set(chosen)


def test_the_distractor_walk_visits_every_name_once_in_an_order_of_the_sample() -> None:
    for size in (1, 2, 12, 97, 360):
        orders = {sample: list(walk(size, 0, sample)) for sample in ("s1", "s2", "s3")}
        assert all(sorted(order) == list(range(size)) for order in orders.values())
    assert len({tuple(order) for order in orders.values()}) == 3  # each sample its own order
    assert list(walk(360, 0, "s1")) == list(walk(360, 0, "s1")) != list(walk(360, 1, "s1"))
    assert list(walk(0, 0, "s1")) == []


def test_the_solver_sees_the_questions_and_the_image_only(branching) -> None:
    qa = pd.DataFrame(qa_rows("s1", _questions(branching)))
    items = solver_items(qa)
    request = build_solver_request(items, b"png")
    assert request.task == "aibench_qa" and request.images == [b"png"]
    assert set(request.context) == {"questions"}
    assert all(
        set(item) == {"id", "level", "question", "label", "flow"} for item in request.context["questions"]
    )
    assert items[0]["label"] == "Photosynthesis" and items[-1]["label"] is None
    # level 2 names the two components it asks about, from and to; no other level names a flow
    topology = [item for item in items if item["level"] == 2]
    assert topology and all(
        item["flow"] == list(json.loads(row)[:2])
        for item, row in zip(topology, qa[qa["level"] == 2]["nodes"], strict=True)
    )
    assert all(item["flow"] is None for item in items if item["level"] != 2)
    assert "gold" not in request.prompt and '"yes" | "no" | "<option letter>" | null' in request.prompt
    assert json.loads(qa.loc[0, "nodes"]) == ["Photosynthesis"]


def test_solver_replies_are_parsed_strictly() -> None:
    ids = ["q1", "q2", "q3", "q4", "q5", "q6"]
    reply = VLMResult(
        output={
            "answers": [
                {"id": "q1", "answer": "Yes"},
                {"id": "q2", "answer": None},
                {"id": "q3", "answer": "maybe"},
                {"id": "q4", "answer": "no"},
                {"id": "q4", "answer": "yes"},
                {"id": "q6"},
                {"id": "invented", "answer": "yes"},
            ]
        }
    )
    outcomes, ignored = parse_solver_reply(reply, ids, "m/s1")
    assert (outcomes["q1"].answer, outcomes["q1"].status) == ("yes", "answered")
    assert outcomes["q2"].status == "abstained"
    assert outcomes["q3"].status == "failed" and "maybe" in outcomes["q3"].reason
    assert outcomes["q4"].status == "failed" and "2 times" in outcomes["q4"].reason
    assert outcomes["q5"].status == "failed" and "omitted" in outcomes["q5"].reason
    assert outcomes["q6"].status == "failed" and "no answer field" in outcomes["q6"].reason
    assert ignored == ["solver reply for m/s1 answered unknown question id 'invented': ignored"]
    failed, _ = parse_solver_reply(VLMResult.failed("timeout"), ids, "m/s1")
    assert {o.reason for o in failed.values()} == {"solver request for m/s1 failed: timeout"}


def _answers(model: str, sample: str, golds: list[str], answers: list[str | None]) -> list[dict]:
    questions = pd.DataFrame(
        {
            "question_id": [f"q{i}" for i in range(len(golds))],
            "level": [1 + i % 2 for i in range(len(golds))],
            "gold_answer": golds,
        }
    )
    outcomes, _ = parse_solver_reply(
        VLMResult(output={"answers": [{"id": f"q{i}", "answer": a} for i, a in enumerate(answers)]}),
        list(questions["question_id"]),
        f"{model}/{sample}",
    )
    return answer_rows(model, sample, questions, outcomes)


def test_scores_weigh_every_answered_question_the_same_and_exclude_the_unanswered() -> None:
    rows = _answers("m", "small", ["yes"], ["yes"])  # 1 of 1 correct
    rows += _answers(
        "m", "large", ["yes", "no", "no", "yes"], ["no", "no", "yes", None]
    )  # 1 of 3, 1 abstained
    scores = score_answers(answers_frame(rows)).set_index("model")
    # Question-level global average: 2 correct of 4 answered (a per-sample mean would give (1 + 1/3) / 2).
    assert scores.loc["m", "overall"] == pytest.approx(0.5)
    assert scores.loc["m", "coverage"] == pytest.approx(4 / 5)
    assert scores.loc["m", "level1"] == pytest.approx(1 / 3)  # small q0 right; large q0 and q2 wrong
    assert scores.loc["m", "level2"] == pytest.approx(1.0)  # large q1 right; q3 abstained, not wrong
    assert scores.loc["m", "coverage_level2"] == pytest.approx(0.5)
    assert math.isnan(scores.loc["m", "level3"]) and math.isnan(scores.loc["m", "coverage_level3"])
    assert (scores.loc["m", "n_questions"], scores.loc["m", "n_answered"]) == (5, 4)


def test_a_model_with_nothing_answered_has_no_accuracy_only_zero_coverage() -> None:
    scores = score_answers(answers_frame(_answers("m", "s", ["yes", "no"], [None, None])))
    assert math.isnan(scores.loc[0, "overall"]) and scores.loc[0, "coverage"] == 0.0


def _rated(**ratings) -> VLMResult:
    return VLMResult(output={**dict.fromkeys(AESTHETICS_RUBRIC, 4), **ratings, "rationale": "tidy"})


def test_aesthetics_request_carries_the_fixed_rubric() -> None:
    request = build_aesthetics_request(b"png")
    assert [c["name"] for c in request.context["criteria"]] == list(AESTHETICS_RUBRIC)
    assert all(name in request.prompt for name in AESTHETICS_RUBRIC)
    assert "overall" in AESTHETICS_RUBRIC and len(AESTHETICS_RUBRIC) == 5


def test_aesthetics_replies_are_parsed_strictly() -> None:
    assert parse_aesthetics_reply(_rated(), "m/s").status == "rated"
    partial = parse_aesthetics_reply(_rated(colour_consistency=None), "m/s")
    assert partial.status == "partial" and partial.ratings["colour_consistency"] is None
    assert parse_aesthetics_reply(_rated(**dict.fromkeys(AESTHETICS_RUBRIC)), "m/s").status == "abstained"
    for bad in ({"overall": 6}, {"overall": 2.5}, {"overall": "4"}, {"overall": True}):
        outcome = parse_aesthetics_reply(_rated(**bad), "m/s")
        assert outcome.status == "failed" and "invalid rating" in outcome.reason
    missing = VLMResult(output={"overall": 3, "rationale": ""})
    assert "lacks criteria" in parse_aesthetics_reply(missing, "m/s").reason


def test_aesthetics_scores_average_the_ratings_given() -> None:
    from sciir.tasks.aesthetics import aesthetics_frame, aesthetics_row

    rows = [
        aesthetics_row("m", "s1", parse_aesthetics_reply(_rated(overall=2), "m/s1")),
        aesthetics_row("m", "s2", parse_aesthetics_reply(_rated(overall=None), "m/s2")),
        aesthetics_row("m", "s3", parse_aesthetics_reply(VLMResult.failed("down"), "m/s3")),
    ]
    scores = score_aesthetics(aesthetics_frame(rows)).set_index("model")
    assert scores.loc["m", "overall"] == 2.0 and scores.loc["m", "layout_clarity"] == 4.0
    assert scores.loc["m", "coverage"] == pytest.approx(9 / 15) and scores.loc["m", "n_images"] == 3


def test_params_reject_unknown_keys() -> None:
    with pytest.raises(ValueError, match="questions"):
        AIBenchParams.model_validate({"questions": {"seeds": 1}})
