"""The human_corr pipeline: oracle ratings on a hand-made figure, and rating / metric-score files from users."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml
from kedro.io import AbstractDataset, DataCatalog, MemoryDataset
from kedro.runner import SequentialRunner
from kedro_datasets.pandas import CSVDataset, ParquetDataset
from matplotlib.figure import Figure
from pydantic import ValidationError
from scipy import stats

from sciir.catalog.optional_dataset import MissingInputError, OptionalDataset
from sciir.evaluation.human_corr_inputs import HumanCorrParams
from sciir.evaluation.image_metrics import evaluate_metric_scores
from sciir.evaluation.scoring import score_samples
from sciir.pipelines.human_corr import create_pipeline
from sciir.sample.oracle import ORACLE_RATER_ID
from sciir.stats.correlation_table import correlation_columns
from sciir.stats.metric_comparison import COMPARISON_COLUMNS

CONF = Path(__file__).resolve().parents[2] / "conf" / "base"
FAST = {"bootstrap": {"n_boot": 50, "seed": 0}}
CHECKLIST_METRICS = ["checklist_pass_rate", "text_pass", "final_pass"]
ORACLE_PARAMS = {"ratings": {"source": "oracle", "fault_penalty": 1.0}, "metrics": CHECKLIST_METRICS, **FAST}

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
        # No review store: the catalog's review_ratings loads as an empty table (tests/review cover the store).
        "review_ratings": pd.DataFrame(columns=["image_id", "rater_id", "score"]),
        "params:human_corr": params,
    }


def run(tmp_path, params: dict, **overrides) -> dict:
    """The pipeline on ``inputs`` with ``overrides`` (data, or a dataset used as it is)."""
    given = inputs(tmp_path, params) | overrides
    catalog = DataCatalog(
        {
            name: data if isinstance(data, AbstractDataset) else MemoryDataset(data)
            for name, data in given.items()
        }
    )
    catalog["ratings"] = ParquetDataset(filepath=str(tmp_path / "ratings.parquet"))
    tables = ("correlations", "rater_agreement", "metric_comparisons")
    for name in tables:
        catalog[name] = CSVDataset(filepath=str(tmp_path / f"{name}.csv"), save_args={"index": False})
    free = SequentialRunner().run(create_pipeline(), catalog)
    saved = {name: catalog.load(name) for name in ("ratings", *tables)}
    return {name: free[name].load() for name in free} | saved


def test_pipeline_matches_the_contract():
    pipeline = create_pipeline()
    assert pipeline.inputs() == {
        "sample_scores", "generation_manifest", "benchmark", "curated", "figures", "review_ratings",
        "params:human_corr"
    }  # fmt: skip
    assert {
        "ratings", "correlations", "rater_agreement", "metric_comparisons", "human_corr_plot", "human_corr_metrics"
    } <= pipeline.all_outputs()  # fmt: skip


def test_oracle_ratings_and_correlations(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        outputs = run(tmp_path, ORACLE_PARAMS)
    ratings = outputs["ratings"]
    assert list(ratings.columns) == ["image_id", "rater_id", "score"]
    assert dict(zip(ratings.image_id, ratings.score, strict=True)) == EXPECTED_RATINGS
    assert set(ratings.rater_id) == {ORACLE_RATER_ID}
    assert "programmatic/s3" in caplog.text and "no ground truth file" in caplog.text

    table = outputs["correlations"].set_index("metric")
    assert list(outputs["correlations"].columns) == correlation_columns("b")
    assert set(table.scope) == {"pooled"}
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
    assert metrics["text_pass.pearson_ci_low"] < metrics["text_pass.pearson_r"]
    assert not [key for key in metrics if key.endswith((".reason", ".group", ".scope"))]
    plot = outputs["human_corr_plot"]
    assert isinstance(plot, Figure) and len(plot.axes) == 3
    assert plot.axes[0].get_ylabel() == f"rating ({ORACLE_RATER_ID})"

    agreement = outputs["rater_agreement"]
    assert agreement["value"].isna().all() and agreement["reason"].str.contains("only 1 rater").all()
    assert "agreement between raters is not applicable" in caplog.text
    comparisons = outputs["metric_comparisons"]
    assert list(comparisons.columns) == list(COMPARISON_COLUMNS) and len(comparisons) == 3
    first = comparisons.iloc[0]
    assert (first.metric_a, first.metric_b) == ("checklist_pass_rate", "text_pass")
    assert first.r_a == pytest.approx(table.loc["checklist_pass_rate", "pearson_r"])


@pytest.mark.slow
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
        tmp_path,
        {"ratings": {"source": "file", "path": str(path)}, "metrics": ["checklist_pass_rate"], **FAST},
    )
    assert outputs["ratings"]["score"].tolist() == [5, 3, 2, 3, 1]
    row = outputs["correlations"].iloc[0]
    assert row.metric == "checklist_pass_rate" and row.n == 4
    assert row.pearson_r == pytest.approx(
        stats.pearsonr([1.0, 0.5, 0.5, 0.0], [4.0, 2.0, 3.0, 1.0]).statistic
    )
    assert outputs["human_corr_metrics"]["raters"] == 2.0


def base_params() -> dict:
    return yaml.safe_load((CONF / "parameters_human_corr.yml").read_text())["human_corr"]


def merged(base: dict, override: dict) -> dict:
    """``override`` merged key by key into ``base``, as Kedro merges ``--params`` into the base config."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merged(base[key], value) if isinstance(value, dict) and key in base else value
    return out


