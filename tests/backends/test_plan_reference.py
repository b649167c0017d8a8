"""The plan_reference renderer draws exactly the annotation's plan, readably, and is always a reference:
it can calibrate the judge, never be configured as a contestant."""

from __future__ import annotations

import io

import pytest
from kedro.io import DatasetError
from PIL import Image

from sciir.backends.base import GenerationRequest, GenerationResult, PlanRequest
from sciir.backends.plan_drawing import plan_to_dot
from sciir.backends.plan_reference import PlanReferenceRenderer, parse_plan
from sciir.backends.registry import build_backend
from sciir.catalog.backend_dataset import BackendSetDataset, make_backend
from sciir.testing.drawings import ocr_words, visible_edges

PROCESS = {
    "labels": ["Sample", "Centrifuge", "Supernatant", "Pellet"],
    "edges": [["Sample", "Centrifuge"], ["Centrifuge", "Supernatant"], ["Centrifuge", "Pellet"]],
}
PARTS = {"labels": ["Mitochondria", "Nucleus", "Ribosome", "Membrane", "Cytoplasm"], "edges": []}
FAULTS = {"misspell_labels": 1, "reverse_edges": 1, "drop_nodes": 1, "seed": 0}


def request(plan: dict, sample_id: str = "fig-1-p0", **size: int) -> PlanRequest:
    return PlanRequest(sample_id=sample_id, prompt="A centrifugation workflow.", plan=plan, **size)


def draw(generator: PlanReferenceRenderer, plan: dict, **size: int) -> GenerationResult:
    (result,) = generator.generate([request(plan, **size)])
    return result


def test_every_plan_label_and_edge_is_drawn_readably() -> None:
    result = draw(PlanReferenceRenderer(), PROCESS)
    assert result.ok and result.meta["backend"] == "plan_reference"
    assert result.meta["drawn_labels"] == PROCESS["labels"] and result.meta["drawn_edges"] == PROCESS["edges"]
    assert set(PROCESS["labels"]) <= ocr_words(result.image)
    assert len(visible_edges(plan_to_dot(parse_plan(request(PROCESS)), font_size=28).source)) == 3


def test_labels_without_edges_are_boxes_with_no_arrows() -> None:
    result = draw(PlanReferenceRenderer(), PARTS, width=768, height=512)
    assert result.ok and result.meta["drawn_edges"] == []
    assert Image.open(io.BytesIO(result.image)).size == (768, 512)
    assert visible_edges(plan_to_dot(parse_plan(request(PARTS)), font_size=28).source) == []


def test_edge_endpoints_missing_from_labels_are_drawn_and_text_is_taken_literally() -> None:
    plan = {"labels": ["<b>bold</b>", "a\\nb"], "edges": [["a\\nb", "Extra node"]]}
    result = draw(PlanReferenceRenderer(), plan)
    assert result.ok
    assert result.meta["drawn_labels"] == ["<b>bold</b>", "a\\nb", "Extra node"]
    source = plan_to_dot(parse_plan(request(plan)), font_size=28).source
    assert 'label="<b>bold</b>"' in source and 'label="a\\\\nb"' in source


def test_groups_are_drawn_as_titled_frames_around_their_boxes() -> None:
    staged = PROCESS | {
        "groups": [["Stage 1", ["Sample", "Centrifuge"]], ["Stage 2", ["Supernatant", "Pellet"]]]
    }
    result = draw(PlanReferenceRenderer(), staged)
    assert result.ok and result.meta["drawn_groups"] == staged["groups"]
    words = ocr_words(result.image)
    assert set(PROCESS["labels"]) <= words and "Stage" in words
    assert draw(PlanReferenceRenderer(), PROCESS).meta["drawn_groups"] == []


def test_faulty_reference_plants_faults_of_known_truth_deterministically() -> None:
    result = draw(PlanReferenceRenderer(faults=FAULTS), PROCESS)
    again = draw(PlanReferenceRenderer(faults=FAULTS), PROCESS)
    assert result.ok and again.image == result.image and again.meta == result.meta
    faults = {fault["kind"]: fault for fault in result.meta["planted_faults"]}
    assert sorted(faults) == ["drop_node", "misspell", "reverse_edge"]
    assert faults["misspell"]["drawn"] in ocr_words(result.image)
    src, dst = faults["reverse_edge"]["edge"]
    assert [dst, src] in result.meta["drawn_edges"] and [src, dst] not in result.meta["drawn_edges"]


@pytest.mark.parametrize(
    ("plan", "reason"),
    [
        ({"labels": [], "edges": []}, "plan for sample fig-1-p0 has no labels to draw"),
        ({"labels": ["A", "  "]}, "plan for sample fig-1-p0 has a blank label"),
        ({"labels": ["A"], "edges": [["A", "B", "C"]]}, "plan for sample fig-1-p0 is malformed (edges.0"),
        ({"labels": ["A"], "groups": [[" ", ["A"]]]}, "plan for sample fig-1-p0 has a group without a title"),
        (
            {"labels": ["A"], "groups": [["Stage 1", ["A", "B"]]]},
            "plan for sample fig-1-p0: group 'Stage 1' holds ['B'], which are no labels",
        ),
    ],
)
def test_undrawable_plans_fail_explicitly(plan: dict, reason: str) -> None:
    result = draw(PlanReferenceRenderer(), plan)
    assert not result.ok and result.image is None and result.failure.startswith(reason)


def test_a_request_without_a_plan_fails_alone_in_its_batch() -> None:
    results = PlanReferenceRenderer().generate(
        [GenerationRequest(sample_id="bad-p0", prompt="x"), request({"labels": ["Cell"]}, "good-p0")]
    )
    assert [r.ok for r in results] == [False, True]
    assert results[0].failure.startswith("request for sample bad-p0 has no plan")


def test_it_is_always_a_reference() -> None:
    renderer = build_backend("generator", "plan_reference")
    assert isinstance(renderer, PlanReferenceRenderer)
    assert renderer.role == "reference" and renderer.reads_annotation

    with pytest.raises(DatasetError, match="its role must be 'reference'"):
        make_backend("sneaky", "generator", {"backend": "plan_reference", "role": "contestant"}, None, None)
    with pytest.raises(DatasetError, match="role 'judge' is not one of"):
        make_backend("odd", "generator", {"backend": "programmatic", "role": "judge"}, None, None)


def test_roles_come_from_the_config_and_survive_the_cache(tmp_path) -> None:
    generators = BackendSetDataset(
        kind="generator",
        cache_path=str(tmp_path / "cache.sqlite"),
        members={
            "programmatic": {"backend": "programmatic"},
            "reference_renderer": {"backend": "plan_reference", "role": "reference"},
            "programmatic_as_reference": {"backend": "programmatic", "role": "reference"},
        },
    ).load()
    assert {name: generator.role for name, generator in generators.items()} == {
        "programmatic": "contestant",
        "reference_renderer": "reference",
        "programmatic_as_reference": "reference",
    }
    # The role never reaches the backend's own configuration, so never its cache key.
    assert "role" not in generators["programmatic_as_reference"].identity()["config"]
    assert generators["programmatic_as_reference"].identity() == generators["programmatic"].identity()
