"""What the loopback OpenAI-compatible server answers: scripted responders (a checklist judge that says
yes, first-token distributions for VQAScore), the hosted API's refusal of a schema strict mode does not
accept, and the ``chat.completion`` envelope around an answer."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sciir.backends.strict_schema import strict_schema_problems

# What the fake server bills per image; real servers bill hundreds of tokens per image too.
IMAGE_TOKENS = 256
_JSON_START = re.compile(r"[\[{]")


@dataclass(frozen=True)
class FirstTokenDistribution:
    """A scripted answer of one token: the probability of each candidate first token.

    The reply's content is the most likely token (greedy decoding). A request with ``logprobs: true``
    also gets ``choices[0].logprobs.content[0]``: that token and its ``top_logprobs`` most likely
    alternatives, as OpenAI returns them.
    """

    probabilities: Mapping[str, float]

    def __post_init__(self) -> None:
        values = list(self.probabilities.values())
        if not values or any(not 0.0 < p <= 1.0 for p in values) or sum(values) > 1.0 + 1e-9:
            raise ValueError(
                "first-token probabilities must lie in (0, 1] and sum to at most 1, "
                f"got {dict(self.probabilities)}"
            )

    def ranked(self) -> list[tuple[str, float]]:
        """The candidate tokens, most likely first."""
        return sorted(self.probabilities.items(), key=lambda item: item[1], reverse=True)

    @property
    def most_likely(self) -> str:
        return self.ranked()[0][0]

    def logprobs(self, top: int) -> dict[str, Any]:
        """A choice's ``logprobs``: the most likely token as the one generated, ``top`` alternatives."""
        ranked = self.ranked()
        alternatives = [_token_logprob(token, probability) for token, probability in ranked[:top]]
        return {"content": [{**_token_logprob(*ranked[0]), "top_logprobs": alternatives}]}


def _token_logprob(token: str, probability: float) -> dict[str, Any]:
    """One token's entry in a reply's ``logprobs``, as OpenAI writes it."""
    return {"token": token, "logprob": math.log(probability), "bytes": list(token.encode())}


# A plain string is a reply without log-probabilities, as from a server that ignores ``logprobs``.
Responder = Callable[[dict[str, Any]], str | FirstTokenDistribution]


class NoScriptedAnswer(LookupError):
    """The responder has nothing to say to this request (the server answers HTTP 400)."""


def message_texts(request: Mapping[str, Any]) -> list[str]:
    """The text of every message in a chat-completions request (string or list-of-parts content)."""
    texts = []
    for message in request.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return texts


def _question_ids(value: Any) -> list[str]:
    """Ids of the checklist questions (objects with "id" and "question") anywhere in ``value``."""
    if isinstance(value, dict):
        if "id" in value and "question" in value:
            return [str(value["id"])]
        return [qid for item in value.values() for qid in _question_ids(item)]
    if isinstance(value, list):
        return [qid for item in value for qid in _question_ids(item)]
    return []


def checklist_ids(text: str) -> list[str]:
    """Ids of every checklist question in the JSON embedded anywhere in ``text``."""
    decoder = json.JSONDecoder()
    found: list[str] = []
    position = 0
    while match := _JSON_START.search(text, position):
        try:
            value, position = decoder.raw_decode(text, match.start())
        except ValueError:
            position = match.start() + 1
            continue
        found += _question_ids(value)
    return found


def checklist_responder(
    verdict_for: Callable[[str], str | None], note: str = "scripted"
) -> Callable[[dict[str, Any]], str]:
    """A responder answering every checklist question in a SciIR judge request with ``verdict_for(id)``."""

    def answer(request: dict[str, Any]) -> str:
        ids = [qid for text in message_texts(request) for qid in checklist_ids(text)]
        if not ids:
            raise NoScriptedAnswer(
                "no JSON checklist (objects with 'id' and 'question') in the request's messages"
            )
        answers = [
            {"id": qid, "verdict": verdict_for(qid), "evidence": "scripted", "reasoning": note}
            for qid in dict.fromkeys(ids)
        ]
        return json.dumps({"answers": answers})

    return answer


_SAY_YES = checklist_responder(lambda qid: "yes", note="the fake server says yes to everything")


def answer_checklist_yes(request: dict[str, Any]) -> str:
    """Answer a SciIR judge request "yes" to every checklist question found in its messages."""
    return _SAY_YES(request)


def strict_schema_refusal(request: Mapping[str, Any]) -> str | None:
    """Why the hosted API would refuse this request's ``response_format`` (a schema sent with
    ``strict: true`` that strict mode does not accept), with every problem and its path; None if it would not."""
    response_format = request.get("response_format")
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    if not isinstance(spec, dict) or spec.get("strict") is not True:
        return None
    problems = strict_schema_problems(spec.get("schema"))
    if not problems:
        return None
    return f"Invalid schema for response_format {spec.get('name')!r}: {'; '.join(problems)}"


def chat_choice(request: dict[str, Any], answer: str | FirstTokenDistribution) -> dict[str, Any]:
    """The one choice of a reply; with log-probabilities when asked for and the answer has them."""
    content = answer if isinstance(answer, str) else answer.most_likely
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": "stop",
    }
    if isinstance(answer, FirstTokenDistribution) and request.get("logprobs") is True:
        top = request.get("top_logprobs")
        choice["logprobs"] = answer.logprobs(top if isinstance(top, int) else 0)
    return choice


def chat_completion(
    request: dict[str, Any], answer: str | FirstTokenDistribution, index: int, model: str
) -> dict[str, Any]:
    """A chat.completion envelope around ``answer``, with approximate token counts."""
    choice = chat_choice(request, answer)
    content = choice["message"]["content"]
    texts = message_texts(request)
    images = sum(
        1
        for message in request.get("messages") or []
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    )
    prompt_tokens = sum(len(text.split()) for text in texts) + IMAGE_TOKENS * images
    completion_tokens = len(content.split())
    return {
        "id": f"chatcmpl-fake-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or model,
        "choices": [choice],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
