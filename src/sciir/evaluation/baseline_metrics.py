"""Baseline image-text metrics: CLIPScore (Hessel et al. 2021) and VQAScore (Lin et al. 2024).

CLIPScore is ``2.5 * max(cos(image embedding, text embedding), 0)`` from a local CLIP model
(:class:`sciir.backends.clip_score.CLIPScorer`). VQAScore is the probability that a vision-language
model answers "Yes" to ``Does this figure show "{prompt}"? Please answer yes or no.``, read from the
log-probabilities of the first answer token. The request asks for them with ``top_logprobs`` (see
:class:`sciir.backends.base.VLMRequest`), and the backend answers with
``{"answer": str, "top_logprobs": [{"token": str, "logprob": float}, ...]}`` (the most likely first
tokens; the ``openai`` backend sends ``logprobs: true, top_logprobs: 5, max_tokens: 1``).

A metric is computed only when its model is configured; otherwise it is skipped with one log line and
contributes no rows. A failed model call or an unreadable image is a ``failed`` row with its reason,
never a score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sciir.backends.base import VLMRequest, VLMResult, window_setting
from sciir.tasks.prompts import prompt_template

CLIPSCORE = "clipscore"
VQASCORE = "vqascore"
BASELINE_COLUMNS = ("model", "sample_id", "metric", "score", "status", "reason")

CLIP_SKIPPED = "CLIPScore skipped: no CLIP model configured (aibench.baseline_metrics.clip.model_path)"
VQASCORE_SKIPPED = "VQAScore skipped: no VQA model configured (aibench.baseline_metrics.vqascore.backend)"

VQASCORE_TASK = "vqascore"
# First-token alternatives asked for: enough for the usual spellings of "yes" and "no", and within
# the limit of 20 that OpenAI and vLLM set.
VQASCORE_TOP_LOGPROBS = 5

_PUNCTUATION = re.compile(r"[\W_]+")


class ClipSettings(BaseModel):
    """CLIPScore: a local CLIP model folder (transformers layout); unset = skipped."""

    model_config = ConfigDict(extra="forbid")

    model_path: str | None = None
    device: str = "cpu"
    batch_size: int = Field(default=16, ge=1)
    # Hessel et al. prefix every caption with "A photo depicts"; empty to score the prompt alone.
    text_prefix: str = "A photo depicts"


class VQAScoreSettings(BaseModel):
    """VQAScore: a vision-language backend (as in conf/base/backends.yml) that returns log-probabilities."""

    model_config = ConfigDict(extra="forbid")

    backend: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    cache_path: str | None = None
    # Requests taken ahead of the replies; null: the backend's own window (an HTTP backend's concurrency).
    window: int | None = Field(default=None, ge=1)
    batch_size: int | None = Field(default=None, ge=1)  # the former name of ``window``, still read

    @model_validator(mode="after")
    def _batch_size_is_the_window(self) -> VQAScoreSettings:
        self.window = window_setting("aibench.baseline_metrics.vqascore", self.window, self.batch_size)
        return self

    @field_validator("config")
    @classmethod
    def _no_secrets(cls, config: dict[str, Any]) -> dict[str, Any]:
        """Parameters are logged to MLflow: a key travels by the name of its environment variable."""
        secrets = [name for name in config if name != "api_key_env" and ("key" in name or "secret" in name)]
        if secrets:
            raise ValueError(f"{secrets} would be logged with the parameters: use api_key_env instead")
        return config


class BaselineMetricsSettings(BaseModel):
    """``aibench.baseline_metrics``."""

    model_config = ConfigDict(extra="forbid")

    clip: ClipSettings = Field(default_factory=ClipSettings)
    vqascore: VQAScoreSettings = Field(default_factory=VQAScoreSettings)


# ---- VQAScore


def build_vqascore_request(prompt: str, image_png: bytes | None = None) -> VLMRequest:
    """The yes/no question about one image (conf/base/tasks/vqascore.yml), asking for the first answer
    token's log-probabilities (no JSON schema: the answer is one word); without ``image_png``, made for
    an image added later."""
    template = prompt_template(VQASCORE_TASK)
    question = template.render(prompt=prompt)
    return VLMRequest(
        task=VQASCORE_TASK,
        prompt=question,
        images=[image_png] if image_png is not None else [],
        context={"question": question},
        template_version=template.version,
        top_logprobs=VQASCORE_TOP_LOGPROBS,
    )


def is_yes_token(token: str) -> bool:
    """True for the tokens that spell "yes" ("Yes", " yes", "YES", "Yes." ...)."""
    return _PUNCTUATION.sub("", token).casefold() == "yes"


@dataclass(frozen=True)
class YesProbability:
    """P(yes) from the first token's top log-probabilities, and a note when it is only a bound."""

    value: float
    note: str | None = None


