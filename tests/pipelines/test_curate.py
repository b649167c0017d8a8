"""Curate nodes on drawn figures, and ingest + curate run by Kedro's SequentialRunner on real articles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from kedro.runner import SequentialRunner
from PIL import Image, ImageDraw

from sciir.backends.offline import OfflineVLM
from sciir.figures.curated_rows import CURATED_COLUMNS
from sciir.figures.ids import sample_id
from sciir.pipelines.curate import create_pipeline as create_curate
from sciir.pipelines.curate.nodes import curate_figures, summarise_curate
from sciir.pipelines.ingest import create_pipeline as create_ingest
from sciir.sample.jats_writer import CC_BY, ArticleDocument, FigureEntry, article_xml
from sciir.tasks.registry import rule_book
from sciir.testing.figure_rows import kept_figure_row

REPO = Path(__file__).resolve().parents[2]
EXTERNAL_ARTICLES = REPO / ".." / "shared" / "external" / "articles"
DOI = "10.1234/drawn"
SMALL_OUTPUT_PX = 48


def _params(name: str) -> dict[str, Any]:
    """Shipped parameters of a pipeline."""
    text = (REPO / "conf" / "base" / f"parameters_{name}.yml").read_text(encoding="utf-8")
    return yaml.safe_load(text)[name]


def _curate_params(tmp_path: Path) -> dict[str, Any]:
    """Shipped curate parameters, with small standardised images (quick) and the shards under tmp_path."""
    params = _params("curate")
    params["standardise"]["size_px"] = SMALL_OUTPUT_PX
    params["shards"]["folder"] = str(tmp_path / "curate_shards")
    return params


def _figure_row(figure_id: str, image_path: Path) -> dict[str, Any]:
    return kept_figure_row(DOI, "drawn", figure_id, image_path)


def _draw_panels(path: Path, size: tuple[int, int], boxes: list[tuple[int, int, int, int]]) -> None:
    image = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(image)
    for x0, y0, x1, y1 in boxes:
        draw.rectangle((x0, y0, x1 - 1, y1 - 1), fill=(40, 90, 160), outline=(0, 0, 0))
    image.save(path)


@pytest.fixture
def drawn_tables(tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figures: a 3-panel composite with one undersized panel, a blank image, a corrupt file; plus a
    figure ingest rejected, which curate must not list again."""
    _draw_panels(
        tmp_path / "grid.png", (460, 320), [(10, 10, 210, 300), (250, 10, 450, 150), (250, 200, 450, 300)]
    )
    Image.new("RGB", (200, 200), "white").save(tmp_path / "blank.png")
    (tmp_path / "corrupt.png").write_bytes(b"not an image")
    rows = [_figure_row(name, tmp_path / f"{name}.png") for name in ("grid", "blank", "corrupt")]
    rows.append(
        {**_figure_row("excluded", tmp_path / "grid.png"), "status": "rejected", "reason": "third-party"}
    )
    articles = pd.DataFrame([{"article_id": "drawn", "methods_text": "We drew rectangles."}])
    return pd.DataFrame(rows), articles


