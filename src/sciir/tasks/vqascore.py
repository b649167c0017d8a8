"""The ``vqascore`` task (VQAScore, Lin et al. 2024): the probability that a vision-language model answers "Yes"
to ``Does this figure show "{prompt}"? Please answer yes or no.``, read from the log-probabilities of the
first answer token. The request asks for them with ``top_logprobs`` (see
:class:`sciir.backends.base.VLMRequest`), and the backend answers with
``{"answer": str, "top_logprobs": [{"token": str, "logprob": float}, ...]}`` (the most likely first
tokens; the ``openai`` backend sends ``logprobs: true, top_logprobs: 5, max_tokens: 1``). The metric's table
is ``sciir.evaluation.baseline_metrics``. No rule reads a probability honestly: no offline answerer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sciir.backends.base import VLMRequest, VLMResult
from sciir.tasks.task import ModelTask

VQASCORE_TASK = "vqascore"
# First-token alternatives asked for: enough for the usual spellings of "yes" and "no", and within
# the limit of 20 that OpenAI and vLLM set.
VQASCORE_TOP_LOGPROBS = 5
_PUNCTUATION = re.compile(r"[\W_]+")


def build_vqascore_request(prompt: str, image_png: bytes | None = None) -> VLMRequest:
    """The yes/no question about one image (conf/base/tasks/vqascore.yml), asking for the first answer
    token's log-probabilities (no JSON schema: the answer is one word); without ``image_png``, made for
    an image added later."""
    return TASK.request(
        images=[image_png] if image_png is not None else [],
        context={"question": TASK.prompt.render(prompt=prompt)},
        top_logprobs=VQASCORE_TOP_LOGPROBS,
        prompt=prompt,
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


TASK = ModelTask(
    name=VQASCORE_TASK,
    summary="P(yes) of 'Does this figure show ...?' from first-token log-probabilities (Lin et al. 2024)",
    reply_schema=None,
)
