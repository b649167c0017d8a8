"""The Europe PMC source against a real loopback server serving Europe PMC's response shapes.

The fake service (sciir.testing.fake_europepmc) serves the embedded sample's articles: CC BY
articles, one of them truncated (its full text does not parse), and one CC BY-NC article that the
search's licence phrase still finds. Which articles those are, and how many there are, is read from the
sample's manifest, so the tests follow the sample as it grows. Every assertion reads the server's request
log or the files written; none measures how long something took.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from sciir.figures.jats_reader import MAX_XML_BYTES
from sciir.pipelines.ingest.nodes import ingest_articles, prepare_source
from sciir.sample import write_embedded_sample
from sciir.sample.build import MANIFEST_NAME
from sciir.sources.download_state import OUTCOMES_FILE, PARTIAL_DIR, STATE_FILE
from sciir.sources.europepmc import download
from sciir.sources.europepmc_api import EuropePMCError, parse_search_page, search_query
from sciir.sources.params import EuropePMCParams, FileLimits
from sciir.testing.europepmc_articles import FIRST_PMCID, FakeArticle, articles_from_folder
from sciir.testing.fake_europepmc import REST_PATH, FakeEuropePMC, LoggedRequest

REPO = Path(__file__).resolve().parents[2]
LIMITS = FileLimits(MAX_XML_BYTES, 256 * 1024 * 1024)


@dataclasses.dataclass(frozen=True)
class SampleIds:
    """The served articles' PMC ids by role, as the sample's manifest says (served in folder-name order)."""

    truncated: str  # its full text does not parse
    non_commercial: str  # CC BY-NC: found by the licence phrase, then skipped
    usable: list[str]  # every other article, in the order the search returns them

    @property
    def usable_set(self) -> set[str]:
        return set(self.usable)


@pytest.fixture(scope="module")
def sample_folder(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("europepmc") / "sample"
    write_embedded_sample(folder, 7)
    return folder


@pytest.fixture(scope="module")
def sample_articles(sample_folder: Path) -> list[FakeArticle]:
    return articles_from_folder(sample_folder)


@pytest.fixture(scope="module")
def ids(sample_folder: Path) -> SampleIds:
    manifest = json.loads((sample_folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    reasons = {
        f"PMC{FIRST_PMCID + index}": article["reason_kind"]
        for index, article in enumerate(
            sorted(manifest["articles"], key=lambda row: Path(row["file"]).parent.name)
        )
    }
    (truncated,) = [pmcid for pmcid, reason in reasons.items() if reason == "malformed_xml"]
    (non_commercial,) = [pmcid for pmcid, reason in reasons.items() if reason == "licence"]
    usable = [pmcid for pmcid, reason in reasons.items() if reason is None]
    assert len(usable) >= 6, "the tests below need six usable articles"
    return SampleIds(truncated, non_commercial, usable)


def _params(server: FakeEuropePMC, **settings: Any) -> EuropePMCParams:
    """Settings for a fast test run against ``server`` (no real waits between retries)."""
    defaults: dict[str, Any] = {
        "base_url": server.base_url,
        "figure_url": server.figure_url,
        "requests_per_second": 1000.0,
        "retry_base_delay_s": 0.01,
        "retry_max_delay_s": 0.05,
        "timeout_s": 10.0,
        "contact_email": "ingest-tests@example.org",
    }
    return EuropePMCParams(**(defaults | settings))


def _outcomes(folder: Path) -> dict[str, dict[str, Any]]:
    lines = (folder / OUTCOMES_FILE).read_text(encoding="utf-8").splitlines()
    return {record["key"]: record for record in map(json.loads, lines)}


def _article_folders(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir() if path.is_dir() and path.name.startswith("PMC")}


def _paths(requests: list[LoggedRequest], suffix: str) -> Counter[str]:
    return Counter(request.path for request in requests if request.path.endswith(suffix))


def _searches(requests: list[LoggedRequest]) -> list[LoggedRequest]:
    return [request for request in requests if request.path == f"{REST_PATH}/search"]


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of the downloaded articles, by path relative to ``folder``."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for name in _article_folders(folder)
        for path in sorted((folder / name).iterdir())
    }


@pytest.mark.slow
def test_paging_follows_each_next_cursor_to_the_end_and_fetches_every_article_once(
    sample_articles, ids, tmp_path
):
    with FakeEuropePMC(sample_articles) as server:
        summary = download(_params(server, page_size=3), tmp_path / "dl", LIMITS)
        requests = server.requests
        searches = _searches(requests)
        # Each cursor sent is the nextCursorMark the server gave for the one before.
        for sent, following in zip(searches, searches[1:], strict=False):
            url = f"{server.base_url}/search?{urllib.parse.urlencode(sent.params)}"
            with urllib.request.urlopen(url) as reply:
                assert json.loads(reply.read())["nextCursorMark"] == following.params["cursorMark"]
    assert searches[0].params["cursorMark"] == "*"
    # Every hit in pages of 3, then the empty page that hands its cursor back.
    assert len(searches) == math.ceil(len(sample_articles) / 3) + 1
    assert all(
        search.params["pageSize"] == "3" and search.params["resultType"] == "core" for search in searches
    )
    full_texts = _paths(requests, "/fullTextXML")
    assert set(full_texts) == {f"{REST_PATH}/{pmcid}/fullTextXML" for pmcid in [*ids.usable, ids.truncated]}
    assert set(full_texts.values()) == {1}
    assert _article_folders(tmp_path / "dl") == ids.usable_set
    assert summary.search_exhausted and summary.downloaded_now == len(ids.usable)
    state = json.loads((tmp_path / "dl" / STATE_FILE).read_text())
    assert state["exhausted"] is True and state["page"] is None
    assert not (tmp_path / "dl" / PARTIAL_DIR).exists()
    user_agent = requests[0].headers["user-agent"]
    assert user_agent.startswith("SciIR/") and "mailto:ingest-tests@example.org" in user_agent


def test_the_query_carries_the_filters_and_each_record_is_checked_again(sample_articles, ids, tmp_path):
    by_id = {article.pmcid: article for article in sample_articles}
    circuit = [pmcid for pmcid in ids.usable if re.search(r"\bcircuit\b", by_id[pmcid].title, re.IGNORECASE)]
    assert len(circuit) >= 3, "the sample needs three usable articles with 'circuit' in the title"
    articles = [
        *sample_articles,
        dataclasses.replace(by_id[circuit[0]], pmcid="PMC9100001", journal="Journal of Elsewhere"),
        dataclasses.replace(by_id[circuit[1]], pmcid="PMC9100002", open_access=False),
        dataclasses.replace(by_id[circuit[2]], pmcid="PMC9100003", licence="cc by-nc-nd"),
    ]
    with FakeEuropePMC(articles) as server:
        params = _params(server, query="circuit", journals=["SciIR Embedded Sample", "Nature"])
        download(params, tmp_path / "dl", LIMITS)
        sent = _searches(server.requests)[0].params
    assert sent["query"] == (
        '(circuit) AND OPEN_ACCESS:Y AND LICENSE:"cc by" '
        'AND (JOURNAL:"SciIR Embedded Sample" OR JOURNAL:"Nature")'
    )
    # The copy in another journal and the one that is not open access are never returned; the CC BY-NC-ND
    # copy is returned (a phrase match) and skipped.
    assert _article_folders(tmp_path / "dl") == set(circuit)
    outcomes = _outcomes(tmp_path / "dl")
    assert outcomes["PMC9100003"]["status"] == "skipped"
    assert "'cc by-nc-nd' is not one of ['cc by']" in outcomes["PMC9100003"]["reason"]
    assert {"PMC9100001", "PMC9100002"}.isdisjoint(outcomes)


@pytest.mark.slow
def test_requests_keep_to_the_rate_limit_in_every_second(sample_articles, tmp_path):
    rate = 40.0
    with FakeEuropePMC(sample_articles) as server:
        download(_params(server, requests_per_second=rate, concurrency=4), tmp_path / "dl", LIMITS)
        arrivals = [request.received_at for request in server.requests]
    # The bucket lets one second's worth through at once, then paces: any 1 s window holds at most
    # 2 x rate (+1 for arrival jitter). Unpaced, all of them would arrive within well under a second.
    assert len(arrivals) > 2 * rate + 1
    busiest = max(sum(start <= t < start + 1.0 for t in arrivals) for start in arrivals)
    assert busiest <= 2 * rate + 1


@pytest.mark.slow
def test_retries_honour_retry_after_and_recover_from_errors_and_dropped_connections(
    sample_articles, ids, tmp_path
):
    first, second, third = ids.usable[:3]
    faults = {
        f"{REST_PATH}/{first}/fullTextXML": ["429", None],
        f"{REST_PATH}/{second}/fullTextXML": ["500", "500", None],
        f"/articles/{third}/bin/fig2.jpg": ["drop", None],
    }
    with FakeEuropePMC(sample_articles, faults, retry_after_s=0.3) as server:
        download(_params(server, concurrency=1), tmp_path / "dl", LIMITS)
        requests = server.requests
    assert _article_folders(tmp_path / "dl") == ids.usable_set
    statuses = {path: [r.status for r in requests if r.path == path] for path in faults}
    assert statuses == {
        f"{REST_PATH}/{first}/fullTextXML": [429, 200],
        f"{REST_PATH}/{second}/fullTextXML": [500, 500, 200],
        f"/articles/{third}/bin/fig2.jpg": [None, 200],
    }
    # Nothing at all is sent until the Retry-After the 429 named has passed (one request at a time here).
    limited = next(request for request in requests if request.status == 429)
    assert requests[limited.index + 1].received_at - limited.received_at >= 0.3


@pytest.mark.slow
def test_a_failed_article_is_recorded_with_its_reason_and_the_download_goes_on(
    sample_articles, ids, tmp_path
):
    broken, figureless = ids.usable[:2]
    by_id = {article.pmcid: article for article in sample_articles}
    lost_figure = dict(by_id[figureless].figures)
    del lost_figure["fig2.jpg"]
    articles = [a for a in sample_articles if a.pmcid != figureless]
    articles.append(dataclasses.replace(by_id[figureless], figures=lost_figure))
    faults = {f"{REST_PATH}/{broken}/fullTextXML": ["malformed_xml"]}
    with FakeEuropePMC(articles, faults) as server:
        download(_params(server), tmp_path / "dl", LIMITS)
        # A rerun searching from the start again fetches no article: each one is settled, failed ones too.
        (tmp_path / "dl" / STATE_FILE).unlink()
        before = len(server.requests)
        download(_params(server), tmp_path / "dl", LIMITS)
        assert {request.path for request in server.requests[before:]} == {f"{REST_PATH}/search"}
    outcomes = _outcomes(tmp_path / "dl")
    failed = {key: record["reason"] for key, record in outcomes.items() if record["status"] == "failed"}
    assert set(failed) == {broken, figureless, ids.truncated}
    assert f"{broken} full text XML: cannot parse XML" in failed[broken]
    assert f"/articles/{figureless}/bin/fig2.jpg returned HTTP 404 (not retried)" in failed[figureless]
    assert "cannot parse XML" in failed[ids.truncated]
    assert _article_folders(tmp_path / "dl") == ids.usable_set - {broken, figureless}


_KILLABLE_RUN = """
import sys
from pathlib import Path
from sciir.sources.europepmc import download
from sciir.sources.params import EuropePMCParams, FileLimits
params, folder, limits = sys.argv[1], Path(sys.argv[2]), FileLimits(*map(int, sys.argv[3:5]))
download(EuropePMCParams.model_validate_json(params), folder, limits)
"""


def _wait_for(server: FakeEuropePMC, path: str, process: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not any(request.path == path for request in server.requests):
        assert process.poll() is None, (
            f"the download ended (status {process.returncode}) before asking for {path}"
        )
        assert time.monotonic() < deadline, f"the download never asked for {path}"
        time.sleep(0.05)


@pytest.mark.slow
def test_a_killed_download_resumes_fetching_nothing_twice_and_ends_as_an_uninterrupted_one(
    sample_articles, ids, tmp_path
):
    before_hung, hung_article = ids.usable[:4], ids.usable[4]
    hung = f"/articles/{hung_article}/bin/fig2.jpg"  # killed with the fifth's XML and first figure fetched
    with FakeEuropePMC(sample_articles, {hung: ["hang"]}) as server:
        params = _params(server, page_size=3, concurrency=1)
        limits = [str(LIMITS.max_xml_bytes), str(LIMITS.max_image_bytes)]
        command = [
            sys.executable,
            "-c",
            _KILLABLE_RUN,
            params.model_dump_json(),
            str(tmp_path / "dl"),
            *limits,
        ]
        with (tmp_path / "killed_run.log").open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for(server, hung, process)
        finally:
            process.kill()
            process.wait()
        assert _article_folders(tmp_path / "dl") == set(before_hung)
        partial = tmp_path / "dl" / PARTIAL_DIR / hung_article
        assert sorted(path.name for path in partial.iterdir()) == [f"{hung_article}.xml", "fig1.jpg"]
        server.set_faults({})
        download(params.model_copy(update={"concurrency": 2}), tmp_path / "dl", LIMITS)
        resumed = server.requests
        download(params, tmp_path / "reference", LIMITS)  # the same download, never interrupted
    answered = Counter(
        (request.path, tuple(sorted(request.params.items()))) for request in resumed if request.status == 200
    )
    assert [request for request, times in answered.items() if times > 1] == []
    assert _files(tmp_path / "dl") == _files(tmp_path / "reference")
    assert _outcomes(tmp_path / "dl") == _outcomes(tmp_path / "reference")


def test_max_articles_bounds_the_folder_across_reruns(sample_articles, ids, tmp_path):
    served = sorted([*ids.usable, ids.truncated, ids.non_commercial])
    # The first page holds the third usable article and one more, so the run stops part way through it.
    page_size = served.index(ids.usable[2]) + 2
    with FakeEuropePMC(sample_articles) as server:
        download(_params(server, max_articles=3, page_size=page_size), tmp_path / "dl", LIMITS)
        assert _article_folders(tmp_path / "dl") == set(ids.usable[:3])
        state = json.loads((tmp_path / "dl" / STATE_FILE).read_text())
        assert state["page"] is not None and state["exhausted"] is False  # stopped part way through a page
        before = len(server.requests)
        download(_params(server, max_articles=3, page_size=page_size), tmp_path / "dl", LIMITS)
        assert len(server.requests) == before  # nothing more to do
        download(_params(server, max_articles=5, page_size=page_size), tmp_path / "dl", LIMITS)
        answered = Counter(
            r.path for r in server.requests if r.status == 200 and not r.path.endswith("/search")
        )
    assert _article_folders(tmp_path / "dl") == set(ids.usable[:5])
    assert set(answered.values()) == {1}


def _shipped_params(kind: str, path: Path, **europepmc: Any) -> dict[str, Any]:
    params = yaml.safe_load((REPO / "conf" / "base" / "parameters_ingest.yml").read_text(encoding="utf-8"))[
        "ingest"
    ]
    params["source"].update(kind=kind, path=str(path))
    params["source"]["europepmc"].update(europepmc)
    return params


ARTICLE_FIELDS = [
    "doi", "title", "journal", "authors", "licence_name", "licence_url", "licence_ok", "licence_reason",
    "methods_text", "status",
]  # fmt: skip
FIGURE_FIELDS = [
    "figure_uid", "doi", "url", "figure_id", "label", "caption", "licence_name", "licence_url", "authors",
    "status",
]  # fmt: skip


def _comparable(table: pd.DataFrame, fields: list[str], keys: list[str]) -> list[dict[str, Any]]:
    return table[fields].sort_values(keys).to_dict("records")


@pytest.mark.slow
def test_the_download_ingests_to_the_same_rows_as_the_folder_it_was_served_from(
    sample_folder, sample_articles, ids, tmp_path
):
    with FakeEuropePMC(sample_articles) as server:
        settings = {
            "base_url": server.base_url,
            "figure_url": server.figure_url,
            "requests_per_second": 1000.0,
        }
        params = _shipped_params("europepmc", tmp_path / "dl", **settings)
        downloaded = prepare_source(params)
    assert downloaded == str(tmp_path / "dl")
    articles, figures = ingest_articles(downloaded, params)
    local_articles, local_figures = ingest_articles(
        str(sample_folder), _shipped_params("jats_folder", sample_folder)
    )
    # The articles the download left out are those it recorded as failed (unparsable) or skipped (CC BY-NC).
    left_out = set(local_articles["doi"].dropna()) - set(articles["doi"])
    outcomes = _outcomes(tmp_path / "dl")
    assert left_out == {outcomes[ids.non_commercial]["doi"]} and outcomes[ids.truncated]["status"] == "failed"
    local_articles = local_articles[local_articles["doi"].isin(articles["doi"])]
    local_figures = local_figures[local_figures["doi"].isin(articles["doi"])]
    assert (
        len(figures) > 20
        and (figures["status"] == "kept").sum() > 0
        and (figures["status"] == "rejected").sum() > 0
    )
    assert _comparable(articles, ARTICLE_FIELDS, ["doi"]) == _comparable(
        local_articles, ARTICLE_FIELDS, ["doi"]
    )
    assert _comparable(figures, FIGURE_FIELDS, ["figure_uid"]) == _comparable(
        local_figures, FIGURE_FIELDS, ["figure_uid"]
    )
    assert set(articles["article_id"]) == ids.usable_set


def test_a_folder_that_is_not_a_download_is_refused(sample_articles, sample_folder, tmp_path):
    with (
        FakeEuropePMC(sample_articles) as server,
        pytest.raises(ValueError, match="not a Europe PMC download"),
    ):
        download(_params(server), sample_folder, LIMITS)


def test_a_refused_search_stops_the_run_naming_the_query():
    refusal = {"errCode": 404, "errMsg": "Invalid page size provided. Valid size is between 1 and 1000"}
    with pytest.raises(EuropePMCError, match="refused the search 'OPEN_ACCESS:Y'.*Invalid page size"):
        parse_search_page(refusal, "OPEN_ACCESS:Y", "*")
    with pytest.raises(ValueError, match="give a query or at least one filter"):
        search_query(EuropePMCParams(open_access=False, licences=[]))
    with pytest.raises(ValueError, match="must name both"):
        EuropePMCParams(figure_url="https://europepmc.org/articles/{pmcid}/bin/figure.jpg")
