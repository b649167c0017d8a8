"""Parse a JATS XML article into typed records: metadata, licence statements, methods text, figures.

Only the parsing lives here; licence decisions are in ``sciir.figures.licence`` and the ingest node turns
these records into table rows. Articles come from anywhere, so parsing is hardened: the file is read
up to a size bound, no DTD or external entity is ever loaded, nothing is fetched from the network,
and an article that declares an external entity is refused.
"""

from __future__ import annotations

import copy
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
# A URL written in licence prose; creativecommons.org links are often written without a scheme.
_URL_IN_TEXT = re.compile(r"(?:https?://|(?:www\.)?creativecommons\.org/)[^\s<>\"')]+[^\s<>\"').,;:]")
# Containers whose figures belong to another document (peer review, author response).
_FOREIGN_CONTAINERS = ("sub-article", "response")
# Text inside these is not running methods prose.
_NON_PROSE = {"fig", "fig-group", "table-wrap", "caption", "disp-formula", "supplementary-material"}


# Large PMC articles are a few MB; anything far beyond is not an article.
MAX_XML_BYTES = 64 * 1024 * 1024


class MalformedArticleError(ValueError):
    """The XML file cannot be used (unreadable, too large, not well-formed, declaring external
    entities, not a JATS article); the message names the file and what is wrong."""


class LicenceStatement(BaseModel):
    """What a ``<permissions>`` block says about its licence, before any decision."""

    urls: list[str]
    text: str

    @property
    def url(self) -> str | None:
        """The first licence URL given."""
        return self.urls[0] if self.urls else None


class JatsFigure(BaseModel):
    """One ``<fig>`` element: where it is, what it says, where its image is."""

    figure_id: str
    label: str
    caption: str
    credit: str
    licence: LicenceStatement | None
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
    authors: list[str]
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


def _hardened_parser() -> etree.XMLParser:
    """A parser that loads no DTD, expands no entity, fetches nothing and keeps libxml2's size limits."""
    return etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False, huge_tree=False
    )


def _read_bounded(xml_path: Path, max_bytes: int) -> bytes:
    """The file's bytes, refusing anything that is not a regular file or is larger than ``max_bytes``."""
    if not xml_path.is_file():
        raise MalformedArticleError(f"{xml_path}: not a regular file")
    try:
        with xml_path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise MalformedArticleError(f"{xml_path}: cannot read: {error}") from error
    if len(data) > max_bytes:
        raise MalformedArticleError(f"{xml_path}: larger than the {max_bytes}-byte limit for an article")
    return data


def _parse_error(xml_path: Path, error: etree.XMLSyntaxError) -> MalformedArticleError:
    """The parser's complaint, with a hint when the bytes are not in the declared encoding."""
    hint = ""
    if "encoding" in str(error).lower() or "utf-8" in str(error).lower():
        hint = " (the text is not in the encoding the file declares, or UTF-8 when it declares none)"
    return MalformedArticleError(f"{xml_path}: cannot parse XML: {error}{hint}")


def _refuse_external_entities(xml_path: Path, root: etree._Element) -> None:
    """Refuse a DOCTYPE that declares external entities: an article never needs one; an attack does."""
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is None:
        return
    external = [f"{entity.name} -> {entity.system_url}" for entity in dtd.iterentities() if entity.system_url]
    if external:
        raise MalformedArticleError(
            f"{xml_path}: declares external entities ({'; '.join(external)}); they are never read"
        )


def _read_tree(xml_path: Path, max_bytes: int) -> etree._Element:
    """The root ``<article>`` of a bounded, hardened parse; MalformedArticleError names the file."""
    data = _read_bounded(xml_path, max_bytes)
    try:
        root = etree.fromstring(data, _hardened_parser(), base_url=str(xml_path))
    except etree.XMLSyntaxError as error:
        raise _parse_error(xml_path, error) from error
    _refuse_external_entities(xml_path, root)
    if etree.QName(root).localname != "article":
        raise MalformedArticleError(f"{xml_path}: root element is <{root.tag}>, not a JATS <article>")
    return root


def _article_doi(article_meta: etree._Element | None) -> str | None:
    """The article's own DOI (sub-articles carry their own DOIs, so look only in front matter)."""
    if article_meta is None:
        return None
    for article_id in article_meta.findall("article-id"):
        if article_id.get("pub-id-type") == "doi" and _text(article_id):
            return _text(article_id)
    return None


def _licence_prose(licence: etree._Element) -> str:
    """The licence paragraphs of one ``<license>`` (its whole text when it has no paragraph elements)."""
    paragraphs = [_text(paragraph) for paragraph in licence.iter("license-p", "p")]
    return " ".join(paragraph for paragraph in paragraphs if paragraph) or _text(licence)


