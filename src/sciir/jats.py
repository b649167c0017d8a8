"""Parse a JATS XML article into typed records: metadata, licence statement, methods text, figures.

Only the parsing lives here; licence decisions are in ``sciir.licence`` and the ingest node turns
these records into table rows.
"""

from __future__ import annotations

import re
from pathlib import Path

from lxml import etree
from pydantic import BaseModel

XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
ALI_LICENSE_REF = "{http://www.niso.org/schemas/ali/1.0/}license_ref"

# "Methods", "Materials and methods", "3. Data and methods", "Methods and materials".
_METHODS_TITLE = re.compile(
    r"^(?:[\dIVX]+[.)]?\s*)*(?:(?:materials?|data|materials?\s+and\s+data)\s+and\s+)?methods?"
    r"(?:\s+and\s+materials?)?$",
    re.IGNORECASE,
)
_URL_IN_TEXT = re.compile(r"https?://\S+")
# Containers whose figures belong to another document (peer review, author response).
_FOREIGN_CONTAINERS = ("sub-article", "response")
# Text inside these is not running methods prose.
_NON_PROSE = {"fig", "fig-group", "table-wrap", "caption", "disp-formula", "supplementary-material"}


class MalformedArticleError(ValueError):
    """The XML file could not be parsed; the message names the file and the parser's complaint."""


class LicenceStatement(BaseModel):
    """What the article says about its licence, before any decision."""

    url: str | None
    text: str


class JatsFigure(BaseModel):
    """One ``<fig>`` element: where it is, what it says, where its image is."""

    figure_id: str
    label: str
    caption: str
    credit: str
    graphic_href: str | None
    foreign_container: str | None

    @property
    def is_main_figure(self) -> bool:
        """A figure of the article itself, not of a review or an author response."""
        return self.foreign_container is None


class JatsArticle(BaseModel):
    """The facts ingest needs from one JATS article."""

    doi: str | None
    title: str
    journal: str
    licence: LicenceStatement | None
    methods_text: str
    figures: list[JatsFigure]


def _text(element: etree._Element | None) -> str:
    """All text under an element with whitespace collapsed ('' for a missing element)."""
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def _block_text(element: etree._Element | None) -> str:
    """Text of an element whose children are blocks (a caption's title and paragraphs), space-separated."""
    if element is None:
        return ""
    blocks = [_text(child) for child in element] or [_text(element)]
    return " ".join(block for block in blocks if block)


def _read_tree(xml_path: Path) -> etree._Element:
    """Parse without fetching DTDs or expanding external entities."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    try:
        return etree.parse(str(xml_path), parser).getroot()
    except (etree.XMLSyntaxError, OSError) as error:
        raise MalformedArticleError(f"{xml_path}: cannot parse XML: {error}") from error


def _article_doi(article_meta: etree._Element | None) -> str | None:
    """The article's own DOI (sub-articles carry their own DOIs, so look only in front matter)."""
    if article_meta is None:
        return None
    for article_id in article_meta.findall("article-id"):
        if article_id.get("pub-id-type") == "doi" and _text(article_id):
            return _text(article_id)
    return None


def _licence_statement(article_meta: etree._Element | None) -> LicenceStatement | None:
    """The licence URL from any of the usual markups, plus the licence prose."""
    licence = article_meta.find("permissions/license") if article_meta is not None else None
    if licence is None:
        return None
    candidates = [licence.get(XLINK_HREF), _text(licence.find(ALI_LICENSE_REF))]
    # PLOS variant: the URL is only in a link inside the licence paragraph.
    candidates += [link.get(XLINK_HREF) for link in licence.iter("ext-link")]
    candidates += _URL_IN_TEXT.findall(_text(licence))
    url = next((candidate.strip() for candidate in candidates if candidate and candidate.strip()), None)
    return LicenceStatement(url=url, text=_text(licence))


def _is_methods_section(section: etree._Element) -> bool:
    """Methods by ``sec-type`` token (``materials|methods``) or by title."""
    sec_types = (section.get("sec-type") or "").lower().split("|")
    return "methods" in sec_types or bool(_METHODS_TITLE.match(_text(section.find("title"))))


def _prose(section: etree._Element) -> str:
    """Paragraph text of a section, leaving out figures, tables and formulas placed inside it."""
    paragraphs = []
    for paragraph in section.iter("p"):
        ancestors = {ancestor.tag for ancestor in paragraph.iterancestors()}
        if not ancestors & _NON_PROSE and not paragraph.xpath("ancestor::p"):
            paragraphs.append(_text(paragraph))
    return "\n\n".join(text for text in paragraphs if text)


def _methods_text(root: etree._Element) -> str:
    """Text of the outermost methods sections of the article body (empty when there is none)."""
    body = root.find("body")
    if body is None:
        return ""
    sections = [section for section in body.iter("sec") if _is_methods_section(section)]
    outermost = [
        section
        for section in sections
        if not any(ancestor in sections for ancestor in section.iterancestors("sec"))
    ]
    return "\n\n".join(_prose(section) for section in outermost).strip()


def _foreign_container(fig: etree._Element) -> str | None:
    """Describe the sub-article/response holding this figure, or None for a main figure."""
    for ancestor in fig.iterancestors(*_FOREIGN_CONTAINERS):
        kind = ancestor.get("article-type") or ancestor.get("response-type") or "unspecified"
        return f'<{ancestor.tag} article-type="{kind}">'
    return None


def _figure(fig: etree._Element, position: int) -> JatsFigure:
    """One ``<fig>`` as a record; credit lines are its ``<attrib>`` and ``<permissions>`` text."""
    graphic = fig.find(".//graphic")
    credit_parts = [_text(element) for element in fig.iter("attrib", "permissions")]
    return JatsFigure(
        figure_id=fig.get("id") or f"fig-position-{position}",
        label=_text(fig.find("label")),
        caption=_block_text(fig.find("caption")),
        credit=" ".join(part for part in credit_parts if part),
        graphic_href=graphic.get(XLINK_HREF) if graphic is not None else None,
        foreign_container=_foreign_container(fig),
    )


def parse_article(xml_path: Path) -> JatsArticle:
    """Read one JATS file; raises MalformedArticleError naming the file when it is not well-formed XML."""
    root = _read_tree(xml_path)
    article_meta = root.find("front/article-meta")
    journal_meta = root.find("front/journal-meta")
    return JatsArticle(
        doi=_article_doi(article_meta),
        title=_text(article_meta.find("title-group/article-title")) if article_meta is not None else "",
        journal=_text(journal_meta.find(".//journal-title")) if journal_meta is not None else "",
        licence=_licence_statement(article_meta),
        methods_text=_methods_text(root),
        figures=[_figure(fig, position) for position, fig in enumerate(root.iter("fig"), start=1)],
    )
