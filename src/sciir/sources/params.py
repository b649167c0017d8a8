"""``params:ingest`` (conf/base/parameters_ingest.yml), validated: the source, the licences accepted and
the size bounds on the files read."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sciir.figures.jats_reader import MAX_XML_BYTES
from sciir.figures.licence import LicencePolicy

EUROPEPMC_REST = "https://www.ebi.ac.uk/europepmc/webservices/rest"
# Europe PMC serves an article's figures beside its page; a <graphic> href names the file without suffix.
EUROPEPMC_FIGURE_URL = "https://europepmc.org/articles/{pmcid}/bin/{name}.jpg"
# The defaults of ``ingest.limits``: the largest image ingest reads and the most a PMC package may unpack to.
MAX_IMAGE_BYTES = 256 * 1024 * 1024
MAX_PACKAGE_BYTES = 1024**3
_EMAIL = re.compile(r"^[^@\s<>()]+@[^@\s<>()]+\.[^@\s<>()]+$")


@dataclass(frozen=True)
class FileLimits:
    """Size bounds on the files a source writes (the same bounds ingest reads them with)."""

    max_xml_bytes: int
    max_image_bytes: int
    max_package_bytes: int = MAX_PACKAGE_BYTES


class EuropePMCParams(BaseModel):
    """What to search Europe PMC for, how much to download, and how politely."""

    model_config = ConfigDict(extra="forbid")

    query: str = ""  # Europe PMC search syntax, ANDed with the filters below
    journals: list[str] = Field(default_factory=list)  # JOURNAL:"..." filters, any of them
    open_access: bool = True  # OPEN_ACCESS:Y
    licences: list[str] = Field(
        default_factory=lambda: ["cc by"]
    )  # LICENSE:"..." filters, re-checked per record
    max_articles: int = Field(default=100, gt=0)
    page_size: int = Field(default=100, ge=1, le=1000)
    concurrency: int = Field(default=2, ge=1)
    requests_per_second: float = Field(default=2.0, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=5, ge=0)
    retry_base_delay_s: float = Field(default=1.0, ge=0)
    retry_max_delay_s: float = Field(default=60.0, gt=0)
    contact_email: str | None = None
    base_url: str = EUROPEPMC_REST
    figure_url: str = EUROPEPMC_FIGURE_URL

    @field_validator("journals", "licences")
    @classmethod
    def _no_quotes(cls, values: list[str]) -> list[str]:
        for value in values:
            if '"' in value or not value.strip():
                raise ValueError(
                    f"{value!r}: a journal or licence filter must be non-empty and hold no double quote"
                )
        return values

    @field_validator("contact_email")
    @classmethod
    def _an_address(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL.match(value):
            raise ValueError(f"{value!r} is not an e-mail address")
        return value

    @field_validator("base_url", "figure_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} must start with http:// or https://")
        return value.rstrip("/")

    @field_validator("figure_url")
    @classmethod
    def _figure_template(cls, value: str) -> str:
        if "{pmcid}" not in value or "{name}" not in value:
            raise ValueError(f"{value!r} must name both {{pmcid}} and {{name}} (the graphic's file name)")
        return value


class SourceParams(BaseModel):
    """``ingest.source``: the kind of source and the folder ingest reads.

    ``path`` is where the embedded sample is written (``embedded``), the folder read (``jats_folder``),
    or the download folder (``europepmc``).
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    path: str
    seed: int = 7
    # embedded only: the sample drawn this many times, each copy from a seed of its own (scale tests).
    copies: int = Field(1, ge=1)
    europepmc: EuropePMCParams = Field(default_factory=EuropePMCParams)


class LicenceParams(BaseModel):
    """Article licences that are accepted, by short name ("CC BY 4.0")."""

    model_config = ConfigDict(extra="forbid")

    accepted: list[str]


class LimitParams(BaseModel):
    """Size bounds on the files ingest reads (an article or image beyond them is rejected, unread) and on
    what a PMC package may unpack to (a package beyond them is refused, nothing written)."""

    model_config = ConfigDict(extra="forbid")

    max_xml_bytes: int = Field(default=MAX_XML_BYTES, gt=0)
    max_image_bytes: int = Field(default=MAX_IMAGE_BYTES, gt=0)
    max_package_bytes: int = Field(default=MAX_PACKAGE_BYTES, gt=0)

    def file_limits(self) -> FileLimits:
        """These bounds as the sources take them."""
        return FileLimits(self.max_xml_bytes, self.max_image_bytes, self.max_package_bytes)


class IngestParams(BaseModel):
    """``params:ingest`` (conf/base/parameters_ingest.yml)."""

    model_config = ConfigDict(extra="forbid")

    source: SourceParams
    licence: LicenceParams
    third_party_patterns: list[str]
    limits: LimitParams = Field(default_factory=LimitParams)

    def policy(self) -> LicencePolicy:
        """The licence rules these parameters describe."""
        return LicencePolicy(accepted=self.licence.accepted, third_party_patterns=self.third_party_patterns)
