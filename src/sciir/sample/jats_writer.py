"""Writes a sample article as JATS 1.2 (Journal Archiving and Interchange) XML."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

XLINK_NS = "http://www.w3.org/1999/xlink"
ALI_NS = "http://www.niso.org/schemas/ali/1.0/"
JATS_DOCTYPE = (
    '<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.2 20190208//EN"'
    ' "JATS-archivearticle1.dtd">'
)
JOURNAL_TITLE = "SciIR Embedded Sample"


@dataclass(frozen=True)
class Licence:
    """An article licence as JATS states it."""

    name: str
    url: str
    statement: str


CC_BY = Licence(
    "CC BY 4.0",
    "https://creativecommons.org/licenses/by/4.0/",
    "This is an open access article distributed under the terms of the Creative Commons Attribution 4.0 "
    "International License (CC BY 4.0), which permits unrestricted use, distribution and reproduction in "
    "any medium, provided the original work is properly cited.",
)
CC_BY_NC = Licence(
    "CC BY-NC 4.0",
    "https://creativecommons.org/licenses/by-nc/4.0/",
    "This is an open access article distributed under the terms of the Creative Commons "
    "Attribution-NonCommercial 4.0 International License (CC BY-NC 4.0), which permits use, distribution "
    "and reproduction for non-commercial purposes only, provided the original work is properly cited.",
)


@dataclass(frozen=True)
class FigureEntry:
    """One ``<fig>``: its id, label, caption and the image file beside the XML."""

    figure_id: str
    label: str
    caption_title: str
    caption: str
    href: str


@dataclass(frozen=True)
class ArticleDocument:
    """Everything a sample article states."""

    doi: str
    title: str
    licence: Licence
    abstract: str
    introduction: str
    methods: str
    figures: tuple[FigureEntry, ...]


def _child(parent: etree._Element, tag: str, text: str | None = None, **attributes: str) -> etree._Element:
    """Append a sub-element with optional text and attributes."""
    element = etree.SubElement(parent, tag, attributes)
    if text is not None:
        element.text = text
    return element


def _permissions(parent: etree._Element, licence: Licence) -> None:
    """``<permissions>`` with the licence link in both the JATS and the NISO ALI forms."""
    permissions = _child(parent, "permissions")
    licence_element = _child(
        permissions, "license", **{"license-type": "open-access", f"{{{XLINK_NS}}}href": licence.url}
    )
    _child(licence_element, f"{{{ALI_NS}}}license_ref", licence.url)
    _child(licence_element, "license-p", licence.statement)


def _front(root: etree._Element, document: ArticleDocument) -> None:
    """``<front>``: journal and article metadata."""
    front = _child(root, "front")
    journal = _child(front, "journal-meta")
    _child(journal, "journal-id", "sciir-sample", **{"journal-id-type": "publisher-id"})
    _child(_child(journal, "journal-title-group"), "journal-title", JOURNAL_TITLE)
    _child(_child(journal, "publisher"), "publisher-name", "SciIR project")
    meta = _child(front, "article-meta")
    _child(meta, "article-id", document.doi, **{"pub-id-type": "doi"})
    _child(_child(meta, "title-group"), "article-title", document.title)
    contributor = _child(_child(meta, "contrib-group"), "contrib", **{"contrib-type": "author"})
    _child(contributor, "collab", "SciIR sample generator")
    _permissions(meta, document.licence)
    _child(_child(meta, "abstract"), "p", document.abstract)


def _figure(parent: etree._Element, entry: FigureEntry) -> None:
    """One ``<fig>`` with label, caption and graphic."""
    fig = _child(parent, "fig", id=entry.figure_id)
    _child(fig, "label", entry.label)
    caption = _child(fig, "caption")
    _child(caption, "title", entry.caption_title)
    _child(caption, "p", entry.caption)
    _child(fig, "graphic", **{f"{{{XLINK_NS}}}href": entry.href, "mimetype": "image", "mime-subtype": "png"})


def _body(root: etree._Element, document: ArticleDocument) -> None:
    """``<body>``: introduction, methods and a results section holding the figures."""
    body = _child(root, "body")
    introduction = _child(body, "sec", id="sec1", **{"sec-type": "intro"})
    _child(introduction, "title", "Introduction")
    _child(introduction, "p", document.introduction)
    methods = _child(body, "sec", id="sec2", **{"sec-type": "methods"})
    _child(methods, "title", "Methods")
    _child(methods, "p", document.methods)
    results = _child(body, "sec", id="sec3", **{"sec-type": "results"})
    _child(results, "title", "Results")
    _child(results, "p", f"The article presents {len(document.figures)} figures.")
    for entry in document.figures:
        _figure(results, entry)


def article_xml(document: ArticleDocument) -> bytes:
    """The article as UTF-8 JATS XML bytes (deterministic: no dates, fixed attribute order)."""
    root = etree.Element(
        "article",
        {
            "article-type": "research-article",
            "dtd-version": "1.2",
            "{http://www.w3.org/XML/1998/namespace}lang": "en",
        },
        nsmap={"xlink": XLINK_NS, "ali": ALI_NS},
    )
    _front(root, document)
    _body(root, document)
    return etree.tostring(
        root, xml_declaration=True, encoding="UTF-8", pretty_print=True, doctype=JATS_DOCTYPE
    )
