"""The app served by uvicorn on loopback (``python -m sciir.review``), over SQLite and over PostgreSQL, under eight
raters answering at once for a bounded time: every answer acknowledged is stored exactly once; the same form sent five times at once is stored
once; and a server killed with SIGKILL mid-way, then started again on its store, has lost no acknowledged answer
(at most the answers in flight at the kill may be there or not)."""

from __future__ import annotations

import os
import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pandas as pd
import pytest
from PIL import Image
from sqlalchemy import select

from sciir.review.models import Answer, Item, Rater
from sciir.review.store import open_store
from sciir.testing.review_raters import RaterClient, ReviewServer

pytestmark = pytest.mark.slow

RATERS = 8
IMAGES = 150
# How long the eight raters answer: 10 s in make test; the minute issue 39 names is run with
# SCIIR_TEST_LOAD_SECONDS=60 (docs/benchmarks.md, "The review app under load").
LOAD_SECONDS = float(os.environ.get("SCIIR_TEST_LOAD_SECONDS", "10"))


def _options(tmp_path: Path, store: str) -> list[str]:
    """The app's options: a queue of IMAGES images with prompts, over ``store``."""
    images = tmp_path / "images"
    for index in range(IMAGES):
        folder = images / f"model{index % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (index % 256, 80, 160)).save(folder / f"s{index}.png")
    benchmark = tmp_path / "benchmark.parquet"
    pd.DataFrame({"sample_id": [f"s{i}" for i in range(IMAGES)], "prompt": "Draw it."}).to_parquet(benchmark)
    return ["--store", store, "--images", str(images), "--benchmark", str(benchmark)]


@pytest.fixture
def server_options(tmp_path: Path, store_url: str) -> list[str]:
    """The app's options over a store on SQLite or on the test session's PostgreSQL (conftest's store_url)."""
    return _options(tmp_path, store_url)


@dataclass
class Session:
    """What one simulated rater saw: the answers acknowledged (public id -> score, in order), those undone,
    refusals, and whether a request was in flight when the server went away."""

    name: str
    acknowledged: list[tuple[str, int]] = field(default_factory=list)
    undone: list[tuple[str, int]] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)
    in_flight: str | None = None


def _rate_until(url: str, name: str, deadline: float, stop: threading.Event, seed: int) -> Session:
    """One rater answering (and now and then undoing) until the deadline, the stop event or a dead server."""
    chooser, seen = random.Random(seed), Session(name)
    with httpx.Client(base_url=url, timeout=30) as client:
        rater = RaterClient(client)
        rater.sign_in(name)
        while time.monotonic() < deadline and not stop.is_set():
            try:
                page = rater.page()
                if page.item is None:
                    break
                undo = bool(seen.acknowledged) and chooser.random() < 0.1
                score = chooser.randint(1, 5)
                seen.in_flight = "undo" if undo else page.item
                after = rater.undo(page) if undo else rater.answer(score, page)
            except httpx.HTTPError:  # the server went away: this request's fate is unknown
                break
            seen.in_flight = None
            if after.status != 200:
                seen.refused.append(after.status)
            elif undo:
                seen.undone.append(seen.acknowledged.pop())
            else:
                seen.acknowledged.append((page.item, score))
    return seen


def _stored(options: list[str]) -> dict[str, list[tuple[str, int | None, bool]]]:
    """Rater -> (public id, score, live) of every stored answer, in the order stored."""
    store = open_store(options[options.index("--store") + 1])
    with store.reading() as session:
        rows = session.execute(
            select(Rater.name, Item.public_id, Answer.score, Answer.undone_at.is_(None))
            .join(Item, Item.id == Answer.item_id)
            .join(Rater, Rater.id == Answer.rater_id)
            .order_by(Answer.id)
        ).all()
    store.close()
    stored: dict[str, list[tuple[str, int | None, bool]]] = {}
    for name, public_id, score, live in rows:
        stored.setdefault(name, []).append((public_id, score, live))
    return stored


def _run_raters(url: str, seconds: float, stop: threading.Event | None = None) -> list[Session]:
    deadline, stop = time.monotonic() + seconds, stop or threading.Event()
    with ThreadPoolExecutor(RATERS) as pool:
        futures = [pool.submit(_rate_until, url, f"rater{i}", deadline, stop, i) for i in range(RATERS)]
        return [future.result() for future in futures]


