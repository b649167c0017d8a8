"""``kill -9`` in the middle of a judged batch, then a rerun: nothing answered is paid for twice.

The batch runs in a child process (``judge_batch_job.py``) against a loopback server with latency; the
test kills it once some answers are cached, reruns it to completion, and compares with an uninterrupted
run in a fresh cache.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from sciir.backends.cache import ResponseCache
from sciir.testing.chat_answers import checklist_responder
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan

JOB = Path(__file__).with_name("judge_batch_job.py")
COUNT, CONCURRENCY = 240, 8
KILL_AFTER_CACHED = 60


def scripted_verdict(question_id: str) -> str | None:
    return ("yes", "no", None)[zlib.crc32(question_id.encode()) % 3]


def start_job(base_url: str, cache_path: Path) -> subprocess.Popen[str]:
    command = [sys.executable, str(JOB), base_url, str(cache_path)]
    return subprocess.Popen(
        [*command, "--count", str(COUNT), "--concurrency", str(CONCURRENCY)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish_job(base_url: str, cache_path: Path) -> list[dict]:
    """Run the job to completion and return its printed results in request order."""
    job = start_job(base_url, cache_path)
    stdout, stderr = job.communicate(timeout=60)
    assert job.returncode == 0, stderr
    return [json.loads(line) for line in stdout.splitlines()]


def kill_once_cached(job: subprocess.Popen[str], cache: ResponseCache, at_least: int) -> None:
    """SIGKILL ``job`` as soon as the cache holds ``at_least`` answers."""
    deadline = time.monotonic() + 30
    while len(cache) < at_least:
        assert job.poll() is None, "the job ended before it could be killed"
        assert time.monotonic() < deadline, "the job cached too little in 30 s"
        time.sleep(0.01)
    os.kill(job.pid, signal.SIGKILL)
    job.wait()


def settled_chat_requests(srv: FakeOpenAIServer) -> int:
    """The server's count of chat requests once the last bytes a killed client sent have been handled."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        before = srv.stats.chat_requests
        time.sleep(0.2)  # several times the injected latency
        stats = srv.stats
        if stats.chat_requests == before and stats.in_flight == 0:
            return before
    raise AssertionError("the server kept receiving requests after the client was killed")


@pytest.mark.slow
def test_a_killed_batch_resumes_paying_only_for_what_is_missing(tmp_path: Path) -> None:
    responder = checklist_responder(scripted_verdict)
    with FakeOpenAIServer(responder=responder, faults=FaultPlan(latency_s=0.03)) as srv:
        cache_path = tmp_path / "interrupted.sqlite"
        cache = ResponseCache(cache_path)
        kill_once_cached(start_job(srv.base_url, cache_path), cache, KILL_AFTER_CACHED)
        sent_before_kill, cached_at_kill = settled_chat_requests(srv), len(cache)
        resumed = finish_job(srv.base_url, cache_path)
        sent_on_rerun = srv.stats.chat_requests - sent_before_kill
        uninterrupted = finish_job(srv.base_url, tmp_path / "fresh.sqlite")

    assert KILL_AFTER_CACHED <= cached_at_kill < COUNT
    # Only the requests in flight at the kill were lost: sent, but not yet written.
    assert 0 <= sent_before_kill - cached_at_kill <= CONCURRENCY
    assert sent_on_rerun == COUNT - cached_at_kill
    assert len(cache) == COUNT
    assert resumed == uninterrupted
    assert all(row["failure"] is None for row in resumed)
    answers = [answer for row in resumed for answer in row["output"]["answers"]]
    assert [a["verdict"] for a in answers] == [scripted_verdict(a["id"]) for a in answers]
    assert len(answers) == 2 * COUNT
