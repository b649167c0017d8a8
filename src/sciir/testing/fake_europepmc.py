"""A real Europe PMC REST server on loopback: search with cursor paging, full text XML, figure files.

It serves the response shapes of the real service (sciir.sources.europepmc_api describes them) for a
given list of articles (``sciir.testing.europepmc_articles``), from a thread per connection
(``http.server``), and logs every request. Routes:

- ``GET /europepmc/webservices/rest/search``: ``query`` (the subset of Europe PMC syntax the client
  sends, ``sciir.testing.europepmc_query``: ``AND``/``OR``, parentheses, ``OPEN_ACCESS:Y``,
  ``LICENSE:"..."``, ``JOURNAL:"..."``, ``TITLE:...`` and free words matched in titles),
  ``format=json``, ``resultType``, ``pageSize`` (over 1000: HTTP 200 with an ``errCode`` envelope, as
  the real service answers) and ``cursorMark``.
  Pages follow Solr's convention: the page after the last one is empty and hands back its own cursor.
  A phrase filter matches words in order, so ``LICENSE:"cc by"`` also matches "cc by-nc", as a
  tokenised field does; the client must check each record's licence itself.
- ``GET /europepmc/webservices/rest/{PMCID}/fullTextXML``: the article's XML (404 when unknown or not
  open access).
- ``GET /articles/{PMCID}/bin/{name}``: a figure file (404 when unknown).

Faults are scripted per path: ``faults={"/europepmc/webservices/rest/PMC1/fullTextXML": ["429", None]}``
makes the first request to that path rate limited and the second succeed.

    with FakeEuropePMC(articles_from_folder(sample_folder)) as server:
        params = {"base_url": server.base_url, "figure_url": server.figure_url, ...}
        server.requests   # what arrived, when, with which parameters and headers, and what was answered
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sciir.testing.europepmc_articles import FakeArticle
from sciir.testing.europepmc_query import UnsupportedQuery, matching
from sciir.testing.loopback import QuietHandler, ThreadedLoopbackServer

REST_PATH = "/europepmc/webservices/rest"
_CURSOR_PREFIX = "AoE"  # real cursors are opaque base64; these encode the next offset


class EuropePMCFault(StrEnum):
    """A way for the server to misbehave on one request."""

    RATE_LIMITED = "429"  # with a Retry-After header
    SERVER_ERROR = "500"
    DROP = "drop"  # close the connection without a reply
    MALFORMED_XML = "malformed_xml"  # HTTP 200 whose XML stops half way (fullTextXML)
    HANG = "hang"  # no reply until the server stops: a client killed while waiting


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the server received and answered it."""

    index: int
    received_at: float  # time.monotonic() on arrival
    path: str
    params: dict[str, str]
    headers: dict[str, str]  # names in lower case
    fault: EuropePMCFault | None
    status: int | None  # None: no reply was sent (a dropped or hung connection)


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


def _json_reply(payload: Any, status: int = 200, *headers: tuple[str, str]) -> _Reply:
    return _Reply(status, json.dumps(payload).encode(), "application/json", headers)


def _cursor(offset: int) -> str:
    return _CURSOR_PREFIX + base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(cursor: str) -> int | None:
    if cursor == "*":
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor.removeprefix(_CURSOR_PREFIX).encode()).decode()
        return int(text.removeprefix("offset:")) if text.startswith("offset:") else None
    except ValueError:
        return None


