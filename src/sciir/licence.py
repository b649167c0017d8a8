"""Licence rules (SciIR paper, appendix A.2): the article's licence first, then third-party figures.

Article level: only the configured licences (CC BY 4.0 by default) are accepted; anything else,
including a missing licence, is rejected with a reason naming what was found. Figure level: captions
and credit lines are searched for signs of third-party material ("adapted from", "courtesy of", a
copyright line ...); such figures are excluded. The patterns are configuration, not code.
"""

from __future__ import annotations

import re
from functools import cached_property
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict

# creativecommons.org/licenses/by-nc/4.0/ -> ("by-nc", "4.0"); publicdomain/zero/1.0 -> CC0 1.0
_CC_LICENCE_PATH = re.compile(r"^/licenses/(?P<kind>[a-z-]+)/(?P<version>[\d.]+)")
_CC_PUBLIC_DOMAIN_PATH = re.compile(r"^/publicdomain/(?P<kind>zero|mark)/(?P<version>[\d.]+)")
_PUBLIC_DOMAIN_NAMES = {"zero": "CC0", "mark": "Public Domain Mark"}


class LicenceDecision(BaseModel):
    """Whether an article's licence is accepted, and why."""

    name: str | None
    url: str | None
    ok: bool
    reason: str


def licence_name(url: str | None) -> str | None:
    """Short name of a Creative Commons licence URL ("CC BY 4.0", "CC0 1.0"); None when not recognised."""
    if not url:
        return None
    parsed = urlparse(url.strip())
    if not parsed.netloc.lower().endswith("creativecommons.org"):
        return None
    path = parsed.path.lower()
    if match := _CC_LICENCE_PATH.match(path):
        return f"CC {match['kind'].upper()} {match['version']}"
    if match := _CC_PUBLIC_DOMAIN_PATH.match(path):
        return f"{_PUBLIC_DOMAIN_NAMES[match['kind']]} {match['version']}"
    return None


class LicencePolicy(BaseModel):
    """Accepted article licences and the caption patterns that mark third-party material."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accepted: list[str]
    third_party_patterns: list[str]

    @cached_property
    def _compiled_patterns(self) -> list[re.Pattern[str]]:
        return [re.compile(pattern, re.IGNORECASE) for pattern in self.third_party_patterns]

    def decide_article(self, url: str | None) -> LicenceDecision:
        """Accept the article only when its licence URL names one of the accepted licences."""
        if not url:
            return LicenceDecision(name=None, url=None, ok=False, reason="no licence found in the article")
        name = licence_name(url)
        if name is None:
            reason = f"unrecognised licence {url}; accepted: {', '.join(self.accepted)}"
            return LicenceDecision(name=None, url=url, ok=False, reason=reason)
        if name not in self.accepted:
            reason = f"licence {name} ({url}) is not accepted; accepted: {', '.join(self.accepted)}"
            return LicenceDecision(name=name, url=url, ok=False, reason=reason)
        return LicenceDecision(name=name, url=url, ok=True, reason=f"licence {name} is accepted")

    def third_party_evidence(self, text: str) -> str | None:
        """The first phrase in a caption or credit line that marks third-party material, if any."""
        for pattern in self._compiled_patterns:
            if match := pattern.search(text):
                return match.group(0)
        return None
