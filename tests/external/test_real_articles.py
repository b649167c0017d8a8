"""The licence SOP and the metadata chain on real published articles (SciIR paper, appendix A.2-A.4).

Data: ../shared/external/articles/ beside the checkout (its README.md says what each folder tests:
licence markup variants, a CC0 article, a third-party figure, own-work credit lines, an author
response image). Skipped when absent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from lxml import etree

from sciir.figures.jats_reader import XLINK_HREF
from sciir.pipelines.ingest.nodes import ingest_articles, prepare_source

REPO = Path(__file__).resolve().parents[2]
ARTICLES = REPO / ".." / "shared" / "external" / "articles"
CC_BY_4 = "http://creativecommons.org/licenses/by/4.0/"

pytestmark = pytest.mark.skipif(not ARTICLES.is_dir(), reason="../shared/external/articles not present")


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """``articles`` and ``figures`` from the ingest node over the real articles, shipped parameters."""
    text = (REPO / "conf" / "base" / "parameters_ingest.yml").read_text(encoding="utf-8")
    params: dict[str, Any] = yaml.safe_load(text)["ingest"]
    params["source"] = {"kind": "jats_folder", "path": str(ARTICLES)}
    return ingest_articles(prepare_source(params), params)


@pytest.fixture(scope="module")
def articles(tables: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    return tables[0].set_index("article_id")


@pytest.fixture(scope="module")
def figures(tables: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    return tables[1].set_index(["article_id", "figure_id"])


def _licence_element(article_id: str) -> etree._Element:
    """The article's ``<license>`` as published, read here to show which markup variant it uses."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    root = etree.parse(str(ARTICLES / article_id / "main.jats.xml"), parser).getroot()
    return root.find("front/article-meta/permissions/license")


def test_cc0_elife_article_and_all_its_figures_are_rejected(
    articles: pd.DataFrame, figures: pd.DataFrame
) -> None:
    cc0 = articles.loc["elife-46472-v3"]
    assert cc0["status"] == "rejected" and not cc0["licence_ok"]
    assert cc0["licence_name"] == "CC0 1.0"
    assert cc0["reason"].startswith(str(ARTICLES / "elife-46472-v3" / "main.jats.xml"))
    assert (
        "licence CC0 1.0 (http://creativecommons.org/publicdomain/zero/1.0/) is not accepted" in cc0["reason"]
    )
    its_figures = figures.loc["elife-46472-v3"]
    assert len(its_figures) == 8
    assert (its_figures["status"] == "rejected").all()
    assert its_figures["reason"].str.contains("article rejected: licence CC0 1.0").all()


@pytest.mark.parametrize(
    ("article_id", "href_on_license"),
    [("plosone-0093988", False), ("plosone-0178565", True)],
    ids=["ext-link-in-license-p-only", "license-href"],
)
def test_both_plos_licence_markups_are_accepted_as_cc_by_4(
    articles: pd.DataFrame, article_id: str, href_on_license: bool
) -> None:
    licence = _licence_element(article_id)
    assert (licence.get(XLINK_HREF) == CC_BY_4) is href_on_license  # the variant, as published
    row = articles.loc[article_id]
    assert row["status"] == "accepted" and row["licence_ok"]
    assert (row["licence_name"], row["licence_url"]) == ("CC BY 4.0", CC_BY_4)


def test_plos_adapted_from_figure_is_excluded_with_the_phrase(figures: pd.DataFrame) -> None:
    plos = figures.loc["plosone-0093988"]
    adapted = plos.loc["pone-0093988-g001"]
    assert "adapted from [17]" in adapted["caption"]
    assert adapted["status"] == "rejected"
    assert "third-party material: the caption says 'adapted from'" in adapted["reason"]
    assert (plos.drop(index="pone-0093988-g001")["status"] == "kept").all()


def test_ijm_own_work_source_lines_are_kept(figures: pd.DataFrame) -> None:
    ijm = figures.loc["ijm-00202"]
    assert len(ijm) == 6 and (ijm["status"] == "kept").all()
    own_work = ijm[ijm["caption"].str.contains(r"Source\s*: Authors\u2019 (?:calculations|estimations)")]
    assert len(own_work) >= 4  # the credit lines are really there, and did not exclude their figures


def test_elife_author_response_image_is_not_a_main_figure(figures: pd.DataFrame) -> None:
    elife = figures.loc["elife-43154-v2"]
    response = elife.loc["respfig1"]
    assert response["status"] == "rejected"
    assert 'not a main figure: inside <sub-article article-type="reply">' in response["reason"]
    assert elife.loc[["fig1", "fig2"], "status"].tolist() == ["kept", "kept"]


def test_every_figure_is_kept_or_rejected_with_a_reason(
    articles: pd.DataFrame, figures: pd.DataFrame
) -> None:
    assert set(figures["status"]) == {"kept", "rejected"}
    rejected = figures[figures["status"] == "rejected"]
    assert rejected["reason"].str.contains(str(ARTICLES)).all()  # each names its article's file
    assert figures["figure_uid"].is_unique
    # natcommun ships article_meta.json, not JATS: one row saying so, no figures.
    assert "no JATS XML file" in articles.loc["natcommun-s41467-018-06211-3", "reason"]
    # Every main figure of an accepted article is kept (all have captions and their image files).
    accepted = articles.index[articles["status"] == "accepted"]
    kept = figures[figures["status"] == "kept"]
    assert len(kept) == len(figures.loc[list(accepted)]) - 2  # less the response image and Fig 1 adapted


def test_kept_figures_carry_the_metadata_chain(articles: pd.DataFrame, figures: pd.DataFrame) -> None:
    kept = figures[figures["status"] == "kept"].reset_index()
    assert (kept["url"] == "https://doi.org/" + kept["doi"]).all()
    assert kept["label"].str.len().gt(0).all() and kept["figure_id"].str.len().gt(0).all()
    assert (kept["licence_name"] == "CC BY 4.0").all() and (kept["licence_url"] == CC_BY_4).all()
    assert kept["image_path"].map(lambda path: Path(path).is_file()).all()
    assert kept["authors"].map(json.loads).map(len).gt(0).all()
    assert (kept["authors"] == kept["article_id"].map(articles["authors"])).all()
    by_article = kept.drop_duplicates("article_id").set_index("article_id")["authors"].map(json.loads)
    assert by_article["ijm-00202"] == ["Marisa Bucheli", "Cecilia Olivieri"]
    # A group author by its name, without the members nested inside it; "Jr" kept as a suffix.
    elife = by_article["elife-30274-v1"]
    assert elife[0] == "L Michelle Lewis" and elife[-1] == "Reproducibility Project: Cancer Biology"
    assert "C Conover Talbot Jr" in elife
    assert articles.loc["elife-30274-v1", "doi"] == "10.7554/eLife.30274"