def _expected(seen: Session) -> list[tuple[str, int, bool]]:
    """The rows a rater's session should have left: each answer acknowledged, undone or live."""
    return sorted(
        [(item, score, True) for item, score in seen.acknowledged]
        + [(item, score, False) for item, score in seen.undone]
    )


def test_eight_raters_at_once_each_answer_stored_exactly_once(
    server_options: list[str], tmp_path: Path
) -> None:
    with ReviewServer(server_options, tmp_path / "server.log") as server:
        started = time.monotonic()
        sessions = _run_raters(server.url, seconds=LOAD_SECONDS)
        elapsed = time.monotonic() - started
        # One rater's browser sending the same form five times at once (a double click, a retry): one row.
        with httpx.Client(base_url=server.url, timeout=30) as client:
            twice = RaterClient(client)
            twice.sign_in("double")
            page = twice.page()
            with ThreadPoolExecutor(5) as pool:
                statuses = list(pool.map(lambda _: twice.answer(4, page).status, range(5)))
    stored = _stored(server_options)
    answers = sum(len(s.acknowledged) + len(s.undone) for s in sessions)
    print(
        f"\n{server_options[1].split(':')[0]}: {RATERS} raters for {elapsed:.1f} s: {answers} answers acknowledged ({answers / elapsed:.0f}/s), "
        f"{sum(len(s.undone) for s in sessions)} undone, {sum(len(s.refused) for s in sessions)} refused"
    )
    assert answers >= RATERS * 5, "the raters barely answered: the test measured nothing"
    for seen in sessions:
        assert seen.refused == [], (seen.name, seen.refused)  # one tab each: no stale form
        assert sorted(stored.get(seen.name, [])) == _expected(seen), seen.name
        live = [item for item, _, alive in stored.get(seen.name, []) if alive]
        assert len(live) == len(set(live)), seen.name  # never the same image twice
    assert sorted(statuses) == [200, 409, 409, 409, 409]
    assert [(score, live) for _, score, live in stored["double"]] == [(4, True)]
    per_image = Counter(item for rows in stored.values() for item, _, live in rows if live)
    assert max(per_image.values()) <= RATERS + 1


def test_a_server_killed_mid_way_loses_no_acknowledged_answer(
    server_options: list[str], tmp_path: Path
) -> None:
    server = ReviewServer(server_options, tmp_path / "server.log").start()
    stop = threading.Event()
    killer = threading.Timer(4.0, server.kill)
    killer.start()
    try:
        sessions = _run_raters(server.url, seconds=30, stop=stop)
    finally:
        killer.cancel()
        server.kill()
    assert server.process is not None and server.process.returncode == -9
    acknowledged = sum(len(s.acknowledged) + len(s.undone) for s in sessions)
    in_flight = [s for s in sessions if s.in_flight]
    assert acknowledged >= RATERS, "the kill came before the raters answered: the test measured nothing"

    with ReviewServer(
        server_options, tmp_path / "restarted.log"
    ) as restarted:  # the same store, migrated again
        store = open_store(server_options[server_options.index("--store") + 1])
        if store.url.startswith("sqlite"):  # the file the killed process was writing
            with store.engine.connect() as connection:
                assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
        store.close()
        stored = _stored(server_options)
        extra = 0
        for seen in sessions:
            rows = sorted(stored.get(seen.name, []))
            expected = _expected(seen)
            # nothing acknowledged was lost: each answer is there, with its score
            given = Counter((item, score) for item, score, _ in rows)
            assert not Counter((item, score) for item, score, _ in expected) - given, seen.name
            if seen.in_flight is None:
                assert rows == expected, seen.name
            elif seen.in_flight == "undo":  # stored or not: the last live answer may now be undone
                assert len(rows) == len(expected) and sum(not live for *_, live in rows) - sum(
                    not live for *_, live in expected
                ) in (0, 1), seen.name
            else:  # an answer in flight: stored or not, nothing else
                kept = [row for row in rows if row not in expected]
                assert len(rows) - len(expected) in (0, 1) and len(kept) == len(rows) - len(expected), (
                    seen.name
                )
                extra += len(kept)
        # the app still works on the store: a rater goes on where they were
        with httpx.Client(base_url=restarted.url, timeout=30) as client:
            again = RaterClient(client)
            again.sign_in("rater0")
            assert again.page().status == 200 and again.answer(3).status == 200
    print(
        f"\n{server_options[1].split(':')[0]}: killed after {acknowledged} acknowledged answers with {len(in_flight)} requests in flight: "
        f"all {acknowledged} found after the restart, {extra} of the in-flight ones stored as well"
    )
