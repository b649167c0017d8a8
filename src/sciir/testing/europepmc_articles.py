"""The articles a fake Europe PMC serves (``sciir.testing.fake_europepmc``): each with its search record,
full text XML and figure files, read from a folder of JATS articles such as the embedded sample."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sciir.figures.jats_reader import MalformedArticleError, parse_article
from sciir.figures.licence import licence_name

FIRST_PMCID = 9_000_001
_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".tif", ".tiff", ".gif"}


@dataclass(frozen=True)
class FakeArticle:
    """One article as the fake service knows it."""

    pmcid: str
    doi: str | None
    title: str
    journal: str
    licence: str  # as Europe PMC writes it: "cc by", "cc by-nc", "cc0"
    xml: bytes
    figures: Mapping[str, bytes] = field(default_factory=dict)  # served name ("fig1.jpg") -> bytes
    open_access: bool = True

    def record(self) -> dict[str, Any]:
        """The article's ``resultType=core`` search record (the fields the real service sends that matter)."""
        number = self.pmcid.removeprefix("PMC")
        return {
            "id": number,
            "source": "PMC",
            "pmcid": self.pmcid,
            "fullTextIdList": {"fullTextId": [self.pmcid]},
            "doi": self.doi,
            "title": self.title,
            "authorString": "Sample A.",
            "journalInfo": {"journal": {"title": self.journal, "isoabbreviation": self.journal}},
            "pubYear": "2024",
            "isOpenAccess": "Y" if self.open_access else "N",
            "inEPMC": "Y",
            "inPMC": "Y",
            "hasPDF": "Y",
            "license": self.licence,
            "fullTextUrlList": {
                "fullTextUrl": [
                    {
                        "availability": "Open access",
                        "availabilityCode": "OA",
                        "documentStyle": "html",
                        "site": "Europe_PMC",
                        "url": f"https://europepmc.org/articles/{self.pmcid}",
                    }
                ]
            },
        }


def _europepmc_licence(urls: Sequence[str]) -> str:
    """Europe PMC's licence name for the article's licence URLs ("CC BY 4.0" -> "cc by")."""
    for url in urls:
        if name := licence_name(url):
            return name.rsplit(" ", 1)[0].lower()
    return "cc by"


def _figure_files(folder: Path) -> dict[str, bytes]:
    """Every image file of the folder, served as Europe PMC names figures: ``<stem>.jpg``."""
    return {
        f"{path.stem}.jpg": path.read_bytes()
        for path in sorted(folder.iterdir())
        if path.is_file() and path.suffix.lower() in _IMAGE_SUFFIXES
    }


def article_from_folder(folder: Path, pmcid: str) -> FakeArticle:
    """The article of one folder (its first XML and its images); metadata read with the project's parser,
    so a malformed XML is still served (as the record of an article whose full text is broken)."""
    xml_path = sorted([*folder.glob("*.xml"), *folder.glob("*.nxml")])[0]
    try:
        article = parse_article(xml_path)
    except MalformedArticleError:
        return FakeArticle(
            pmcid, None, folder.name, "", "cc by", xml_path.read_bytes(), _figure_files(folder)
        )
    licence = _europepmc_licence(article.licence.urls) if article.licence else "cc by"
    title, journal = article.title or folder.name, article.journal
    return FakeArticle(
        pmcid, article.doi, title, journal, licence, xml_path.read_bytes(), _figure_files(folder)
    )


def articles_from_folder(folder: Path, first_pmcid: int = FIRST_PMCID) -> list[FakeArticle]:
    """One article per sub-folder holding an XML (the embedded sample, or any folder of JATS articles),
    numbered ``PMC<first_pmcid>`` upwards in folder-name order."""
    folders = [path for path in sorted(folder.iterdir()) if path.is_dir() and any(path.glob("*.*xml"))]
    return [article_from_folder(path, f"PMC{first_pmcid + index}") for index, path in enumerate(folders)]