def test_switching_to_a_ratings_file_by_params_keeps_the_base_keys_valid(tmp_path):
    params = merged(base_params(), {"ratings": {"source": "file", "path": "ratings.csv"}})
    assert "fault_penalty" in params["ratings"]  # the oracle's keys stay merged in, as with --params
    config = HumanCorrParams.model_validate(params)
    assert (config.ratings.source, config.ratings.path) == ("file", "ratings.csv")
    with pytest.raises(ValidationError, match="ratings.path is not set"):
        HumanCorrParams.model_validate(merged(base_params(), {"ratings": {"source": "file"}}))
    with pytest.raises(ValidationError, match="set ratings.source=file"):
        HumanCorrParams.model_validate(merged(base_params(), {"ratings": {"path": "ratings.csv"}}))


def file_ratings(tmp_path, rows: list[tuple], name: str = "ratings.csv") -> dict:
    """Params reading the ratings ``rows`` (image_id, rater_id, score) from a CSV, scores from evaluate."""
    path = tmp_path / name
    pd.DataFrame(rows, columns=["image_id", "rater_id", "score"]).to_csv(path, index=False)
    return {"ratings": {"source": "file", "path": str(path)}, "metrics": ["checklist_pass_rate"], **FAST}


def test_a_rating_of_no_benchmark_sample_is_named_with_its_line(tmp_path):
    rows = [("programmatic/s0", "r1", 5), ("programmatic/s1", "r1", 2), ("programmatic/s9", "r1", 1)]
    with pytest.raises(Exception) as error:
        run(tmp_path, file_ratings(tmp_path, rows))
    message = str(error.value)
    assert f"ratings file {tmp_path / 'ratings.csv'}, column 'image_id'" in message
    assert "line 4: 'programmatic/s9'" in message and "line 2" not in message
    assert "expected <model>/<sample_id> of a benchmark sample, e.g. '<model>/s0'" in message


def test_a_ratings_file_without_a_score_column_is_named(tmp_path):
    path = tmp_path / "ratings.csv"
    pd.DataFrame({"image_id": ["programmatic/s0"], "rater_id": ["r1"], "rating": [4]}).to_csv(
        path, index=False
    )
    with pytest.raises(
        Exception,
        match=r"ratings file .*ratings.csv: no column 'score' \(columns found: "
        r"\['image_id', 'rater_id', 'rating'\]; expected columns: image_id, rater_id, score\)",
    ):
        run(tmp_path, {"ratings": {"source": "file", "path": str(path)}, **FAST})


