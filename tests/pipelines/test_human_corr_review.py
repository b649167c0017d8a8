"""human_corr on the ratings people gave in the review app: the project's catalog reads them from the app's store
through its ``review_ratings`` dataset (``human_corr.ratings.source: review``), with no export step."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from kedro.runner import SequentialRunner
from PIL import Image
from sqlalchemy import select
from starlette.testclient import TestClient

from sciir.pipelines.human_corr import create_pipeline
from sciir.review.app import create_app, prepare
from sciir.review.models import Item
from sciir.review.settings import RatingsSettings, ReviewSettings
from sciir.testing.review_raters import RaterClient

REPO = Path(__file__).resolve().parents[2]
# model/sample -> the score every rater gives it, and a metric that follows it (0.1 x score) and one that does not
TRUE_SCORE = {"m1/s1": 5, "m1/s2": 2, "m1/s3": 4, "m2/s1": 1, "m2/s2": 3, "m2/s3": 4}
NOISE = {"m1/s1": 0.3, "m1/s2": 0.9, "m1/s3": 0.1, "m2/s1": 0.5, "m2/s2": 0.2, "m2/s3": 0.7}


def _rate_in_the_app(root: Path) -> None:
    """Fill the ratings queue of the project's default store under ``root`` and rate every image by three
    raters through the app's pages, each giving the image's TRUE_SCORE."""
    images = root / "data" / "07_model_output" / "generations"
    for key in TRUE_SCORE:
        (images / key).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (12, 12)).save(images / f"{key}.png")
    settings = ReviewSettings(ratings=RatingsSettings(benchmark=None)).within(root)
    prepared = prepare(settings)
    with prepared.store.reading() as session:
        keys = dict(session.execute(select(Item.public_id, Item.key)).tuples().all())
    for name in ("ann", "bo", "cy"):
        rater = RaterClient(
            TestClient(create_app(prepared.store, settings), base_url="http://127.0.0.1:8765")
        )
        rater.sign_in(name)
        while (page := rater.page()).item is not None:
            assert rater.answer(TRUE_SCORE[keys[page.item]], page).status == 200
    prepared.store.close()


@pytest.mark.slow
def test_human_corr_reads_the_review_stores_ratings_through_the_catalog(
    tmp_path: Path, project_catalog, mlflow_run
) -> None:
    # mlflow_run runs the test from tmp_path: the catalog's store, sqlite:///data/review/review.sqlite, is there.
    assert Path.cwd() == tmp_path
    _rate_in_the_app(tmp_path)
    pipeline = create_pipeline()
    catalog = project_catalog(pipeline, {"params:human_corr": _review_params(tmp_path)})
    assert type(catalog["review_ratings"]).__name__ == "ReviewRatingsDataset"
    SequentialRunner().run(pipeline, catalog)

    ratings = catalog.load("ratings")
    assert len(ratings) == 18 and set(ratings["rater_id"]) == {"ann", "bo", "cy"}
    assert ratings.groupby("image_id")["score"].mean().to_dict() == {
        k: float(v) for k, v in TRUE_SCORE.items()
    }
    correlations = catalog.load("correlations").set_index("metric")
    assert correlations.loc["follows", "pearson_r"] == pytest.approx(1.0)
    assert correlations.loc["follows", "n"] == 6 and abs(correlations.loc["noise", "pearson_r"]) < 0.9
    agreement = catalog.load("rater_agreement").set_index("statistic")
    assert agreement.loc["krippendorff_alpha", "value"] == pytest.approx(1.0)
    assert agreement.loc["krippendorff_alpha", "n_raters"] == 3


def _review_params(tmp_path: Path) -> dict:
    """The project's human_corr parameters with the ratings from the review store and a metric-scores file."""
    scores = pd.DataFrame(
        [(image, "follows", 0.1 * score) for image, score in TRUE_SCORE.items()]
        + [(image, "noise", NOISE[image]) for image in TRUE_SCORE],
        columns=["image_id", "metric", "score"],
    )
    scores.to_csv(tmp_path / "scores.csv", index=False)
    params = yaml.safe_load((REPO / "conf" / "base" / "parameters_human_corr.yml").read_text())["human_corr"]
    params |= {
        "ratings": params["ratings"] | {"source": "review"},
        "metric_scores": {"source": "file", "path": str(tmp_path / "scores.csv")},
        "metrics": ["follows", "noise"],
        "bootstrap": {"n_boot": 50, "seed": 0},
    }
    return params


def test_an_empty_store_as_the_source_of_ratings_says_so(tmp_path: Path, project_catalog, mlflow_run) -> None:
    pipeline = create_pipeline()
    catalog = project_catalog(pipeline, {"params:human_corr": _review_params(tmp_path)})
    with pytest.raises(Exception) as error:
        SequentialRunner().run(pipeline, catalog)
    message = str(error.value)
    assert "no ratings in the review store sqlite:///data/review/review.sqlite (queue ratings)" in message
    assert "it does not exist yet; rate the images with `kedro review`" in message
    assert not (tmp_path / "data" / "review").exists()
