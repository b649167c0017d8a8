"""The JATS writer: namespaces, DOI, licence, sections and figures."""

from __future__ import annotations

from lxml import etree

from sciir.sample.jats_writer import (
    ALI_NS,
    CC_BY,
    CC_BY_NC,
    XLINK_NS,
    ArticleDocument,
    FigureEntry,
    article_xml,
)

HREF = f"{{{XLINK_NS}}}href"


def _document(licence=CC_BY) -> ArticleDocument:
    figure = FigureEntry(
        "fig1", "Figure 1", "Caffeine.", "Two-dimensional structure of the Caffeine molecule.", "fig1.png"
    )
    return ArticleDocument(
        doi="10.5555/sciir.sample.001",
        title="Figures on Caffeine",
        licence=licence,
        abstract="Abstract.",
        introduction="Introduction.",
        methods="Cell lysis leads to Elution.",
        figures=(figure,),
    )


def test_article_carries_doi_licence_methods_and_figures() -> None:
    root = etree.fromstring(article_xml(_document()))
    assert root.get("dtd-version") == "1.2"
    assert root.findtext("front/article-meta/article-id[@pub-id-type='doi']") == "10.5555/sciir.sample.001"
    assert root.findtext("front/article-meta/title-group/article-title") == "Figures on Caffeine"
    licence = root.find("front/article-meta/permissions/license")
    assert licence.get("license-type") == "open-access"
    assert licence.get(HREF) == "https://creativecommons.org/licenses/by/4.0/"
    assert licence.findtext(f"{{{ALI_NS}}}license_ref") == "https://creativecommons.org/licenses/by/4.0/"
    assert "CC BY 4.0" in licence.findtext("license-p")
    methods = root.find("body/sec[@sec-type='methods']")
    assert methods.findtext("title") == "Methods" and methods.findtext("p") == "Cell lysis leads to Elution."
    fig = root.find(".//fig[@id='fig1']")
    assert fig.findtext("label") == "Figure 1"
    assert fig.findtext("caption/title") == "Caffeine."
    assert fig.findtext("caption/p").startswith("Two-dimensional structure")
    assert fig.find("graphic").get(HREF) == "fig1.png"


def test_non_commercial_licence_is_stated_as_such() -> None:
    licence = etree.fromstring(article_xml(_document(CC_BY_NC))).find(".//permissions/license")
    assert licence.get(HREF) == "https://creativecommons.org/licenses/by-nc/4.0/"
    assert "NonCommercial" in licence.findtext("license-p")


def test_output_is_deterministic_and_declares_the_jats_doctype() -> None:
    first, second = article_xml(_document()), article_xml(_document())
    assert first == second
    assert b"JATS (Z39.96) Journal Archiving and Interchange DTD v1.2" in first
