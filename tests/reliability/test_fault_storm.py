"""2,000 judge requests against a loopback server injecting every kind of fault into 20% of its replies.

Every request must end answered or as an explicit failure with its reason; no failure may surface as a
verdict or a score; and the client's counts must add up exactly with the server's.
"""

from __future__ import annotations

import io
import re
import zlib

import pandas as pd
import pytest
from PIL import Image

from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.evaluation.scoring import score_samples
from sciir.tasks.judge import build_judge_request, parse_judge_reply, verdicts_frame
from sciir.testing.chat_answers import checklist_responder
from sciir.testing.fake_openai_server import FakeOpenAIServer
from sciir.testing.fault_plan import FaultPlan, ServerFault

REQUESTS = 2000
FAULT_SHARE = 0.2
API_KEY = "sk-storm-key-0042"
VERDICTS = ("yes", "no", None)
# How each fault shows up in the reason of a request that never got an answer.
FAILURE_PATTERNS = {
    "client error": r"returned HTTP 40[01] \(not retried\)",
    "retries exhausted": r"gave up after 3 attempts; last error: (HTTP (429|500|503)|timed out after|"
    r"ServerDisconnectedError|ClientPayloadError|HTTP 200 with a body that is not JSON)",
    "invalid reply": r"^invalid reply for task judge: does not match its JSON schema",
}


def scripted_verdict(question_id: str) -> str | None:
    """The answer the server gives to a question: fixed per id, so it can be checked afterwards."""
    return VERDICTS[zlib.crc32(question_id.encode()) % 3]


def checklist(sample: int) -> list[dict]:
    return [
        {
            "id": f"s{sample}-q{q}",
            "question": f"Is part {q} drawn?",
            "layer": 2,
            "track": "process",
            "expected_text": None,
        }
        for q in range(2)
    ]


@pytest.mark.slow
def test_every_request_ends_answered_or_failed_and_the_counts_add_up() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "white").save(buffer, format="PNG")
    checklists = [checklist(n) for n in range(REQUESTS)]
    requests = [
        build_judge_request(f"figure {n}", items, buffer.getvalue()) for n, items in enumerate(checklists)
    ]
    plan = FaultPlan(
        probabilities={fault: FAULT_SHARE / len(ServerFault) for fault in ServerFault},
        retry_after_s=0.01,
        hang_s=8,
        seed=7,
    )
    with FakeOpenAIServer(responder=checklist_responder(scripted_verdict), faults=plan) as srv:
        judge = OpenAICompatibleVLM(
            base_url=srv.base_url,
            model="judge",
            api_key=API_KEY,
            concurrency=64,
            max_retries=2,
            retry_base_delay_s=0.01,
            retry_max_delay_s=0.05,
            # Well above a proper reply's time with the whole suite on 2 cores: a reply the client gave up
            # on that the server then answered would be counted by neither side as a fault (seen at 2 s).
            timeout_s=5,
        )
        results = judge.generate(requests)
        stats = srv.stats

    answered = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    assert len(results) == REQUESTS == len(answered) + len(failed)
    assert all(r.output is None and r.failure for r in failed)
    assert set(stats.faults) == {fault.value for fault in ServerFault}  # every kind was injected
    # Each attempt the server received is accounted for by exactly one result, and every attempt it
    # answered properly is exactly one answered request.
    assert sum(r.usage["http_requests"] for r in results) == stats.chat_requests
    assert len(answered) == stats.chat_requests - sum(stats.faults.values())
    not_retried = [r for r in failed if re.search(FAILURE_PATTERNS["client error"], r.failure)]
    assert len(not_retried) == stats.faults["400"] + stats.faults["401"]
    for result in failed:
        assert any(re.search(pattern, result.failure) for pattern in FAILURE_PATTERNS.values()), (
            result.failure
        )
        assert API_KEY not in result.failure  # the 401 fault echoes the key back

    rows = []
    for n, (result, items) in enumerate(zip(results, checklists, strict=True)):
        rows += parse_judge_reply(result, items, "model", f"s{n}").rows
    verdicts = verdicts_frame(rows)
    failed_samples = {f"s{n}" for n, r in enumerate(results) if not r.ok}
    of_failed = verdicts["sample_id"].isin(failed_samples)
    assert (verdicts.loc[of_failed, "status"] == "failed").all()
    assert verdicts.loc[of_failed, "verdict"].isna().all()
    answered_rows = verdicts[~of_failed]
    assert answered_rows["question_id"].map(scripted_verdict).tolist() == answered_rows["verdict"].tolist()

    benchmark = pd.DataFrame({"sample_id": [f"s{n}" for n in range(REQUESTS)], "group": "g", "setting": "s"})
    scores = score_samples(verdicts, benchmark, "exclude")
    of_failed_scores = scores["sample_id"].isin(failed_samples)
    assert scores.loc[of_failed_scores, "passed"].isna().all()
    assert (scores.loc[of_failed_scores, "n_judged"] == 0).all()
