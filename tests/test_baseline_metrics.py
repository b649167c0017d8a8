"""VQAScore from first-token log-probabilities, and the baseline_scores table."""

from __future__ import annotations

import math

import pytest

from sciir.backends.base import VLMResult
from sciir.baseline_metrics import (
    BASELINE_COLUMNS,
    VQAScoreSettings,
    baseline_frame,
    baseline_summary,
    build_vqascore_request,
    failed_row,
    is_yes_token,
    scored_row,
    vqascore_from_result,
    yes_probability,
)


def test_the_question_is_lin_et_al_template_and_has_no_schema() -> None:
    request = build_vqascore_request("a flow from A to B", b"png")
    assert request.prompt == 'Does this figure show "a flow from A to B"? Please answer yes or no.'
    assert request.task == "vqascore" and request.json_schema is None and request.images == [b"png"]


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
