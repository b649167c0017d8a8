"""What a Europe PMC download has done so far, kept in its folder so a rerun continues where it stopped.

- ``europepmc_state.json``: the query, the cursor of the next search page and the page being worked
  through (its records, so a rerun never asks for that page again). Small; rewritten whole, atomically.
- ``europepmc_outcomes.jsonl``: one line per article as it is settled (downloaded, failed with the
  reason, skipped with the reason); appended, so it stays cheap at hundreds of thousands of articles.
- ``<PMCID>/``: each downloaded article (its XML and figure files), renamed into place only once
  complete, so the folder's presence is the proof of a download. Files of an article still being
  fetched wait in ``.partial/<PMCID>/`` and are reused after a crash.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from sciir.sources.europepmc_api import FIRST_CURSOR, PMCID, SearchPage

logger = logging.getLogger(__name__)

STATE_FILE = "europepmc_state.json"
OUTCOMES_FILE = "europepmc_outcomes.jsonl"
PARTIAL_DIR = ".partial"
_STATE_VERSION = 1


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader (or a crash) sees the old file or the new, never half."""
    temporary = path.with_name(f".{path.name}.writing")
    temporary.write_bytes(data)
    os.replace(temporary, path)


class SearchProgress(BaseModel):
    """Where the search stands: the next cursor, the page in hand, whether the results ran out."""

    version: int = _STATE_VERSION
    query: str
    next_cursor: str = FIRST_CURSOR
    page: SearchPage | None = None
    exhausted: bool = False

    @classmethod
    def load(cls, folder: Path, query: str) -> SearchProgress:
        """The saved progress of ``query`` in ``folder``; a fresh start when there is none or it was
        another query (the articles downloaded for that one stay)."""
        path = folder / STATE_FILE
        if not path.exists():
            return cls(query=query)
        try:
            saved = cls.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as error:
            raise ValueError(
                f"cannot read the download state {path}: {error}; delete it to search from the start "
                "(articles already downloaded are kept and not downloaded again)"
            ) from error
        if saved.query != query:
            logger.info(
                "The query changed (was %r); searching from the start, keeping what is downloaded",
                saved.query,
            )
            return cls(query=query)
        return saved

    def save(self, folder: Path) -> None:
        write_atomic(folder / STATE_FILE, self.model_dump_json(indent=1).encode())


class ArticleOutcome(BaseModel):
    """How one search record was settled."""

    key: str  # the PMCID (sciir.sources.europepmc_api.SearchRecord.key)
    status: Literal["downloaded", "failed", "skipped"]
    reason: str | None = None
    doi: str | None = None

    # Read by sciir.runs.progress.Progress: a download is a success, nothing comes from a cache.
    @property
    def ok(self) -> bool:
        return self.status == "downloaded"

    @property
    def cached(self) -> bool:
        return False


class OutcomeLog:
    """The outcomes file: read once, then appended one line per settled record."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / OUTCOMES_FILE
        self.outcomes: dict[str, ArticleOutcome] = {}
        self._torn_end = False  # the last line was cut short by a crash: start a new line first
        if self.path.exists():
            self._read()

    def _read(self) -> None:
        text = self.path.read_text(encoding="utf-8", errors="replace")
        self._torn_end = bool(text) and not text.endswith("\n")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                outcome = ArticleOutcome.model_validate_json(line)
            except ValidationError:
                # A line cut short by a crash; its record is settled again.
                logger.warning("%s line %d is not a complete outcome; ignored", self.path, number)
                continue
            self.outcomes[outcome.key] = outcome

    def append(self, outcome: ArticleOutcome) -> None:
        self.outcomes[outcome.key] = outcome
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(("\n" if self._torn_end else "") + outcome.model_dump_json() + "\n")
        self._torn_end = False


def downloaded_articles(folder: Path) -> set[str]:
    """The PMCIDs whose article folder is complete (renamed into place)."""
    return {path.name for path in folder.iterdir() if path.is_dir() and PMCID.match(path.name)}


def check_download_folder(folder: Path) -> None:
    """Refuse a folder that already holds something other than a Europe PMC download, so a download
    never mixes with (or writes into) the embedded sample or a user's own articles."""
    if not folder.exists() or (folder / STATE_FILE).exists():
        return
    ours = {OUTCOMES_FILE, PARTIAL_DIR}
    foreign = sorted(
        path.name for path in folder.iterdir() if path.name not in ours and not PMCID.match(path.name)
    )
    if foreign:
        raise ValueError(
            f"the Europe PMC download folder {folder} already holds files that are not a Europe PMC "
            f"download ({', '.join(foreign[:3])}{' ...' if len(foreign) > 3 else ''}); set "
            "ingest.source.path to an empty or new folder"
        )
