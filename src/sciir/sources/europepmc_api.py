"""The parts of the Europe PMC REST API the download uses: the search query, its pages, figure links.

- ``GET {base}/search?query=...&resultType=core&format=json&pageSize=N&cursorMark=C``: a page of
  records under ``resultList.result`` (``pmcid``, ``doi``, ``title``, ``journalInfo.journal.title``,
  ``license`` such as "cc by", ``isOpenAccess`` "Y"/"N") and ``nextCursorMark`` for the next page. The
  end is a page without records, without ``nextCursorMark``, or whose ``nextCursorMark`` is the cursor
  sent (Solr's convention). A refused request can come back as HTTP 200 with ``errCode``/``errMsg``.
- ``GET {base}/{PMCID}/fullTextXML``: the article's JATS XML (open-access subset only; 404 otherwise).
- Figures: ``https://europepmc.org/articles/{PMCID}/bin/{name}.jpg``, where ``name`` is the
  ``<graphic xlink:href>`` of the figure without a suffix (``EUROPEPMC_FIGURE_URL``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from sciir.figures.jats_reader import JatsArticle
from sciir.sources.params import EuropePMCParams

FIRST_CURSOR = "*"
PMCID = re.compile(r"^PMC\d+$")
# A graphic href that can name a file in the article folder: no path, no URL, no leading dot.
_PLAIN_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_IMAGE_SUFFIXES = (".tif", ".tiff", ".png", ".jpg", ".jpeg", ".gif", ".eps")


class EuropePMCError(RuntimeError):
    """Europe PMC refused or garbled a search; the message says which search and what came back."""


class SearchRecord(BaseModel):
    """What the download needs of one search result."""

    pmcid: str | None = None
    doi: str | None = None
    title: str = ""
    journal: str = ""
    licence: str | None = None  # as Europe PMC writes it: "cc by", "cc by-nc", "cc0" ...
    open_access: bool = False

    @property
    def key(self) -> str:
        """How the outcome log names this record (a record without a PMCID by its DOI or title)."""
        return self.pmcid or (f"doi:{self.doi}" if self.doi else f"title:{self.title}")


class SearchPage(BaseModel):
    """One page of search results and the cursor that follows it."""

    cursor: str
    next_cursor: str | None
    hit_count: int
    records: list[SearchRecord]

    @property
    def is_last(self) -> bool:
        return not self.records or self.next_cursor is None or self.next_cursor == self.cursor


def _any_of(field: str, values: list[str]) -> str:
    """``FIELD:"a"`` or ``(FIELD:"a" OR FIELD:"b")``."""
    terms = [f'{field}:"{value}"' for value in values]
    return terms[0] if len(terms) == 1 else f"({' OR '.join(terms)})"


def search_query(params: EuropePMCParams) -> str:
    """The query sent: the user's query ANDed with the open-access, licence and journal filters."""
    clauses = [f"({params.query.strip()})"] if params.query.strip() else []
    if params.open_access:
        clauses.append("OPEN_ACCESS:Y")
    if params.licences:
        clauses.append(_any_of("LICENSE", params.licences))
    if params.journals:
        clauses.append(_any_of("JOURNAL", params.journals))
    if not clauses:
        raise ValueError(
            "ingest.source.europepmc: give a query or at least one filter; an empty search has no end"
        )
    return " AND ".join(clauses)


def search_params(query: str, cursor: str, page_size: int) -> dict[str, str]:
    """The query-string parameters of one search request."""
    return {
        "query": query,
        "resultType": "core",
        "format": "json",
        "pageSize": str(page_size),
        "cursorMark": cursor,
    }


def _text(value: Any) -> str | None:
    return (value.strip() or None) if isinstance(value, str) else None


def _journal_title(result: Mapping[str, Any]) -> str:
    info = result.get("journalInfo")
    journal = info.get("journal") if isinstance(info, Mapping) else None
    title = journal.get("title") if isinstance(journal, Mapping) else None
    return _text(title) or _text(result.get("journalTitle")) or ""


def _record(result: Any, query: str) -> SearchRecord:
    if not isinstance(result, Mapping):
        raise EuropePMCError(f"Europe PMC search {query!r}: a result is not a JSON object: {result!r:.200}")
    return SearchRecord(
        pmcid=_text(result.get("pmcid")),
        doi=_text(result.get("doi")),
        title=_text(result.get("title")) or "",
        journal=_journal_title(result),
        licence=_text(result.get("license")),
        open_access=result.get("isOpenAccess") == "Y",
    )


def parse_search_page(body: Mapping[str, Any], query: str, cursor: str) -> SearchPage:
    """A search reply as a page; :class:`EuropePMCError` for an error envelope or a reply without results."""
    if "errCode" in body or "errMsg" in body:
        raise EuropePMCError(
            f"Europe PMC refused the search {query!r}: {body.get('errMsg')} (errCode {body.get('errCode')})"
        )
    result_list = body.get("resultList")
    results = result_list.get("result") if isinstance(result_list, Mapping) else None
    if not isinstance(results, list):
        raise EuropePMCError(
            f"Europe PMC search {query!r} replied without resultList.result: {str(body):.300}"
        )
    next_cursor = body.get("nextCursorMark")
    hit_count = body.get("hitCount")
    return SearchPage(
        cursor=cursor,
        next_cursor=next_cursor if isinstance(next_cursor, str) and next_cursor else None,
        hit_count=hit_count if isinstance(hit_count, int) else 0,
        records=[_record(result, query) for result in results],
    )


def _normalised_licence(name: str) -> str:
    return " ".join(name.lower().split())


def record_problem(record: SearchRecord, params: EuropePMCParams) -> str | None:
    """Why a search record is not downloaded (no full text, not open access, another licence); None if it is.

    The search already filters on licence, but a phrase filter can match more than the licence named
    ("cc by" in "cc by-nc"), so each record's own licence is checked again.
    """
    if record.pmcid is None or not PMCID.match(record.pmcid):
        return f"no PMCID in the search record ({record.pmcid!r}), so no full text to download"
    if params.open_access and not record.open_access:
        return "not open access (isOpenAccess is not Y)"
    accepted = {_normalised_licence(name) for name in params.licences}
    if accepted and _normalised_licence(record.licence or "") not in accepted:
        return f"licence {record.licence!r} is not one of {params.licences}"
    return None


def figure_stem(href: str) -> str | None:
    """The figure's file name without an image suffix, as Europe PMC names it; None for an href that is
    not a plain file name (a URL or a path is never followed: ingest reports it)."""
    if not _PLAIN_FILE_NAME.match(href):
        return None
    for suffix in _IMAGE_SUFFIXES:
        if href.lower().endswith(suffix) and len(href) > len(suffix):
            return href[: -len(suffix)]
    return href


def figure_downloads(article: JatsArticle, pmcid: str, figure_url: str) -> Iterator[tuple[str, str]]:
    """(local file name, URL) of each main figure's image, once each; sub-article figures are left out,
    as ingest does not use them."""
    seen = set()
    for figure in article.figures:
        if not figure.is_main_figure or not figure.graphic_href:
            continue
        stem = figure_stem(figure.graphic_href)
        if stem is None:
            continue
        url = figure_url.format(pmcid=pmcid, name=stem)
        name = urlsplit(url).path.rsplit("/", 1)[-1]
        if name not in seen and _PLAIN_FILE_NAME.match(name):
            seen.add(name)
            yield name, url
