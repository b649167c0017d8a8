"""Curate on the decisions people made in the review app's panel review: ingest and curate run by Kedro's runner
on the project's catalog, the app's panel queue filled from what curate wrote, decisions given through its pages,
and curate's next run reads them from the store (the catalog's ``review_decisions``) with nothing exported: the
spot check's REJECT is rejected, the false-positive rate in curate_screen's metrics, the undecided panel kept."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from kedro.config import OmegaConfigLoader
from kedro.runner import SequentialRunner
from sqlalchemy import select
from starlette.testclient import TestClient

from sciir.pipelines.curate import create_pipeline as create_curate
from sciir.pipelines.ingest import create_pipeline as create_ingest
from sciir.review.app import create_app, prepare
from sciir.review.models import Item
from sciir.review.settings import ReviewSettings
from sciir.settings import CONFIG_LOADER_ARGS
from sciir.testing.review_raters import RaterClient
from sciir.testing.stage_runs import curate_parameters, stage_catalog, two_figure_article

PAGE = "/panels"
REPO = Path(__file__).resolve().parents[2]
LOADER = OmegaConfigLoader(conf_source=str(REPO / "conf"), **CONFIG_LOADER_ARGS)  # type: ignore[arg-type]


def _run(root: Path, pipeline, params: dict) -> None:
    SequentialRunner().run(pipeline, stage_catalog(pipeline, root, LOADER, params))


def _decide_in_the_app(root: Path, decisions: dict[str, tuple[str, str]]) -> None:
    """Fill the panel queue of the project's store under ``root`` and decide each panel through the pages:
    figure id -> (decision, note)."""
    settings = ReviewSettings().within(root)
    prepared = prepare(settings)
    with prepared.store.reading() as session:
        items = {item.public_id: item for item in session.scalars(select(Item))}
    rater = RaterClient(TestClient(create_app(prepared.store, settings), base_url="http://127.0.0.1:8765"))
    rater.sign_in("ann")
    while (page := rater.page(PAGE)).item_of(PAGE) is not None:
        item = items[page.item_of(PAGE) or ""]
        assert rater.client.get(f"{PAGE}/figure/{item.public_id}").status_code == 200  # the whole figure
        decision, note = decisions[item.context["figure_id"]]
        assert rater.send(PAGE, {"decision": decision, "note": note}, page).status == 200
    prepared.store.close()


@pytest.mark.slow
def test_curate_applies_the_panel_decisions_of_the_review_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the catalog's store, sqlite:///data/review/review.sqlite, is here
    params = curate_parameters(tmp_path, two_figure_article(tmp_path / "articles" / "a1").parent, LOADER)
    _run(tmp_path, create_ingest() + create_curate(), params)
    queue = pd.read_csv(
        tmp_path / "data" / "03_primary" / "review_queue.csv", dtype=str, keep_default_na=False
    )
    assert dict(zip(queue["figure_id"], queue["queue"], strict=True)) == {
        "fig1": "spot_check",
        "fig2": "low_confidence",
    }
    screen = json.loads((tmp_path / "data" / "08_reporting" / "metrics" / "curate_screen.json").read_text())
    assert screen["spot_check_reviewed"] == 0 and "spot_check_false_positive_rate" not in screen

    _decide_in_the_app(tmp_path, {"fig1": ("REJECT", "a chart of nothing"), "fig2": ("KEEP", "a micrograph")})
    _run(tmp_path, create_curate(), {"params:curate": params["params:curate"]})

    curated = pd.read_parquet(tmp_path / "data" / "03_primary" / "curated.parquet").set_index("figure_id")
    assert curated.loc["fig1", "status"] == "rejected"
    assert curated.loc["fig1", "reason"].endswith("spot check REJECT: a chart of nothing")
    assert curated.loc["fig2", "status"] == "kept"
    screen = json.loads((tmp_path / "data" / "08_reporting" / "metrics" / "curate_screen.json").read_text())
    assert screen["spot_check_reviewed"] == 1 and screen["spot_check_false_positive_rate"] == 1.0
    assert screen["spot_check_flagged"] == 1 and screen["awaiting_review"] == 0
    written = pd.read_csv(
        tmp_path / "data" / "03_primary" / "review_queue.csv", dtype=str, keep_default_na=False
    )
    assert dict(zip(written["figure_id"], written["decision"], strict=True)) == {
        "fig1": "REJECT",
        "fig2": "KEEP",
    }

    # A file named by curate.review.decisions wins over the store (here: a file deciding nothing).
    (tmp_path / "none.csv").write_text("sample_id,decision\n")
    curate = params["params:curate"] | {
        "review": params["params:curate"]["review"] | {"decisions": "none.csv"}
    }
    _run(tmp_path, create_curate(), {"params:curate": curate})
    curated = pd.read_parquet(tmp_path / "data" / "03_primary" / "curated.parquet").set_index("figure_id")
    assert curated.loc["fig1", "status"] == "kept" and curated.loc["fig2", "status"] == "review"


def test_a_run_without_a_store_decides_nothing_and_creates_no_store(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = stage_catalog(create_curate(), tmp_path, LOADER)
    table = catalog.load("review_decisions")
    assert table.empty and table.attrs["absence"] == "it does not exist yet"
    assert not (tmp_path / "data" / "review").exists()