def test_a_correlation_over_no_matched_image_names_both_inputs(tmp_path):
    params = user_files(tmp_path)
    ratings = pd.read_parquet(tmp_path / "user_ratings.parquet")
    ratings.assign(image_id="other/" + ratings["image_id"]).to_csv(tmp_path / "elsewhere.csv", index=False)
    params["ratings"] = {"source": "file", "path": str(tmp_path / "elsewhere.csv")}
    with pytest.raises(Exception) as error:
        run(tmp_path, params, sample_scores=pd.DataFrame())
    message = str(error.value)
    assert "no image is both scored and rated" in message
    assert (
        f"metric scores file {tmp_path / 'scores.tsv'} and ratings file {tmp_path / 'elsewhere.csv'}"
        in message
    )
    assert "e.g. 'dalle/p0'" in message and "e.g. 'other/dalle/p0'" in message


def test_unknown_rating_source_is_refused(tmp_path):
    with pytest.raises(Exception, match="source"):
        run(tmp_path, {"ratings": {"source": "crowd"}})


# model, sample -> (our_judge, clip) scores; ratings by three raters below
OTHER_SCORES = {
    ("sd", "p0"): (0.9, 31.0),
    ("sd", "p1"): (0.2, 25.0),
    ("sd", "p2"): (0.6, 30.0),
    ("sd", "p3"): (0.4, 24.0),
    ("dalle", "p0"): (0.8, 29.0),
    ("dalle", "p1"): (0.1, 28.0),
    ("dalle", "p2"): (0.5, 26.0),
    ("dalle", "p3"): (None, 27.0),  # our judge had no score for this image
}
MEAN_RATING = {"p0": 5.0, "p1": 1.0, "p2": 4.0, "p3": 2.0}


def user_files(tmp_path) -> dict:
    """A ratings CSV (three raters in perfect agreement) and a metric-scores TSV with a model column."""
    scores = pd.DataFrame(
        [
            {"image_id": f"{model}/{sample}", "metric": metric, "score": value, "model": model}
            for (model, sample), values in OTHER_SCORES.items()
            for metric, value in zip(("our_judge", "clip"), values, strict=True)
        ]
    )
    scores.to_csv(tmp_path / "scores.tsv", sep="\t", index=False)
    ratings = pd.DataFrame(
        [
            {"image_id": f"{model}/{sample}", "rater_id": rater, "score": MEAN_RATING[sample]}
            for model, sample in OTHER_SCORES
            for rater in ("ann", "bo", "cy")
        ]
    )
    ratings.to_parquet(tmp_path / "user_ratings.parquet")
    return {
        "ratings": {"source": "file", "path": str(tmp_path / "user_ratings.parquet")},
        "metric_scores": {"source": "file", "path": str(tmp_path / "scores.tsv")},
        "metrics": None,
        **FAST,
    }


