"""The subset of Europe PMC's query syntax a fake Europe PMC answers (``sciir.testing.fake_europepmc``):
``AND``/``OR``, parentheses, ``OPEN_ACCESS:Y``, ``LICENSE:"..."``, ``JOURNAL:"..."``, ``TITLE:...`` and
free words matched in titles. A phrase filter matches words in order, as a tokenised field does."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sciir.testing.europepmc_articles import FakeArticle

_TOKEN = re.compile(r'\s*(\(|\)|"[^"]*"|[A-Za-z_]+:"[^"]*"|[^\s()]+)')


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _phrase_in(phrase: str, text: str) -> bool:
    """The phrase's words appear in ``text`` in order, side by side (a tokenised field's phrase match)."""
    wanted, words = _words(phrase), _words(text)
    return bool(wanted) and any(words[i : i + len(wanted)] == wanted for i in range(len(words)))


class UnsupportedQuery(ValueError):
    """A query using syntax or a field the fake server does not implement (answered HTTP 400)."""


def _atom_matches(atom: str, article: FakeArticle) -> bool:
    field_name, colon, value = atom.partition(":")
    if not colon:
        return _phrase_in(atom.strip('"'), article.title)
    value = value.strip('"')
    fields = {
        "OPEN_ACCESS": lambda: (value.upper() in ("Y", "YES", "TRUE")) == article.open_access,
        "LICENSE": lambda: _phrase_in(value, article.licence),
        "JOURNAL": lambda: _phrase_in(value, article.journal),
        "TITLE": lambda: _phrase_in(value, article.title),
    }
    if field_name.upper() not in fields:
        raise UnsupportedQuery(f"the fake Europe PMC does not know the field {field_name!r}")
    return fields[field_name.upper()]()


class _QueryParser:
    """Recursive descent over ``or := and ("OR" and)*``, ``and := unit ("AND"? unit)*``."""

    def __init__(self, query: str) -> None:
        self.tokens = [match.group(1) for match in _TOKEN.finditer(query)]
        self.position = 0

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def parse(self, article: FakeArticle) -> bool:
        self.position = 0
        result = self._or(article)
        if self._peek() is not None:
            raise UnsupportedQuery(f"unexpected {self._peek()!r} in the query")
        return result

    def _or(self, article: FakeArticle) -> bool:
        result = self._and(article)
        while self._peek() == "OR":
            self.position += 1
            result = self._and(article) or result
        return result

    def _and(self, article: FakeArticle) -> bool:
        result = self._unit(article)
        while self._peek() not in (None, "OR", ")"):
            if self._peek() == "AND":
                self.position += 1
            result = self._unit(article) and result
        return result

    def _unit(self, article: FakeArticle) -> bool:
        token = self._peek()
        if token is None or token in (")", "AND", "OR"):
            raise UnsupportedQuery(f"a term is missing before {token!r}")
        self.position += 1
        if token != "(":
            return _atom_matches(token, article)
        result = self._or(article)
        if self._peek() != ")":
            raise UnsupportedQuery("a parenthesis is not closed")
        self.position += 1
        return result


def matching(query: str, articles: Sequence[FakeArticle]) -> list[FakeArticle]:
    """The articles the query finds, in PMCID order (a stable sort, as cursor paging needs)."""
    parser = _QueryParser(query)
    return [article for article in articles if parser.parse(article)]
