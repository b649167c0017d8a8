"""Reading an OpenAI-compatible chat-completion reply: its text, the first token's log-probabilities,
the output a request asked for, and the tokens it used."""

from __future__ import annotations

import json
from typing import Any

from sciir.backends.base import VLMRequest
from sciir.backends.replies import InvalidReply, parse_reply


def _raw(body: dict[str, Any]) -> str:
    """The start of a reply body, kept with a failure so the reason can be checked."""
    return json.dumps(body)[:2000]


def first_choice(body: dict[str, Any]) -> dict[str, Any]:
    """The first choice of a chat-completion reply; raises when the model refused to answer."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InvalidReply("the reply has no choices", raw=_raw(body))
    message = choices[0].get("message") or {}
    if message.get("refusal"):
        raise InvalidReply(f"the model refused: {message['refusal']}", raw=str(message["refusal"]))
    return choices[0]


def _message_content(choice: dict[str, Any]) -> Any:
    """A choice's message content, list-of-parts content joined into one string."""
    content = (choice.get("message") or {}).get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def reply_text(body: dict[str, Any]) -> str:
    """The text of the first choice of a chat-completion reply (string or list-of-parts content)."""
    choice = first_choice(body)
    content = _message_content(choice)
    if not isinstance(content, str) or not content.strip():
        finish = choice.get("finish_reason")
        raise InvalidReply(f"the reply has no text content (finish_reason {finish!r})", raw=_raw(body))
    return content


def _token_logprob(entry: Any) -> dict[str, Any] | None:
    """``{"token", "logprob"}`` of one alternative, or None when it lacks either or is not a number."""
    if not isinstance(entry, dict):
        return None
    token, logprob = entry.get("token"), entry.get("logprob")
    if not isinstance(token, str) or isinstance(logprob, bool) or not isinstance(logprob, int | float):
        return None
    return {"token": token, "logprob": float(logprob)}


def first_token_logprobs(body: dict[str, Any]) -> dict[str, Any]:
    """``{"answer": text, "top_logprobs": [{"token", "logprob"}, ...]}`` from a reply asked for logprobs.

    The alternatives are ``choices[0].logprobs.content[0].top_logprobs``, the first generated token's;
    a server that ignores ``logprobs`` (or one malformed alternative) makes the reply invalid.
    """
    choice = first_choice(body)
    logprobs = choice.get("logprobs")
    tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
    first = tokens[0] if isinstance(tokens, list) and tokens and isinstance(tokens[0], dict) else {}
    alternatives = first.get("top_logprobs")
    if not isinstance(alternatives, list) or not alternatives:
        raise InvalidReply(
            "the reply has no first-token log-probabilities (choices[0].logprobs.content[0].top_logprobs "
            "is missing or empty): the server may not support logprobs for this model",
            raw=_raw(body),
        )
    entries = [_token_logprob(entry) for entry in alternatives]
    if None in entries:
        bad = alternatives[entries.index(None)]
        raise InvalidReply(f"malformed first-token log-probability {bad!r}", raw=_raw(body))
    content = _message_content(choice)
    answer = content if isinstance(content, str) else str(first.get("token", ""))
    return {"answer": answer, "top_logprobs": entries}


def reply_output(body: dict[str, Any], request: VLMRequest) -> tuple[dict[str, Any], str]:
    """The output ``request`` asked for, and the reply text it came from.

    First-token log-probabilities when the request asks for them, else the JSON object in the text,
    checked against the request's schema.
    """
    if request.top_logprobs is not None:
        output = first_token_logprobs(body)
        return output, output["answer"]
    text = reply_text(body)
    return parse_reply(text, request.json_schema), text


def usage_of(body: dict[str, Any]) -> dict[str, float]:
    """Prompt and completion token counts reported by the server (absent counts are left out)."""
    usage = body.get("usage") or {}
    return {
        name: float(usage[name])
        for name in ("prompt_tokens", "completion_tokens")
        if isinstance(usage.get(name), int | float)
    }