def _licence_urls(licence: etree._Element) -> list[str]:
    """Licence URLs of one ``<license>`` in every usual markup, in order of authority."""
    candidates = [licence.get(XLINK_HREF)]
    candidates += [_text(reference) for reference in licence.iter(ALI_LICENSE_REF)]
    # PLOS variant: the URL is only in a link inside the licence paragraph.
    candidates += [link.get(XLINK_HREF) for link in licence.iter("ext-link", "uri")]
    candidates += _URL_IN_TEXT.findall(_licence_prose(licence))
    return [candidate.strip() for candidate in candidates if candidate and candidate.strip()]


def _licence_statement(owner: etree._Element | None) -> LicenceStatement | None:
    """The licence URLs and prose of the ``<permissions>`` directly under ``owner``; None without a licence."""
    licences = owner.findall("permissions/license") if owner is not None else []
    # ali:license_ref may also stand directly in <permissions>, outside any <license>.
    loose = owner.findall(f"permissions/{ALI_LICENSE_REF}") if owner is not None else []
    if not licences and not loose:
        return None
    urls = [url for licence in licences for url in _licence_urls(licence)]
    urls += [_text(reference) for reference in loose if _text(reference)]
    return LicenceStatement(
        urls=list(dict.fromkeys(urls)), text=" ".join(_licence_prose(licence) for licence in licences).strip()
    )


def _person_name(name: etree._Element) -> str:
    """ "Given Surname Suffix"; "Surname Given" for a name written eastern style."""
    given, surname = _text(name.find("given-names")), _text(name.find("surname"))
    parts = [surname, given] if name.get("name-style") == "eastern" else [given, surname]
    return " ".join(part for part in [*parts, _text(name.find("suffix"))] if part)


def _collaboration_name(collab: etree._Element) -> str:
    """A group author's own name, without the members some publishers nest inside it."""
    own = copy.deepcopy(collab)
    for members in own.findall(".//contrib-group"):
        members.getparent().remove(members)
    return _text(own)


def _contributor_name(contrib: etree._Element) -> str:
    """The name of one ``<contrib>`` in whichever markup it uses ('' when it has none)."""
    name = contrib.find("name")
    if name is None:
        name = contrib.find("name-alternatives/name")
    if name is not None:
        return _person_name(name)
    if (string_name := contrib.find("string-name")) is not None:
        return _text(string_name)
    if (collab := contrib.find("collab")) is not None:
        return _collaboration_name(collab)
    return ""


def _authors(article_meta: etree._Element | None) -> list[str]:
    """The article's authors in order (editors and reviewers left out; a contrib without a type counts)."""
    if article_meta is None:
        return []
    contribs = article_meta.findall("contrib-group/contrib")
    names = [
        _contributor_name(contrib)
        for contrib in contribs
        if contrib.get("contrib-type", "author") == "author"
    ]
    return [name for name in names if name]


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


def _caption(fig: etree._Element) -> str:
    """The figure's caption; a figure of a ``<fig-group>`` without its own takes the group's."""
    caption = fig.find("caption")
    parent = fig.getparent()
    if caption is None and parent is not None and parent.tag == "fig-group":
        caption = parent.find("caption")
    return _block_text(caption)


def _figure(fig: etree._Element, position: int) -> JatsFigure:
    """One ``<fig>`` as a record; credit lines are its ``<attrib>`` and ``<permissions>`` text."""
    graphic = fig.find(".//graphic")
    credit_parts = [_text(element) for element in fig.iter("attrib", "permissions")]
    return JatsFigure(
        figure_id=fig.get("id") or f"fig-position-{position}",
        label=_text(fig.find("label")),
        caption=_caption(fig),
        credit=" ".join(part for part in credit_parts if part),
        licence=_licence_statement(fig),
        graphic_href=graphic.get(XLINK_HREF) if graphic is not None else None,
        foreign_container=_foreign_container(fig),
    )


def parse_article(xml_path: Path, max_bytes: int = MAX_XML_BYTES) -> JatsArticle:
    """Read one JATS file; raises MalformedArticleError naming the file and what is wrong with it."""
    root = _read_tree(xml_path, max_bytes)
    article_meta = root.find("front/article-meta")
    journal_meta = root.find("front/journal-meta")
    return JatsArticle(
        doi=_article_doi(article_meta),
        title=_text(article_meta.find("title-group/article-title")) if article_meta is not None else "",
        journal=_text(journal_meta.find(".//journal-title")) if journal_meta is not None else "",
        authors=_authors(article_meta),
        licence=_licence_statement(article_meta),
        methods_text=_methods_text(root),
        figures=[_figure(fig, position) for position, fig in enumerate(root.iter("fig"), start=1)],
    )
