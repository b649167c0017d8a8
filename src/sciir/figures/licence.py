"""Licence rules (SciIR paper, appendix A.2): the article's licence first, then third-party figures.

Article level: only the configured licences (CC BY 4.0 by default) are accepted; anything else,
including a missing licence, an unrecognised one or two that disagree, is rejected with a reason
naming what was found. The same rule applies to a licence a figure carries itself. Figure level:
captions and credit lines are searched for signs of third-party material ("adapted from",
"courtesy of", a copyright line ...); such figures are excluded. The lists are configuration, not code.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict

# creativecommons.org/licenses/by-nc/4.0/ -> ("by-nc", "4.0"); publicdomain/zero/1.0 -> CC0 1.0
_CC_LICENCE_PATH = re.compile(r"^/licenses/(?P<kind>[a-z-]+)/(?P<version>\d+(?:\.\d+)*)")
_CC_PUBLIC_DOMAIN_PATH = re.compile(r"^/publicdomain/(?P<kind>zero|mark)/(?P<version>\d+(?:\.\d+)*)")
_PUBLIC_DOMAIN_NAMES = {"zero": "CC0", "mark": "Public Domain Mark"}
_CC_HOST = "creativecommons.org"
# Licence prose without a link: "Creative Commons Attribution 4.0 International License", "CC BY 4.0".
# The version must follow "Attribution"/"BY" directly, so "Attribution-NonCommercial 4.0" is not CC BY.
_CC_BY_IN_TEXT = re.compile(
    r"\b(?:creative\s+commons\s+attribution|cc[\s-]by)\s+(?P<version>\d\.\d)\b(?![-\w])", re.IGNORECASE
)


class LicenceDecision(BaseModel):
    """Whether a licence is accepted, and why."""

    name: str | None
    url: str | None
    ok: bool
    reason: str


def licence_name(url: str | None) -> str | None:
    """Short name of a Creative Commons licence URL ("CC BY 4.0", "CC0 1.0"); None when not recognised.

    The scheme may be missing ("creativecommons.org/licenses/by/4.0") and a ``www.`` prefix is allowed;
    any other host, even one ending in "creativecommons.org", is not Creative Commons.
    """
    if not url or not url.strip():
        return None
    text = url.strip()
    parsed = urlparse(text if "//" in text else f"//{text}")
    host = (parsed.hostname or "").lower()
    if host not in (_CC_HOST, f"www.{_CC_HOST}"):
        return None
    path = parsed.path.lower()
    if match := _CC_LICENCE_PATH.match(path):
        return f"CC {match['kind'].upper()} {match['version']}"
    if match := _CC_PUBLIC_DOMAIN_PATH.match(path):
        return f"{_PUBLIC_DOMAIN_NAMES[match['kind']]} {match['version']}"
    return None


def licence_from_text(text: str) -> tuple[str, str] | None:
    """("CC BY <version>", its canonical URL) when prose names Creative Commons Attribution and a version."""
    if match := _CC_BY_IN_TEXT.search(text):
        version = match["version"]
        return f"CC BY {version}", f"https://{_CC_HOST}/licenses/by/{version}/"
    return None


class LicencePolicy(BaseModel):
    """Accepted licences and the caption patterns that mark third-party material."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accepted: list[str]
    third_party_patterns: list[str]

    @cached_property
    def _compiled_patterns(self) -> list[re.Pattern[str]]:
        return [re.compile(pattern, re.IGNORECASE) for pattern in self.third_party_patterns]

    def _accepted_list(self) -> str:
        return f"accepted: {', '.join(self.accepted)}"

    def _decide_named(self, name: str, url: str) -> LicenceDecision:
        """Accept a recognised licence only when it is on the accepted list."""
        shown = f"{name} ({url})"
        if name not in self.accepted:
            reason = f"licence {shown} is not accepted; {self._accepted_list()}"
            return LicenceDecision(name=name, url=url, ok=False, reason=reason)
        return LicenceDecision(name=name, url=url, ok=True, reason=f"licence {shown} is accepted")

    def decide(self, urls: Sequence[str], text: str = "") -> LicenceDecision:
        """Decide on a licence statement from its URLs (in markup order) and its prose.

        Recognised URLs decide; URLs naming two different licences are a conflict and rejected. When
        no URL is recognised, prose naming "Creative Commons Attribution <version>" decides; otherwise
        the licence is unrecognised (or missing) and rejected.
        """
        named = {url: name for url in urls if (name := licence_name(url))}
        names = list(dict.fromkeys(named.values()))
        if len(names) > 1:
            found = ", ".join(f"{name} ({url})" for url, name in named.items())
            return LicenceDecision(
                name=None, url=None, ok=False, reason=f"conflicting licences in one statement: {found}"
            )
        if names:
            url = next(iter(named))
            return self._decide_named(names[0], url)
        if from_text := licence_from_text(text):
            return self._decide_named(*from_text)
        if urls:
            reason = f"unrecognised licence {', '.join(urls)}; {self._accepted_list()}"
            return LicenceDecision(name=None, url=urls[0], ok=False, reason=reason)
        if text:
            reason = f"unrecognised licence (no licence URL; text: {text[:200]!r}); {self._accepted_list()}"
            return LicenceDecision(name=None, url=None, ok=False, reason=reason)
        return LicenceDecision(name=None, url=None, ok=False, reason="no licence found")

    def third_party_evidence(self, text: str) -> str | None:
        """The first phrase, in reading order, of a caption or credit line that marks third-party material."""
        matches = [match for pattern in self._compiled_patterns if (match := pattern.search(text))]
        return min(matches, key=lambda match: match.start()).group(0) if matches else None