def test_other_systems_scores_from_a_file_grouped_by_model(tmp_path):
    params = user_files(tmp_path) | {"group_by": "model", "fisher_z": "skip_arctanh", "kendall_variant": "c"}
    outputs = run(tmp_path, params, sample_scores=pd.DataFrame())
    table = outputs["correlations"]
    assert list(table.columns) == correlation_columns("c")
    assert list(zip(table.metric, table.scope, table.group.fillna(""), strict=True)) == [
        ("our_judge", "pooled", ""),
        ("our_judge", "group", "dalle"),
        ("our_judge", "group", "sd"),
        ("our_judge", "group_average", ""),
        ("clip", "pooled", ""),
        ("clip", "group", "dalle"),
        ("clip", "group", "sd"),
        ("clip", "group_average", ""),
    ]
    rows = table.set_index(["metric", "scope", table.group.fillna("")])
    judged_dalle = stats.spearmanr([0.8, 0.1, 0.5], [5.0, 1.0, 4.0]).statistic
    assert rows.loc[("our_judge", "group", "dalle"), "spearman_rho"] == pytest.approx(judged_dalle)
    assert rows.loc[("our_judge", "group", "dalle"), "n"] == 3
    assert rows.loc[("our_judge", "pooled", ""), "n"] == 7
    average = rows.loc[("our_judge", "group_average", "")]
    assert average.averaging == "fisher_z:skip_arctanh"
    assert average.spearman_rho == pytest.approx(math.tanh((judged_dalle + 1.0) / 2))
    assert rows.loc[("clip", "pooled", ""), "kendall_tau_c"] == pytest.approx(
        stats.kendalltau([31, 25, 30, 24, 29, 28, 26, 27], [5, 1, 4, 2, 5, 1, 4, 2], variant="c").statistic
    )

    agreement = outputs["rater_agreement"].set_index("statistic")
    assert agreement.loc["krippendorff_alpha", "value"] == pytest.approx(1.0)
    assert agreement.loc["krippendorff_alpha", "n_raters"] == 3
    assert agreement.loc["mean_pairwise_spearman", "value"] == pytest.approx(1.0)
    comparison = outputs["metric_comparisons"].iloc[0]
    assert (comparison.metric_a, comparison.metric_b, comparison.n) == ("our_judge", "clip", 7)
    metrics = outputs["human_corr_metrics"]
    assert metrics["our_judge.group_average.spearman_rho"] == pytest.approx(average.spearman_rho)
    assert metrics["agreement.krippendorff_alpha"] == pytest.approx(1.0)
    assert metrics["raters"] == 3.0 and "compare.our_judge_vs_clip.williams_p" in metrics


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metrics": ["vqascore"]}, r"metrics \['vqascore'\] have no scores"),
        ({"group_by": "generator"}, "group_by 'generator' is not a column"),
        ({"compare_coefficient": "cosine"}, "compare_coefficient"),
    ],
)
def test_configuration_mistakes_are_named(tmp_path, change, message):
    with pytest.raises(Exception, match=message):
        run(tmp_path, user_files(tmp_path) | change, sample_scores=pd.DataFrame())


def test_bad_files_are_refused_naming_the_rows(tmp_path):
    params = user_files(tmp_path)
    ratings = pd.read_parquet(tmp_path / "user_ratings.parquet")
    pd.concat([ratings, ratings.iloc[:1]]).to_csv(tmp_path / "twice.csv", index=False)
    with pytest.raises(Exception, match=r"\['image_id', 'rater_id'\] repeated: \[\('sd/p0', 'ann'\)\]"):
        run(tmp_path, params | {"ratings": {"source": "file", "path": str(tmp_path / "twice.csv")}})
    scores = pd.read_csv(tmp_path / "scores.tsv", sep="\t")
    scores["score"] = scores["score"].astype(object)
    scores.loc[3, "score"] = "high"
    scores.to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(
        Exception, match=r"text.csv, column 'score': expected a number .* found line 5: 'high'"
    ):
        run(tmp_path, params | {"metric_scores": {"source": "file", "path": str(tmp_path / "text.csv")}})


def test_new_tables_are_logged_as_mlflow_artifacts(tmp_path, mlflow_store):
    import mlflow
    import yaml

    entries = yaml.safe_load((CONF / "catalog_human_corr.yml").read_text())
    for entry in entries.values():
        entry["dataset"]["filepath"] = str(tmp_path / Path(entry["dataset"]["filepath"]).name)
    catalog = DataCatalog.from_config(entries)
    table = pd.DataFrame({"statistic": ["krippendorff_alpha"], "value": [0.8]})
    experiment = mlflow.create_experiment("human_corr", artifact_location=(tmp_path / "artifacts").as_uri())
    with mlflow.start_run(experiment_id=experiment) as active:
        for name in entries:
            catalog.save(name, table)
    logged = {item.path for item in mlflow_store.list_artifacts(active.info.run_id)}
    assert logged == {"rater_agreement.csv", "metric_comparisons.csv"}
    assert pd.read_csv(tmp_path / "rater_agreement.csv").equals(table)


