"""The human_corr pipeline on a hand-made figure with ground truth: oracle ratings and correlations."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest
from kedro.io import DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from matplotlib.figure import Figure
from scipy import stats

from sciir.oracle import ORACLE_RATER_ID
from sciir.pipelines.human_corr import create_pipeline
from sciir.scoring import score_samples
from sciir.statistics import CORRELATION_COLUMNS

ORACLE_PARAMS = {"ratings": {"source": "oracle", "fault_penalty": 1.0}}

# model, sample, drawn labels, planted fault kinds, status -> expected oracle score
GENERATIONS = [
    ("programmatic", "s0", ["A", "B"], [], "ok"),  # 5
    ("programmatic", "s1", ["C", "D"], ["reverse_edge"], "ok"),  # 5 - 1 = 4
    ("programmatic", "s2", ["E", "F", "G", "Hx"], ["misspell"], "ok"),  # 1 + 4 * 3/4 = 4
    ("programmatic", "s3", ["Z"], [], "ok"),  # its figure has no ground truth: not rated
    ("faulty", "s0", ["A"], [], "ok"),  # 3
    ("faulty", "s1", [], [], "failed"),  # no image: not rated
    ("faulty", "s2", [], ["reverse_edge"], "ok"),  # 1 - 1 -> clipped to 1
]
EXPECTED_RATINGS = {
    "programmatic/s0": 5.0,
    "programmatic/s1": 4.0,
    "programmatic/s2": 4.0,
    "faulty/s0": 3.0,
    "faulty/s2": 1.0,
}
# model, sample -> (text verdicts, entity verdicts); faulty/s1 has only failed questions
VERDICTS = {
    ("programmatic", "s0"): (["yes"], ["yes"]),
    ("programmatic", "s1"): (["yes"], ["no"]),
    ("programmatic", "s2"): (["yes"], ["yes", "no"]),
    ("programmatic", "s3"): (["yes"], ["yes"]),
    ("faulty", "s0"): (["no"], ["yes"]),
    ("faulty", "s1"): ([None], [None]),
    ("faulty", "s2"): (["no"], ["no"]),
}


def sample_scores() -> pd.DataFrame:
    rows = []
    for (model, sample), tracks in VERDICTS.items():
        for layer, track, verdicts in ((1, "text", tracks[0]), (2, "entity", tracks[1])):
            for index, verdict in enumerate(verdicts):
                status = "failed" if verdict is None else "judged"
                rows.append((model, sample, f"{track}{index}", layer, track, verdict, status))
    verdicts = pd.DataFrame(
        rows, columns=["model", "sample_id", "question_id", "layer", "track", "verdict", "status"]
    )
    benchmark = pd.DataFrame({"sample_id": ["s0", "s1", "s2", "s3"], "group": "All_Three", "setting": "x"})
    return score_samples(verdicts, benchmark, "exclude")


def inputs(tmp_path, params: dict) -> dict:
    required = [["A", "B"], ["C", "D"], ["E", "F", "G", "H"]]
    truth = {"panels": [{"panel_index": i, "required_text": text} for i, text in enumerate(required)]}
    (tmp_path / "fig1.truth.json").write_text(json.dumps(truth))
    figures = pd.DataFrame(
        {
            "figure_uid": ["fig1", "fig2"],
            "image_path": [str(tmp_path / "fig1.png"), str(tmp_path / "fig2.png")],
        }
    )
    curated = pd.DataFrame(
        {
            "sample_id": ["s0", "s1", "s2", "s3"],
            "figure_uid": ["fig1"] * 3 + ["fig2"],
            "panel_index": [0, 1, 2, 0],
        }
    )
    manifest = pd.DataFrame(
        [
            {
                "model": model,
                "sample_id": sample,
                "backend": "programmatic",
                "seed": 0,
                "status": status,
                "reason": None if status == "ok" else "renderer crashed",
                "seconds": 0.1,
                "meta": json.dumps({"drawn_labels": drawn, "planted_faults": [{"kind": k} for k in faults]}),
            }
            for model, sample, drawn, faults, status in GENERATIONS
        ]
    )
    return {
        "sample_scores": sample_scores(),
        "generation_manifest": manifest,
        "benchmark": pd.DataFrame({"sample_id": ["s0", "s1", "s2", "s3"]}),
        "curated": curated,
        "figures": figures,
        "params:human_corr": params,
    }


def run(tmp_path, params: dict) -> dict:
    catalog = DataCatalog({name: MemoryDataset(data) for name, data in inputs(tmp_path, params).items()})
    catalog["ratings"] = ParquetDataset(filepath=str(tmp_path / "ratings.parquet"))
    catalog["correlations"] = CSVDataset(
        filepath=str(tmp_path / "correlations.csv"), save_args={"index": False}
    )
    free = SequentialRunner().run(create_pipeline(), catalog)
    saved = {name: catalog.load(name) for name in ("ratings", "correlations")}
    return {name: free[name].load() for name in free} | saved


def test_pipeline_matches_the_contract():
    pipeline = create_pipeline()
    assert pipeline.inputs() == {
        "sample_scores", "generation_manifest", "benchmark", "curated", "figures", "params:human_corr"
    }  # fmt: skip
    assert {"ratings", "correlations", "human_corr_plot", "human_corr_metrics"} <= pipeline.all_outputs()


def test_oracle_ratings_and_correlations(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        outputs = run(tmp_path, ORACLE_PARAMS)
    ratings = outputs["ratings"]
    assert list(ratings.columns) == ["image_id", "rater_id", "score"]
    assert dict(zip(ratings.image_id, ratings.score, strict=True)) == EXPECTED_RATINGS
    assert set(ratings.rater_id) == {ORACLE_RATER_ID}
    assert "programmatic/s3" in caplog.text and "no ground truth file" in caplog.text

    table = outputs["correlations"].set_index("metric")
    assert list(outputs["correlations"].columns) == list(CORRELATION_COLUMNS)
    order = ["programmatic/s0", "programmatic/s1", "programmatic/s2", "faulty/s0", "faulty/s2"]
    rating = [EXPECTED_RATINGS[image] for image in order]
    expected = {
        "checklist_pass_rate": [1.0, 0.5, 2 / 3, 0.5, 0.0],
        "text_pass": [1.0, 1.0, 1.0, 0.0, 0.0],
        "final_pass": [1.0, 0.0, 0.0, 0.0, 0.0],
    }
    for metric, values in expected.items():
        assert table.loc[metric, "n"] == 5
        assert table.loc[metric, "pearson_r"] == pytest.approx(stats.pearsonr(values, rating).statistic)
        assert table.loc[metric, "spearman_p"] == pytest.approx(stats.spearmanr(values, rating).pvalue)
        assert table.loc[metric, "kendall_tau_b"] == pytest.approx(stats.kendalltau(values, rating).statistic)

    metrics = outputs["human_corr_metrics"]
    assert metrics["checklist_pass_rate.n"] == 5.0 and metrics["rated_images"] == 5.0
    assert metrics["text_pass.pearson_r"] == pytest.approx(table.loc["text_pass", "pearson_r"])
    plot = outputs["human_corr_plot"]
    assert isinstance(plot, Figure) and len(plot.axes) == 3
    assert plot.axes[0].get_ylabel() == f"rating ({ORACLE_RATER_ID})"


def test_ratings_from_a_file_are_averaged_per_image(tmp_path):
    ratings = pd.DataFrame(
        {
            "image_id": ["programmatic/s0", "programmatic/s0", "programmatic/s1", "faulty/s0", "faulty/s2"],
            "rater_id": ["r1", "r2", "r1", "r1", "r2"],
            "score": [5, 3, 2, 3, 1],
        }
    )
    path = tmp_path / "ratings.csv"
    ratings.to_csv(path, index=False)
    outputs = run(
        tmp_path, {"ratings": {"source": "file", "path": str(path)}, "metrics": ["checklist_pass_rate"]}
    )
    assert outputs["ratings"]["score"].tolist() == [5, 3, 2, 3, 1]
    row = outputs["correlations"].iloc[0]
    assert row.metric == "checklist_pass_rate" and row.n == 4
    assert row.pearson_r == pytest.approx(
        stats.pearsonr([1.0, 0.5, 0.5, 0.0], [4.0, 2.0, 3.0, 1.0]).statistic
    )
    assert outputs["human_corr_metrics"]["raters"] == 2.0


def test_unknown_rating_source_is_refused(tmp_path):
    with pytest.raises(Exception, match="source"):
        run(tmp_path, {"ratings": {"source": "crowd"}})
