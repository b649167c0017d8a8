"""Ingest nodes on the real external articles and on small broken inputs built here."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from PIL import Image

from sciir.pipelines.ingest.nodes import ingest_articles, prepare_source, summarise_ingest

REPO = Path(__file__).resolve().parents[2]
EXTERNAL_ARTICLES = REPO / ".." / "shared" / "external" / "articles"
CC_BY = '<license xlink:href="http://creativecommons.org/licenses/by/4.0/"><license-p>CC BY 4.0</license-p></license>'


def _params(kind: str, path: Path | str) -> dict[str, Any]:
    """The shipped ingest parameters with another source."""
    text = (REPO / "conf" / "base" / "parameters_ingest.yml").read_text(encoding="utf-8")
    params = yaml.safe_load(text)["ingest"]
    params["source"] = {"kind": kind, "path": str(path), "seed": params["source"]["seed"]}
    return params


def _ingest(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    params = _params("jats_folder", folder)
    return ingest_articles(prepare_source(params), params)


def _figure_xml(figure_id: str, href: str, caption: str = "A plot.", extra: str = "") -> str:
    return (
        f'<fig id="{figure_id}"><label>{figure_id}</label><caption><p>{caption}</p></caption>'
        f'<graphic xlink:href="{href}"/>{extra}</fig>'
    )


def _write_article(folder: Path, figures: str, licence: str = CC_BY, doi: str = "10.1234/ok") -> None:
    folder.mkdir(parents=True)
    (folder / "article.xml").write_text(
        f"""<article xmlns:xlink="http://www.w3.org/1999/xlink"><front><article-meta>
        <article-id pub-id-type="doi">{doi}</article-id>
        <title-group><article-title>Test</article-title></title-group>
        <permissions>{licence}</permissions></article-meta></front>
        <body><sec sec-type="methods"><title>Methods</title><p>We drew.</p>{figures}</sec></body></article>""",
        encoding="utf-8",
    )


def _png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), (10, 200, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def built_source(tmp_path: Path) -> Path:
    """Four article folders: a good one with assorted broken figures, a malformed XML, no XML, no DOI."""
    source = tmp_path / "source"
    good = source / "a-good"
    _write_article(
        good,
        _figure_xml("ok", "ok.png")
        + _figure_xml("noext", "noext")
        + _figure_xml("missing", "missing.png")
        + _figure_xml("corrupt", "corrupt.png")
        + _figure_xml("truncated", "truncated.png")
        + _figure_xml("credited", "ok.png", extra="<attrib>Reproduced from Nature 1999.</attrib>")
        + _figure_xml("escape", "../../outside.png"),
    )
    (good / "ok.png").write_bytes(_png_bytes())
    (good / "noext.png").write_bytes(_png_bytes())
    (good / "corrupt.png").write_bytes(b"this is not a PNG")
    (good / "truncated.png").write_bytes(_png_bytes()[:60])
    (source / "b-malformed").mkdir()
    (source / "b-malformed" / "article.xml").write_text("<article><front></article>", encoding="utf-8")
    (source / "c-empty").mkdir()
    _write_article(source / "d-no-doi", _figure_xml("f1", "f1.png"), doi="")
    return source


def test_broken_inputs_become_rows_with_reasons(built_source: Path) -> None:
    articles, figures = _ingest(built_source)
    status = dict(zip(articles["article_id"], articles["status"], strict=True))
    assert status == {
        "a-good": "accepted",
        "b-malformed": "rejected",
        "c-empty": "rejected",
        "d-no-doi": "rejected",
    }
    reasons = articles.set_index("article_id")["reason"]
    malformed_xml = str(built_source / "b-malformed" / "article.xml")
    assert malformed_xml in reasons["b-malformed"] and "mismatch" in reasons["b-malformed"]
    assert "no JATS XML" in reasons["c-empty"]
    assert "no DOI" in reasons["d-no-doi"]

    by_figure = figures[figures["article_id"] == "a-good"].set_index("figure_id")
    assert by_figure.loc[["ok", "noext"], "status"].tolist() == ["kept", "kept"]
    assert by_figure.loc["noext", "image_path"].endswith("noext.png")
    expected_words = {
        "missing": "missing.png not found",
        "corrupt": "corrupt.png",
        "truncated": "truncated.png",
        "credited": "'Reproduced from'",
        "escape": "outside the article folder",
    }
    for figure_id, words in expected_words.items():
        assert by_figure.loc[figure_id, "status"] == "rejected"
        assert words in by_figure.loc[figure_id, "reason"]
    assert "cannot decode" in by_figure.loc["corrupt", "reason"]
    no_doi_figure = figures[figures["article_id"] == "d-no-doi"].iloc[0]
    assert no_doi_figure["status"] == "rejected" and "article rejected" in no_doi_figure["reason"]


def test_metrics_count_rows(built_source: Path) -> None:
    articles, figures = _ingest(built_source)
    assert summarise_ingest(articles, figures) == {
        "articles_total": 4.0,
        "articles_accepted": 1.0,
        "figures_total": 8.0,
        "figures_kept": 2.0,
        "figures_rejected": 6.0,
    }


def test_unknown_or_missing_source_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown ingest source kind 'ftp'"):
        prepare_source(_params("ftp", tmp_path))
    with pytest.raises(FileNotFoundError):
        prepare_source(_params("jats_folder", tmp_path / "absent"))


@pytest.fixture(scope="module")
def external_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    if not EXTERNAL_ARTICLES.is_dir():
        pytest.skip("shared/external/articles is not present")
    return _ingest(EXTERNAL_ARTICLES)


def test_external_article_decisions(external_tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    articles, _ = external_tables
    by_id = articles.set_index("article_id")
    assert by_id.loc["elife-46472-v3", "status"] == "rejected"
    assert "CC0 1.0" in by_id.loc["elife-46472-v3", "reason"]
    plos = by_id.loc["plosone-0093988"]
    assert plos["status"] == "accepted" and plos["licence_name"] == "CC BY 4.0"
    accepted = sorted(by_id.index[by_id["status"] == "accepted"])
    assert accepted == [
        "elife-30274-v1", "elife-43154-v2", "elife-52882-v2", "ijm-00202", "plosone-0093988", "plosone-0178565",
    ]  # fmt: skip
    assert "no JATS XML" in by_id.loc["natcommun-s41467-018-06211-3", "reason"]


def test_external_figure_decisions(external_tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    _, figures = external_tables
    by_key = figures.set_index(["article_id", "figure_id"])
    assert "'adapted from'" in by_key.loc[("plosone-0093988", "pone-0093988-g001"), "reason"]
    assert "sub-article" in by_key.loc[("elife-43154-v2", "respfig1"), "reason"]
    ijm = figures[figures["article_id"] == "ijm-00202"]
    assert len(ijm) == 6 and (ijm["status"] == "kept").all()  # "Source: Authors' calculations" is own work
    elife = figures[figures["article_id"] == "elife-30274-v1"]
    assert len(elife) == 5 and (elife["status"] == "kept").all()  # figure supplements count
    assert (figures[figures["article_id"] == "elife-46472-v3"]["status"] == "rejected").all()


def test_external_accounting_and_metadata_chain(external_tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    _, figures = external_tables
    assert set(figures["status"]) == {"kept", "rejected"}
    rejected = figures[figures["status"] == "rejected"]
    assert rejected["reason"].str.len().gt(0).all()
    kept = figures[figures["status"] == "kept"]
    assert len(kept) == 33 and kept["reason"].isna().all()
    assert kept["image_path"].map(lambda path: Path(path).is_file()).all()
    assert (kept["url"] == "https://doi.org/" + kept["doi"]).all()
    assert (kept["licence_name"] == "CC BY 4.0").all()
    assert kept["licence_url"].str.startswith("http://creativecommons.org/licenses/by/4.0").all()
    assert figures["figure_uid"].is_unique


def test_embedded_sample_is_written_once_and_decided_as_its_manifest_says(tmp_path: Path) -> None:
    sample = pytest.importorskip("sciir.sample")
    if not hasattr(sample, "write_embedded_sample"):
        pytest.skip("sciir.sample.write_embedded_sample is not available yet")
    folder = tmp_path / "embedded"
    params = _params("embedded", folder)
    assert prepare_source(params) == str(folder)
    manifest_path = folder / "MANIFEST.json"
    first_write = manifest_path.stat().st_mtime_ns
    prepare_source(params)
    assert manifest_path.stat().st_mtime_ns == first_write  # same seed: not regenerated
    # A sample drawn by an older version of the generator (same seed) is drawn again.
    stale = json.loads(manifest_path.read_text(encoding="utf-8")) | {"version": 1}
    manifest_path.write_text(json.dumps(stale), encoding="utf-8")
    prepare_source(params)
    assert json.loads(manifest_path.read_text(encoding="utf-8"))["version"] != 1

    articles, figures = ingest_articles(str(folder), params)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    expected_articles = {article["article_id"]: article["expected"] for article in manifest["articles"]}
    decided = articles["status"].map({"accepted": "kept", "rejected": "rejected"})
    assert dict(zip(articles["article_id"], decided, strict=True)) == expected_articles
    # too_small is curate's rule; every other planted fault must be caught here.
    expected_figures = {
        (figure["article_id"], figure["figure_id"]): "rejected"
        if figure["reason_kind"] in {"licence", "third_party", "corrupt_image"}
        else "kept"
        for figure in manifest["figures"]
    }
    ours = dict(
        zip(zip(figures["article_id"], figures["figure_id"], strict=True), figures["status"], strict=True)
    )
    assert ours == expected_figures