def test_panels_rules_and_failures_become_rows(
    tmp_path: Path, drawn_tables: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    figures, articles = drawn_tables
    curated, images = curate_figures(figures, articles, _curate_params(tmp_path))
    assert list(curated.columns) == CURATED_COLUMNS
    assert "excluded" not in set(curated["figure_id"])

    grid = curated[curated["figure_id"] == "grid"].reset_index(drop=True)
    assert grid["n_panels"].tolist() == [3, 3, 3]
    assert grid[["x0", "y0", "x1", "y1"]].values.tolist() == [
        [10, 10, 210, 300], [250, 10, 450, 150], [250, 200, 450, 300],
    ]  # fmt: skip
    assert grid["status"].tolist() == ["kept", "kept", "rejected"]
    assert grid.loc[2, "reason"] == f"panel 2 of grid in {DOI}: 200x100 px, short side below 128 px"
    assert (grid["methods_text"] == "We drew rectangles.").all()
    assert (grid["licence_name"] == "CC BY 4.0").all()

    blank = curated[curated["figure_id"] == "blank"].iloc[0]
    assert blank["status"] == "rejected" and "only background" in blank["reason"]
    corrupt = curated[curated["figure_id"] == "corrupt"].iloc[0]
    assert corrupt["status"] == "rejected" and "corrupt.png" in corrupt["reason"]
    assert pd.isna(corrupt["x0"])

    assert "not an image in a supported format" in corrupt["reason"]
    assert sorted(images) == sorted(sample_id(DOI, "grid", index) for index in (0, 1))
    for handle in images.values():
        image = handle.image()  # PNG bytes made in the worker, behind a lazy handle
        assert image.size == (SMALL_OUTPUT_PX, SMALL_OUTPUT_PX) and image.mode == "RGB"
    assert [json.loads(changes) for changes in grid.loc[:1, "changes"]] == [
        ["cropped", "resized", "padded"]
    ] * 2
    assert pd.isna(grid.loc[2, "changes"]) and pd.isna(blank["changes"])
    assert summarise_curate(curated) == {
        "panels_total": 5.0, "panels_kept": 2.0, "panels_rejected": 3.0, "panels_awaiting_review": 0.0
    }  # fmt: skip


def test_summarise_curate_counts_panels_awaiting_review_apart_from_rejected() -> None:
    curated = pd.DataFrame({"status": ["kept", "review", "rejected", "review", "kept"]})
    assert summarise_curate(curated) == {
        "panels_total": 5.0, "panels_kept": 2.0, "panels_rejected": 1.0, "panels_awaiting_review": 2.0
    }  # fmt: skip
    with pytest.raises(ValueError, match="'pending'"):
        summarise_curate(pd.DataFrame({"status": ["kept", "pending"]}))


@pytest.mark.slow
def test_ingest_then_curate_on_external_articles_accounts_for_every_figure(
    tmp_path: Path, project_catalog
) -> None:
    if not EXTERNAL_ARTICLES.is_dir():
        pytest.skip("shared/external/articles is not present")
    ingest_params = _params("ingest")
    ingest_params["source"] = {"kind": "jats_folder", "path": str(EXTERNAL_ARTICLES)}
    pipeline = create_ingest() + create_curate()
    catalog = project_catalog(
        pipeline,
        {
            "params:ingest": ingest_params,
            "params:curate": _curate_params(tmp_path),
            "screener": OfflineVLM(rule_book("offline")),
        },
    )
    SequentialRunner().run(pipeline, catalog)
    figures = catalog["figures"].load()
    curated = catalog["curated"].load()
    images = catalog["curated_images"].load()  # partition id -> loader

    assert figures["status"].isin(["kept", "rejected"]).all()
    assert figures.loc[figures["status"] == "rejected", "reason"].str.len().gt(0).all()
    kept_figures = set(figures.loc[figures["status"] == "kept", "figure_uid"])
    assert set(curated["figure_uid"]) == kept_figures  # every kept figure yields >= 1 row, nothing else
    assert curated["sample_id"].is_unique
    assert curated.loc[curated["status"] == "rejected", "reason"].str.len().gt(0).all()
    assert curated["status"].isin(["kept", "rejected", "review"]).all()
    kept = set(curated.loc[curated["status"] == "kept", "sample_id"])
    # Images are written before the screen; panels it rejects or queues keep theirs, for the review.
    assert kept <= set(images)
    assert not curated["reason"].str.contains("privacy", na=False).any()  # no faces or patients here
    first_image = next(iter(images.values()))().image()  # the catalog loads a lazy handle
    assert first_image.size == (SMALL_OUTPUT_PX, SMALL_OUTPUT_PX)

    ingest_metrics = catalog.load("ingest_metrics")
    assert (
        ingest_metrics["figures_kept"] + ingest_metrics["figures_rejected"] == ingest_metrics["figures_total"]
    )
    assert ingest_metrics["figures_total"] == len(figures)
    curate_metrics = catalog.load("curate_metrics")
    assert curate_metrics["panels_kept"] == len(kept) > 0
    assert curate_metrics["panels_total"] == len(curated)
    assert curate_metrics["panels_awaiting_review"] == (curated["status"] == "review").sum()


def _wide_diagram_article(folder: Path) -> None:
    """A JATS article (CC BY 4.0) whose one figure is a wide diagram of three rows, 741x131 px each, apart by
    20 px whitespace gutters: the splitter cuts it at the gutters into three strips."""
    folder.mkdir(parents=True)
    rows = [(20, top, 761, top + 131) for top in (20, 171, 322)]
    _draw_panels(folder / "fig1.png", (781, 473), rows)
    figure = FigureEntry("fig1", "Figure 1", "The pipeline.", "Three stages of four steps each.", "fig1.png")
    document = ArticleDocument(
        doi="10.1234/wide",
        title="A wide diagram",
        licence=CC_BY,
        abstract="A pipeline in three stages.",
        introduction="We describe a pipeline.",
        methods="We ran three stages of four steps each.",
        figures=(figure,),
    )
    (folder / "article.xml").write_bytes(article_xml(document))


def test_a_run_that_keeps_no_panel_completes_writes_every_reason_and_says_so(
    tmp_path: Path, project_catalog, caplog
) -> None:
    """ingest + curate with the project's catalog on an article whose only figure splits into three strips
    that the aspect rule rejects: the run completes (the empty image folder loads as no image), the tables
    hold every panel with its reason, and one warning says that no panel was kept."""
    _wide_diagram_article(tmp_path / "articles" / "wide")
    ingest_params = _params("ingest")
    ingest_params["source"] = {"kind": "jats_folder", "path": str(tmp_path / "articles")}
    pipeline = create_ingest() + create_curate()
    catalog = project_catalog(
        pipeline, {"params:ingest": ingest_params, "params:curate": _curate_params(tmp_path)}
    )
    with caplog.at_level("WARNING"):
        SequentialRunner().run(pipeline, catalog)

    assert list(catalog.load("figures")["status"]) == ["kept"]
    curated = catalog.load("curated")
    assert list(curated["status"]) == ["rejected"] * 3
    reasons = [
        f"panel {n} of fig1 in 10.1234/wide: 741x131 px, aspect ratio 5.66 outside [0.33, 3.0]"
        for n in range(3)
    ]
    assert list(curated["reason"]) == reasons
    assert catalog.load("curated_images") == {}  # the folder is written, empty
    assert (tmp_path / "data" / "03_primary" / "images").is_dir()
    assert catalog.load("review_queue").empty
    assert catalog.load("curate_metrics") == {
        "panels_total": 3.0, "panels_kept": 0.0, "panels_rejected": 3.0, "panels_awaiting_review": 0.0
    }  # fmt: skip
    assert (
        "curate kept no panel: all 3 panels were rejected; each reason is in the curated table, e.g. "
        f"{reasons[0]}"
    ) in caplog.messages
