"""Published human-correlation numbers reproduced through the pipeline's own nodes and statistics.

Data: ../shared/external/human_ratings/ beside the checkout (TIFA and VIEScore releases; see its
README.md for sources and the published numbers). Skipped when absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from sciir.evaluation.aggregation import prompt_scores, question_mean_score, tifa_score
from sciir.evaluation.rating_pairs import pair_metrics_with_ratings
from sciir.pipelines.human_corr.nodes import correlate_with_ratings
from sciir.user_files.rating_files import (
    imagenhub_ratings,
    tifa_metric_scores,
    tifa_ratings,
    tifa_verdicts,
    viescore_metric_scores,
)

HUMAN_RATINGS = Path(__file__).resolve().parents[2] / ".." / "shared" / "external" / "human_ratings"
TIFA = HUMAN_RATINGS / "tifa"
VIESCORE = HUMAN_RATINGS / "viescore"
TEXT_TO_IMAGE_RATERS = (
    VIESCORE / "_human_annotations" / "ImagenHub_human_eval_results" / "ImagenHub_Text-Guided_IG"
)
GEMINI_0SHOT_ANSWERS = VIESCORE / "_answers" / "results_gemini_0shot" / "ImagenHub_Text-Guided_IG"

needs = pytest.mark.skipif(not HUMAN_RATINGS.is_dir(), reason="../shared/external/human_ratings not present")
QUICK_BOOTSTRAP = {"n_boot": 20, "seed": 0}
TIFA_METRICS = ["tifa_mplug-large", "clipscore_vitb32"]


def correlations(pairs: pd.DataFrame, metrics: list[str], **params) -> pd.DataFrame:
    """The pipeline's correlate_with_ratings node on file-sourced ratings and scores."""
    # The ratings are already read (by the release readers); the node uses only the statistics settings.
    config = {"ratings": {"source": "file", "path": "-"}, "bootstrap": QUICK_BOOTSTRAP, **params}
    return correlate_with_ratings(pairs, metrics, config)


@pytest.fixture(scope="module")
def tifa_pairs() -> pd.DataFrame:
    path = TIFA / "human_annotations_with_scores.json"
    return pair_metrics_with_ratings(tifa_metric_scores(path, TIFA_METRICS), tifa_ratings(path))


@needs
def test_tifa_pairs_are_the_800_images_with_the_published_human_average(tifa_pairs):
    images = json.loads((TIFA / "human_annotations_with_scores.json").read_text())
    human_avg = {
        f"{key[len(image['text_id']) + 1 :]}/{image['text_id']}": image["human_avg"]
        for key, image in images.items()
    }
    assert len(tifa_pairs) == 800 and (tifa_pairs.n_raters == 2).all()
    assert tifa_pairs.rating.to_numpy() == pytest.approx([human_avg[image] for image in tifa_pairs.image_id])


@needs
def test_tifa_published_correlations_to_four_decimals(tifa_pairs):
    table = correlations(tifa_pairs, TIFA_METRICS).set_index("metric")
    mplug, clip = table.loc["tifa_mplug-large"], table.loc["clipscore_vitb32"]
    assert mplug.n == clip.n == 800
    # TIFA's notebook labels Pearson as "Spearman": 0.5967 / 0.3318; true Spearman 0.5922 / 0.3198.
    assert (round(mplug.pearson_r, 4), round(clip.pearson_r, 4)) == (0.5967, 0.3318)
    assert (round(mplug.spearman_rho, 4), round(clip.spearman_rho, 4)) == (0.5922, 0.3198)
    assert (round(mplug.kendall_tau_b, 4), round(clip.kendall_tau_b, 4)) == (0.4717, 0.2314)
    tau_c = correlations(tifa_pairs, ["tifa_mplug-large"], kendall_variant="c").iloc[0]
    assert round(tau_c.kendall_tau_c, 4) == 0.4490


@needs
def test_tifa_sample_aggregate_with_the_tifa_rule():
    verdicts = tifa_verdicts(TIFA / "sample_question_answers.json", TIFA / "sample_evaluation_result.json")
    result = json.loads((TIFA / "sample_evaluation_result.json").read_text())
    assert len(verdicts) == 19 and verdicts.verdict.isin(["yes", "no"]).all()
    published = {
        (caption, question): detail["scores"]
        for caption, questions in result["question_details"].items()
        for question, detail in questions.items()
    }
    correct = [float(verdict == "yes") for verdict in verdicts.verdict]
    assert [published[key] for key in zip(verdicts.sample_id, verdicts.question_id, strict=True)] == correct
    per_caption = prompt_scores(verdicts, "tifa").set_index("sample_id")["score"]
    assert per_caption.to_dict() == pytest.approx(result["caption_scores"])
    assert tifa_score(verdicts) == result["tifa_average"] == 0.8125
    assert question_mean_score(verdicts) == pytest.approx(16 / 19)  # the question-level mean differs


@pytest.fixture(scope="module")
def viescore_pairs() -> pd.DataFrame:
    ratings = imagenhub_ratings(TEXT_TO_IMAGE_RATERS, "SC")
    scores = viescore_metric_scores(GEMINI_0SHOT_ANSWERS, "SC", "gemini_0shot")
    return pair_metrics_with_ratings(scores, ratings)


VIESCORE_SC_SPEARMAN = {
    "SDXL": 0.5974,
    "SD": 0.6104,
    "OpenJourney": 0.5904,
    "DeepFloydIF": 0.5528,
    "DALLE2": 0.4783,
}


@needs
@pytest.mark.parametrize(("fisher_z", "published_average"), [("skip_arctanh", 0.5123), ("arctanh", 0.5677)])
def test_viescore_sc_spearman_per_model_and_averaged(viescore_pairs, fisher_z, published_average):
    assert (viescore_pairs.n_raters == 3).all()
    table = correlations(viescore_pairs, ["gemini_0shot_SC"], group_by="model", fisher_z=fisher_z)
    per_model = table[table.scope == "group"].set_index("group")
    assert {model: round(rho, 4) for model, rho in per_model.spearman_rho.items()} == VIESCORE_SC_SPEARMAN
    # SD and DALLE2 each miss one judge answer: correlated over the images both have.
    assert per_model.n.to_dict() == {
        "DALLE2": 196,
        "DeepFloydIF": 197,
        "OpenJourney": 197,
        "SD": 196,
        "SDXL": 197,
    }
    average = table[table.scope == "group_average"].iloc[0]
    assert average.averaging == f"fisher_z:{fisher_z}"
    assert round(average.spearman_rho, 4) == published_average