class FakeEuropePMC(ThreadedLoopbackServer):
    """The Europe PMC routes above on loopback, in a background thread."""

    def __init__(
        self,
        articles: Sequence[FakeArticle],
        faults: Mapping[str, Sequence[EuropePMCFault | str | None]] | None = None,
        *,
        retry_after_s: float = 1.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.articles = sorted(articles, key=lambda article: int(article.pmcid.removeprefix("PMC")))
        self._by_pmcid = {article.pmcid: article for article in self.articles}
        self.retry_after_s = retry_after_s
        super().__init__(host, port)
        self._lock = threading.Lock()
        self._faults: dict[str, tuple[EuropePMCFault | None, ...]] = {}
        self._seen: dict[str, int] = {}
        self._log: list[LoggedRequest] = []
        self._stopping = threading.Event()
        self.set_faults(faults or {})

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}{REST_PATH}"

    @property
    def figure_url(self) -> str:
        return f"http://{self.host}:{self.port}/articles/{{pmcid}}/bin/{{name}}.jpg"

    @property
    def requests(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._log)

    def set_faults(self, faults: Mapping[str, Sequence[EuropePMCFault | str | None]]) -> None:
        """Script faults per path from now on (counting that path's requests afresh)."""
        with self._lock:
            self._faults = {
                path: tuple(None if f is None else EuropePMCFault(f) for f in script)
                for path, script in faults.items()
            }
            self._seen = {}

    thread_name = "fake-europepmc"

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    def before_stop(self) -> None:
        self._stopping.set()  # handlers told to hang return

    def _next_fault(self, path: str) -> EuropePMCFault | None:
        """The fault scripted for this request to ``path`` (called under the lock)."""
        count = self._seen.get(path, 0)
        self._seen[path] = count + 1
        script = self._faults.get(path, ())
        return script[count] if count < len(script) else None

    def _arrive(
        self, path: str, params: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, EuropePMCFault | None]:
        with self._lock:
            fault = self._next_fault(path)
            index = len(self._log)
            self._log.append(LoggedRequest(index, time.monotonic(), path, params, headers, fault, None))
            return index, fault

    def _answered(self, index: int, status: int | None) -> None:
        with self._lock:
            entry = self._log[index]
            self._log[index] = LoggedRequest(
                entry.index, entry.received_at, entry.path, entry.params, entry.headers, entry.fault, status
            )

    def _wait_until_stopped(self) -> None:
        self._stopping.wait()

    def _answer(self, path: str, params: dict[str, str], fault: EuropePMCFault | None) -> _Reply | None:
        """The reply to one request; None to send nothing (a dropped connection)."""
        if fault is EuropePMCFault.HANG:
            self._wait_until_stopped()
            return None
        if fault is EuropePMCFault.DROP:
            return None
        if fault is EuropePMCFault.RATE_LIMITED:
            return _json_reply(
                {"error": "rate limit reached (injected)"}, 429, ("Retry-After", f"{self.retry_after_s:g}")
            )
        if fault is EuropePMCFault.SERVER_ERROR:
            return _json_reply({"error": "injected HTTP 500"}, 500)
        if path == f"{REST_PATH}/search":
            return self._search(params)
        if match := re.fullmatch(rf"{REST_PATH}/(PMC\d+)/fullTextXML", path):
            return self._full_text(match.group(1), fault)
        if match := re.fullmatch(r"/articles/(PMC\d+)/bin/([^/]+)", path):
            return self._figure(match.group(1), match.group(2))
        return _json_reply({"error": f"no route GET {path}"}, 404)

    def _search(self, params: dict[str, str]) -> _Reply:
        if params.get("format") != "json":
            return _json_reply({"error": "the fake Europe PMC answers format=json only"}, 400)
        query, cursor = params.get("query", ""), params.get("cursorMark", "*")
        try:
            page_size = int(params.get("pageSize", "25"))
        except ValueError:
            return _json_reply({"errCode": 404, "errMsg": "Invalid page size provided."})
        if not 1 <= page_size <= 1000:
            return _json_reply(
                {"errCode": 404, "errMsg": "Invalid page size provided. Valid size is between 1 and 1000"}
            )
        offset = _offset(cursor)
        if offset is None:
            return _json_reply({"error": f"invalid cursorMark {cursor!r}"}, 400)
        try:
            found = matching(query, self.articles)
        except UnsupportedQuery as error:
            return _json_reply({"error": str(error)}, 400)
        page = found[offset : offset + page_size]
        body: dict[str, Any] = {"version": "6.9", "hitCount": len(found)}
        if len(found) > 1:  # the real service leaves the cursor out for a single hit
            body["nextCursorMark"] = _cursor(offset + len(page)) if page else cursor
        body["request"] = {
            "queryString": query,
            "resultType": params.get("resultType", "lite"),
            "cursorMark": cursor,
            "pageSize": page_size,
            "sort": "",
            "synonym": False,
        }
        body["resultList"] = {"result": [article.record() for article in page]}
        return _json_reply(body)

    def _full_text(self, pmcid: str, fault: EuropePMCFault | None) -> _Reply:
        article = self._by_pmcid.get(pmcid)
        if article is None or not article.open_access:
            return _Reply(404, b"", "text/plain")
        xml = article.xml[: len(article.xml) // 2] if fault is EuropePMCFault.MALFORMED_XML else article.xml
        return _Reply(200, xml, "application/xml")

    def _figure(self, pmcid: str, name: str) -> _Reply:
        article = self._by_pmcid.get(pmcid)
        data = article.figures.get(name) if article is not None else None
        if data is None:
            return _Reply(404, b"", "text/plain")
        return _Reply(200, data, "image/jpeg")


def _handler_for(server: FakeEuropePMC) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to ``server``."""

    class Handler(QuietHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            params = {
                name: values[-1] for name, values in parse_qs(parts.query, keep_blank_values=True).items()
            }
            headers = {name.lower(): value for name, value in self.headers.items()}
            index, fault = server._arrive(parts.path, params, headers)
            reply = server._answer(parts.path, params, fault)
            if reply is None:
                self.close_connection = True
                return
            server._answered(index, reply.status)  # before sending: a client may ask again at once
            self.send_whole(reply.status, (("Content-Type", reply.content_type), *reply.headers), reply.body)

    return Handler
