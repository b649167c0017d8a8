"""Download open-access articles from Europe PMC into a folder ingest reads like any other.

Each article becomes ``<folder>/<PMCID>/<PMCID>.xml`` plus its figure files, so the licence SOP and the
hardened parsing of the ingest pipeline apply to it unchanged. The download is

- polite: one rate limit (requests per second) over every request, retries with backoff on 429 and
  5xx honouring ``Retry-After`` (a 429 holds every request back), a timeout per request, and a
  ``User-Agent`` naming the project and the contact address the user configures
  (sciir.backends.http.client does all of this);
- resumable: the search cursor, the page in hand and every settled article are recorded in the folder
  (sciir.sources.download_state), so a rerun continues where the last one stopped and never fetches
  a finished article, page or file again;
- forgiving: an article that cannot be fetched or parsed is recorded as failed with the reason and the
  download goes on; only the search itself failing stops it (the state is kept for the rerun).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

from sciir import __version__
from sciir.backends.http.client import HTTPTransport, run_coroutine_sync
from sciir.backends.http.retries import RetryPolicy
from sciir.backends.http.session import CallFailed, HTTPSession
from sciir.figures.jats_reader import MalformedArticleError, parse_article
from sciir.runs.progress import Progress
from sciir.sources.download_state import (
    PARTIAL_DIR,
    ArticleOutcome,
    OutcomeLog,
    SearchProgress,
    check_download_folder,
    downloaded_articles,
    write_atomic,
)
from sciir.sources.europepmc_api import (
    EuropePMCError,
    SearchPage,
    SearchRecord,
    figure_downloads,
    parse_search_page,
    record_problem,
    search_params,
    search_query,
)
from sciir.sources.params import EuropePMCParams, FileLimits

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DownloadSummary:
    """What one download run did, and what the folder holds after it."""

    folder: Path
    downloaded_now: int
    failed_now: int
    skipped_now: int
    articles_in_folder: int
    search_exhausted: bool

    def line(self) -> str:
        ending = "the search has no more results" if self.search_exhausted else "stopped at max_articles"
        return (
            f"Europe PMC download into {self.folder}: {self.downloaded_now} articles downloaded, "
            f"{self.failed_now} failed, {self.skipped_now} skipped in this run; {self.articles_in_folder} "
            f"in the folder; {ending}"
        )


def user_agent(contact_email: str | None) -> str:
    """The ``User-Agent`` sent: the project, its version, what it does and whom to write to."""
    contact = f"; mailto:{contact_email}" if contact_email else ""
    return f"SciIR/{__version__} (scientific-figure dataset ingest{contact})"


def transport_for(params: EuropePMCParams) -> HTTPTransport:
    """The HTTP transport of a download: its rate limit, retries, timeout and User-Agent."""
    retry = RetryPolicy(
        max_retries=params.max_retries,
        base_delay_s=params.retry_base_delay_s,
        max_delay_s=params.retry_max_delay_s,
    )
    return HTTPTransport(
        base_url=params.base_url,
        concurrency=params.concurrency,
        timeout_s=params.timeout_s,
        retry=retry,
        requests_per_minute=params.requests_per_second * 60.0,
        headers={"User-Agent": user_agent(params.contact_email)},
    )


async def _wait_for_one(running: set[asyncio.Task[None]]) -> set[asyncio.Task[None]]:
    """Wait until a task finishes, re-raise what it raised; the tasks still running."""
    done, pending = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
    for task in done:
        task.result()
    return pending


class _Download:
    """One run of the download into ``folder``."""

    def __init__(self, params: EuropePMCParams, folder: Path, limits: FileLimits) -> None:
        self.params, self.folder, self.limits = params, folder, limits
        self.query = search_query(params)
        self.log = OutcomeLog(folder)
        self.downloaded = downloaded_articles(folder)
        self.in_flight: set[str] = set()
        self.counts = {"downloaded": 0, "failed": 0, "skipped": 0}

    async def run(self) -> DownloadSummary:
        state = SearchProgress.load(self.folder, self.query)
        remaining = max(self.params.max_articles - len(self.downloaded), 0)
        with Progress("Europe PMC download", remaining, unit="article") as progress:
            async with transport_for(self.params).session() as session:
                while len(self.downloaded) < self.params.max_articles:
                    if state.page is None:
                        if state.exhausted:
                            break
                        state.page = await self._search(session, state.next_cursor)
                        state.save(self.folder)
                    if not await self._work_through(session, state.page, progress):
                        break  # max_articles reached part way: the page is kept for the next run
                    state.exhausted = state.page.is_last
                    state.next_cursor = state.page.next_cursor or state.next_cursor
                    state.page = None
                    state.save(self.folder)
            if state.exhausted:
                progress.not_needed(max(progress.total - progress.done, 0))
        summary = DownloadSummary(
            self.folder,
            self.counts["downloaded"],
            self.counts["failed"],
            self.counts["skipped"],
            len(self.downloaded),
            state.exhausted,
        )
        logger.info(summary.line())
        return summary

    async def _search(self, session: HTTPSession, cursor: str) -> SearchPage:
        """The search page at ``cursor``; a failure stops the run (the state is kept for a rerun)."""
        try:
            body = await session.get_json("/search", search_params(self.query, cursor, self.params.page_size))
        except CallFailed as error:
            raise EuropePMCError(
                f"Europe PMC search {self.query!r} at cursor {cursor!r} failed: {error}; what was downloaded "
                f"is kept in {self.folder} and a rerun continues from this page"
            ) from error
        page = parse_search_page(body, self.query, cursor)
        logger.info(
            "Europe PMC: %d records at cursor %r (%d hits)", len(page.records), cursor, page.hit_count
        )
        return page

    def _settled(self, record: SearchRecord) -> bool:
        pmcid = record.pmcid or ""
        return record.key in self.log.outcomes or pmcid in self.downloaded or pmcid in self.in_flight

    def _wanted(self, running: int) -> int:
        """How many more articles may be started, besides ``running`` ones that may still succeed."""
        return self.params.max_articles - len(self.downloaded) - running

    def _settle(self, outcome: ArticleOutcome) -> None:
        self.log.append(outcome)
        self.counts[outcome.status] += 1

    async def _work_through(self, session: HTTPSession, page: SearchPage, progress: Progress) -> bool:
        """Settle every record of the page, ``concurrency`` at a time; False when ``max_articles`` stopped
        it part way."""
        running: set[asyncio.Task[None]] = set()
        try:
            for record in page.records:
                if self._settled(record):
                    continue
                if (problem := record_problem(record, self.params)) is not None:
                    self._settle(
                        ArticleOutcome(key=record.key, status="skipped", reason=problem, doi=record.doi)
                    )
                    continue
                while running and (
                    len(running) >= self.params.concurrency or self._wanted(len(running)) <= 0
                ):
                    running = await _wait_for_one(running)
                if self._wanted(0) <= 0:
                    return False
                running.add(asyncio.create_task(self._download(session, record, progress)))
            while running:
                running = await _wait_for_one(running)
            return True
        finally:
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)

    async def _download(self, session: HTTPSession, record: SearchRecord, progress: Progress) -> None:
        """Fetch one article into ``.partial/<PMCID>`` and rename it into place; a failure is recorded."""
        pmcid = str(record.pmcid)
        self.in_flight.add(pmcid)
        partial = self.folder / PARTIAL_DIR / pmcid
        try:
            await self._fetch_files(session, pmcid, partial)
        except (CallFailed, MalformedArticleError) as error:
            shutil.rmtree(partial, ignore_errors=True)
            reason = str(error).replace(str(partial / f"{pmcid}.xml"), f"{pmcid} full text XML")
            outcome = ArticleOutcome(key=pmcid, status="failed", reason=reason, doi=record.doi)
        else:
            partial.rename(self.folder / pmcid)
            self.downloaded.add(pmcid)
            outcome = ArticleOutcome(key=pmcid, status="downloaded", doi=record.doi)
        finally:
            self.in_flight.discard(pmcid)
        self._settle(outcome)
        progress.add(outcome)

    async def _fetch_files(self, session: HTTPSession, pmcid: str, partial: Path) -> None:
        """The article's XML, parsed as ingest parses it, then each main figure's image; files already in
        ``partial`` (from a run that was killed) are not fetched again."""
        partial.mkdir(parents=True, exist_ok=True)
        xml_path = partial / f"{pmcid}.xml"
        if not xml_path.is_file():
            xml = await session.get(f"/{pmcid}/fullTextXML", max_bytes=self.limits.max_xml_bytes)
            write_atomic(xml_path, xml)
        article = await asyncio.to_thread(parse_article, xml_path, self.limits.max_xml_bytes)
        for name, url in figure_downloads(article, pmcid, self.params.figure_url):
            target = partial / name
            if not target.is_file():
                write_atomic(target, await session.get(url, max_bytes=self.limits.max_image_bytes))


def download(params: EuropePMCParams, folder: Path, limits: FileLimits) -> DownloadSummary:
    """Search Europe PMC and download up to ``params.max_articles`` articles into ``folder`` (counting those
    already there), continuing the download the folder holds."""
    check_download_folder(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if params.contact_email is None:
        logger.warning(
            "ingest.source.europepmc.contact_email is not set: Europe PMC cannot reach whoever runs this "
            "download; set it (conf/local/parameters_ingest.yml) before a large download"
        )
    summary = run_coroutine_sync(lambda: _Download(params, folder, limits).run())
    if summary.search_exhausted:
        # Files of articles a killed run left half fetched that this search no longer reaches.
        shutil.rmtree(folder / PARTIAL_DIR, ignore_errors=True)
    return summary