def test_every_rule_evaluate_computed_is_a_metric_by_name():
    verdicts = pd.DataFrame(
        [
            ("m", "s0", "t1", 1, "text", "yes", "judged"),
            ("m", "s0", "e1", 2, "entity", "no", "judged"),
            ("m", "s0", "e2", 2, "entity", "yes", "judged"),
        ],
        columns=["model", "sample_id", "question_id", "layer", "track", "verdict", "status"],
    )
    benchmark = pd.DataFrame({"sample_id": ["s0"], "group": ["g"], "setting": ["x"]})
    scores = evaluate_metric_scores(score_samples(verdicts, benchmark, "exclude", ["sciir_veto", "tifa"]))
    by_name = scores.set_index("metric")["score"]
    assert by_name["tifa.final"] == pytest.approx(2 / 3) and by_name["tifa.entity"] == 0.5
    assert by_name["sciir_veto.final"] == 0.0 and by_name["sciir_veto.text"] == 1.0
    assert by_name["final_pass"] == 0.0 and by_name["checklist_pass_rate"] == pytest.approx(2 / 3)
    assert set(scores["image_id"]) == {"m/s0"} and set(scores["model"]) == {"m"}


# The inputs human_corr may do without, as the catalog declares them (OptionalDataset), and who writes them.
WRITTEN_BY = {
    "sample_scores": "evaluate",
    "generation_manifest": "generate",
    "benchmark": "bench_select",
    "curated": "curate",
    "figures": "ingest",
}


def never_written(tmp_path, *names: str) -> dict[str, OptionalDataset]:
    """Catalog entries of ``names`` whose files no pipeline has written (a fresh clone)."""
    return {
        name: OptionalDataset(
            dataset={
                "type": "pandas.ParquetDataset",
                "filepath": str(tmp_path / "absent" / f"{name}.parquet"),
            },
            written_by=WRITTEN_BY[name],
        )
        for name in names
    }


def test_a_ratings_file_and_a_scores_file_need_no_other_pipeline(tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        outputs = run(tmp_path, user_files(tmp_path), **never_written(tmp_path, *WRITTEN_BY))
    table = outputs["correlations"].set_index("metric")
    assert table.loc["our_judge", "n"] == 7 and table.loc["clip", "n"] == 8
    assert table.loc["clip", "spearman_rho"] == pytest.approx(
        stats.spearmanr([31, 25, 30, 24, 29, 28, 26, 27], [5, 1, 4, 2, 5, 1, 4, 2]).statistic
    )
    assert outputs["human_corr_metrics"]["raters"] == 3.0
    assert "absent" not in caplog.text  # no absent table was looked at


def test_a_ratings_file_with_evaluate_scores_and_no_benchmark_is_paired_unchecked(tmp_path, caplog):
    rows = [("programmatic/s0", "r1", 5), ("programmatic/s1", "r1", 2), ("faulty/s2", "r1", 1)]
    with caplog.at_level(logging.INFO):
        outputs = run(
            tmp_path,
            file_ratings(tmp_path, rows),
            **never_written(tmp_path, "benchmark", "curated", "figures"),
        )
    assert outputs["correlations"].iloc[0].n == 3
    assert "image ids not checked against a benchmark (none exists)" in caplog.text


def _said(error: pytest.ExceptionInfo) -> str:
    """The message of the exception Kedro's runner raised, or of the one it wraps."""
    chained = error.value.__cause__ or error.value
    return str(chained)


def test_oracle_ratings_without_curate_name_the_pipeline_and_the_ratings_file_parameters(tmp_path):
    with pytest.raises(MissingInputError) as error:
        run(tmp_path, ORACLE_PARAMS, **never_written(tmp_path, "curated"))
    assert _said(error) == (
        f"human_corr: no oracle ratings: {tmp_path / 'absent' / 'curated.parquet'} does not exist (written by "
        "`kedro run --pipelines curate`); or give a ratings file with "
        "human_corr.ratings.source=file,human_corr.ratings.path=FILE"
    )


def test_evaluate_scores_that_do_not_exist_name_evaluate_and_the_scores_file_parameters(tmp_path):
    rows = [("programmatic/s0", "r1", 5)]
    with pytest.raises(MissingInputError) as error:
        run(tmp_path, file_ratings(tmp_path, rows), **never_written(tmp_path, "sample_scores"))
    assert _said(error) == (
        f"human_corr: no metric scores: {tmp_path / 'absent' / 'sample_scores.parquet'} does not exist "
        "(written by `kedro run --pipelines evaluate`); or give a file with "
        "human_corr.metric_scores.source=file,human_corr.metric_scores.path=FILE"
    )
