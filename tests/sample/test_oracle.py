"""Oracle ratings from a hand-made ground-truth file and a generation manifest."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from sciir.sample.oracle import (
    ORACLE_RATER_ID,
    OracleConfig,
    OracleInputError,
    oracle_ratings,
    oracle_score,
    panel_truth,
    rate_image,
    truth_path,
)

CONFIG = OracleConfig()


@pytest.fixture
def figure(tmp_path):
    image = tmp_path / "fig2.png"
    image.write_bytes(b"not read by the oracle")
    truth = {
        "figure_id": "fig2",
        "panels": [
            {
                "panel_index": 0,
                "required_text": ["ATP", "ADP", "Pi", "ATP synthase"],
                "relations": [["ADP", "ATP"]],
            },
            {"panel_index": 1, "required_text": [], "relations": []},
        ],
    }
    (tmp_path / "fig2.truth.json").write_text(json.dumps(truth))
    return image


def test_truth_path_replaces_the_suffix(tmp_path):
    assert truth_path(tmp_path / "a.b" / "fig.1.tif") == tmp_path / "a.b" / "fig.1.truth.json"


def test_all_text_drawn_no_faults_is_five(figure):
    meta = json.dumps({"drawn_labels": ["ATP", "ADP", "Pi", "ATP synthase", "extra"], "planted_faults": []})
    assert rate_image(figure, 0, meta, CONFIG) == 5.0


def test_misspelling_lowers_the_share_and_is_not_penalised_twice(figure):
    meta = {
        "drawn_labels": ["ATP", "ADP", "Pi", "ATP snythase"],
        "planted_faults": [
            {"kind": "misspell", "label": "ATP synthase", "drawn": "ATP snythase"},
            {"kind": "reverse_edge", "edge": ["ADP", "ATP"]},
        ],
    }
    assert rate_image(figure, 0, meta, CONFIG) == pytest.approx(1 + 4 * 3 / 4 - 1)


def test_generator_without_drawn_labels_drew_no_known_text(figure):
    assert rate_image(figure, 0, json.dumps({"steps": 4}), CONFIG) == 1.0
    assert rate_image(figure, 0, None, CONFIG) == 1.0


def test_score_is_clipped_and_nothing_required_counts_as_all_drawn(figure):
    faults = [{"kind": "reverse_edge"}] * 3
    assert oracle_score(["A"], [], faults, CONFIG) == 1.0
    assert rate_image(figure, 1, {"drawn_labels": []}, CONFIG) == 5.0
    assert oracle_score([], [], faults[:1], OracleConfig(fault_penalty=0.5)) == 4.5


def test_bad_inputs_name_what_is_wrong(figure, tmp_path):
    with pytest.raises(OracleInputError, match="has no panel 7"):
        panel_truth(figure, 7)
    with pytest.raises(OracleInputError, match="no ground truth file"):
        panel_truth(tmp_path / "other.png", 0)
    with pytest.raises(OracleInputError, match="drawn_labels"):
        rate_image(figure, 0, {"drawn_labels": "ATP"}, CONFIG)
    with pytest.raises(OracleInputError, match="not valid JSON"):
        rate_image(figure, 0, "{broken", CONFIG)
    (tmp_path / "bad.truth.json").write_text("[1, 2")
    with pytest.raises(OracleInputError, match="bad.truth.json is not valid JSON"):
        panel_truth(tmp_path / "bad.png", 0)


def test_generated_images_are_rated_from_their_source_panel_and_unusable_ones_logged(figure, caplog):
    manifest = pd.DataFrame(
        {
            "model": ["m", "m", "m", "m"],
            "sample_id": ["s0", "s1", "s2", "unlisted"],
            "status": ["ok", "ok", "failed", "ok"],
            "meta": [json.dumps({"drawn_labels": ["ATP", "ADP"]}), "{}", "{}", "{}"],
        }
    )
    benchmark = pd.DataFrame({"sample_id": ["s0", "s1", "s2"]})
    curated = pd.DataFrame({"sample_id": ["s0", "s2"], "figure_uid": ["fig2", "fig2"], "panel_index": [0, 1]})
    figures = pd.DataFrame({"figure_uid": ["fig2"], "image_path": [str(figure)]})
    with caplog.at_level(logging.WARNING):
        ratings = oracle_ratings(manifest, benchmark, curated, figures, CONFIG)
    assert ratings.to_dict("records") == [{"image_id": "m/s0", "rater_id": ORACLE_RATER_ID, "score": 3.0}]
    assert "m/s1: no curated panel or source figure for sample s1" in caplog.text
