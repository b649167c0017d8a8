"""VQAScore from first-token log-probabilities (also end to end through the `openai` backend and the
fake server), and the baseline_scores table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from PIL import Image

from sciir.aibench.params import VQAScoreSettings
from sciir.backends.base import VLMResult
from sciir.evaluation.baseline_metrics import (
    BASELINE_COLUMNS,
    baseline_frame,
    baseline_summary,
    failed_row,
    scored_row,
)
from sciir.pipelines.evaluate.aibench_nodes import baseline_metrics
from sciir.tasks.vqascore import (
    VQASCORE_TOP_LOGPROBS,
    build_vqascore_request,
    is_yes_token,
    vqascore_from_result,
    yes_probability,
)
from sciir.testing.chat_answers import FirstTokenDistribution, message_texts
from sciir.testing.fake_openai_server import FakeOpenAIServer


def test_the_question_is_lin_et_al_template_and_has_no_schema() -> None:
    request = build_vqascore_request("a flow from A to B", b"png")
    assert request.prompt == 'Does this figure show "a flow from A to B"? Please answer yes or no.'
    assert request.task == "vqascore" and request.json_schema is None and request.images == [b"png"]
    assert request.top_logprobs == VQASCORE_TOP_LOGPROBS == 5


def test_every_spelling_of_yes_counts_and_nothing_else() -> None:
    assert all(is_yes_token(t) for t in ("Yes", " yes", "YES", "Yes.", "yes\n"))
    assert not any(is_yes_token(t) for t in ("No", "Yeah", "yes sir", ""))


def test_p_yes_sums_the_yes_spellings() -> None:
    top = [
        {"token": "Yes", "logprob": math.log(0.6)},
        {"token": " yes", "logprob": math.log(0.1)},
        {"token": "No", "logprob": math.log(0.25)},
    ]
    probability = yes_probability(top)
    assert probability.value == pytest.approx(0.7) and probability.note is None


def test_a_yes_outside_the_top_tokens_is_zero_with_its_bound() -> None:
    probability = yes_probability(
        [{"token": "No", "logprob": math.log(0.9)}, {"token": "no", "logprob": -3.0}]
    )
    assert probability.value == 0.0
    assert probability.note == f"no 'yes' among the 2 most likely first tokens: P(yes) < {math.exp(-3.0):.3g}"


@pytest.mark.parametrize(
    "result, message",
    [
        (VLMResult.failed("HTTP 500"), "the VQA request failed: HTTP 500"),
        (VLMResult(output={"answer": "Yes"}), "returned no 'top_logprobs' list"),
        (VLMResult(output={"top_logprobs": []}), "no first-token log-probabilities"),
        (VLMResult(output={"top_logprobs": [{"token": "Yes"}]}), "malformed log-probability entry"),
        (VLMResult(output={"top_logprobs": [{"token": "Yes", "logprob": 0.5}]}), "is above 0"),
    ],
)
def test_a_result_without_usable_logprobs_is_an_error_never_a_score(result: VLMResult, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        vqascore_from_result(result)


def test_tables_keep_their_columns_and_average_only_what_was_scored() -> None:
    empty = baseline_frame([])
    assert list(empty.columns) == list(BASELINE_COLUMNS) and empty.empty
    scores = baseline_frame(
        [
            scored_row("m", "s1", "clipscore", 0.8),
            scored_row("m", "s2", "clipscore", 0.4),
            failed_row("m", "s3", "clipscore", "no image from model m for sample s3"),
        ]
    )
    summary = baseline_summary(scores).set_index(["model", "metric"])
    assert summary.loc[("m", "clipscore"), "mean"] == pytest.approx(0.6)
    assert summary.loc[("m", "clipscore"), "coverage"] == pytest.approx(2 / 3)
    assert summary.loc[("m", "clipscore"), "n"] == 3


def test_vqascore_config_refuses_secrets_that_would_be_logged() -> None:
    with pytest.raises(ValueError, match="use api_key_env"):
        VQAScoreSettings(backend="openai", config={"api_key": "sk-123"})
    assert VQAScoreSettings(backend="openai", config={"api_key_env": "JUDGE_KEY"}).config


# ---- end to end: the baseline_metrics node, the `openai` backend and the fake server

# Six candidate first tokens; the server returns the five most likely, so "YES" (0.03) is not among them.
FLOW_FIRST_TOKEN = {"Yes": 0.55, " yes": 0.2, "No": 0.1, " No": 0.05, "no": 0.04, "YES": 0.03}
BENCHMARK = pd.DataFrame({"sample_id": ["flow", "mol"], "prompt": ["a flow from A to B", "a benzene ring"]})


def _answer(request: dict[str, Any]) -> FirstTokenDistribution | str:
    """Log-probabilities about the flow figure; a plain "Yes" (no logprobs) about the molecule."""
    question = " ".join(message_texts(request))
    return FirstTokenDistribution(FLOW_FIRST_TOKEN) if "a flow from A to B" in question else "Yes"


def _vqascore_params(srv: FakeOpenAIServer, cache: Path) -> dict[str, Any]:
    config = {"base_url": srv.base_url, "model": "fake-vlm", "max_retries": 0, "invalid_reply_retries": 0}
    return {
        "baseline_metrics": {"vqascore": {"backend": "openai", "config": config, "cache_path": str(cache)}}
    }


def test_vqascore_through_the_openai_backend_is_p_yes_of_the_served_logprobs(tmp_path: Path) -> None:
    generations = {"m/flow": Image.new("RGB", (32, 32), "white"), "m/mol": Image.new("RGB", (32, 32), "gray")}
    with FakeOpenAIServer(responder=_answer) as srv:
        params = _vqascore_params(srv, tmp_path / "responses.sqlite")
        first = baseline_metrics(generations, BENCHMARK, params).set_index("sample_id")
        again = baseline_metrics(generations, BENCHMARK, params).set_index("sample_id")
        sent = [request.body for request in srv.requests]
    assert first.loc["flow", "status"] == "ok" and first.loc["flow", "metric"] == "vqascore"
    # exp(logprob) summed over the yes spellings the server returned: "Yes" and " yes".
    assert first.loc["flow", "score"] == pytest.approx(0.55 + 0.2, abs=1e-9)
    assert first.loc["mol", "status"] == "failed" and math.isnan(first.loc["mol", "score"])
    assert "VQAScore of m/mol" in first.loc["mol", "reason"]
    assert "no first-token log-probabilities" in first.loc["mol", "reason"]
    assert len(sent) == 3  # the flow answer came from the cache the second time; the failure was asked again
    assert all(
        (body["max_tokens"], body["logprobs"], body["top_logprobs"]) == (1, True, 5)
        and "response_format" not in body
        for body in sent
    )
    assert again.loc["flow", "score"] == first.loc["flow", "score"]