def yes_probability(top_logprobs: Sequence[Mapping[str, Any]]) -> YesProbability:
    """P(yes): the summed probability of the "yes" spellings among the first token's alternatives.

    When none of the returned alternatives spells "yes", its probability is below the smallest one
    returned; it is recorded as 0 with a note giving that bound. Raises ValueError for malformed entries.
    """
    if not top_logprobs:
        raise ValueError("no first-token log-probabilities were returned")
    pairs = []
    for entry in top_logprobs:
        token, logprob = entry.get("token"), entry.get("logprob")
        if not isinstance(token, str) or isinstance(logprob, bool) or not isinstance(logprob, int | float):
            raise ValueError(f"malformed log-probability entry {dict(entry)!r}")
        if logprob > 0:
            raise ValueError(f"log-probability {logprob} of token {token!r} is above 0")
        pairs.append((token, math.exp(logprob)))
    yes = sum(p for token, p in pairs if is_yes_token(token))
    if any(is_yes_token(token) for token, _ in pairs):
        return YesProbability(min(1.0, yes))
    bound = min(p for _, p in pairs)
    return YesProbability(
        0.0, f"no 'yes' among the {len(pairs)} most likely first tokens: P(yes) < {bound:.3g}"
    )


def vqascore_from_result(result: VLMResult) -> YesProbability:
    """VQAScore of one answered request; ValueError naming what is missing when it cannot be read."""
    if not result.ok:
        raise ValueError(f"the VQA request failed: {result.failure}")
    top = (result.output or {}).get("top_logprobs")
    if not isinstance(top, list):
        raise ValueError("the VQA backend returned no 'top_logprobs' list (it must return log-probabilities)")
    return yes_probability([entry if isinstance(entry, Mapping) else {} for entry in top])


# ---- the ``baseline_scores`` table


def scored_row(
    model: str, sample_id: str, metric: str, score: float, note: str | None = None
) -> dict[str, Any]:
    return {
        "model": model,
        "sample_id": sample_id,
        "metric": metric,
        "score": score,
        "status": "ok",
        "reason": note,
    }


def failed_row(model: str, sample_id: str, metric: str, reason: str) -> dict[str, Any]:
    return {
        "model": model,
        "sample_id": sample_id,
        "metric": metric,
        "score": None,
        "status": "failed",
        "reason": reason,
    }


def baseline_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """``baseline_scores`` (empty, with these columns, when no metric is configured)."""
    return pd.DataFrame(list(rows), columns=list(BASELINE_COLUMNS)).astype({"score": "float64"})


def baseline_summary(scores: pd.DataFrame) -> pd.DataFrame:
    """Per model and metric: the mean score over scored images, coverage (scored / all) and image count."""
    rows = []
    for (model, metric), frame in scores.groupby(["model", "metric"], sort=True):
        scored = frame["status"] == "ok"
        mean = float(frame.loc[scored, "score"].mean()) if scored.any() else math.nan
        rows.append(
            {
                "model": model,
                "metric": metric,
                "mean": mean,
                "coverage": float(scored.mean()),
                "n": len(frame),
            }
        )
    return pd.DataFrame(rows, columns=["model", "metric", "mean", "coverage", "n"])
