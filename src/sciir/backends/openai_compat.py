"""The ``openai`` backend: any OpenAI-compatible chat-completions server as a vision-language model.

Works with vLLM and SGLang (serving Qwen3-VL, InternVL ...), OpenAI, and Gemini's compatible endpoint.
Transport (event loop, shared session, concurrency, retries, timeouts, rate limits) lives in
:mod:`sciir.backends.http_client`; this module builds payloads, parses replies and checks them against
the request's JSON schema (or reads the first token's log-probabilities when the request asks for them),
and accounts tokens and cost.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.http_client import CallFailed, HTTPBackend, HTTPSession, HTTPTransport, JSONText, Reply
from sciir.backends.replies import InvalidReply, UnsupportedSchema, parse_reply, reply_validator
from sciir.backends.token_estimates import image_tokens, text_tokens
from sciir.images.payload import ImageLimits, UnreadableImageFile, request_payload

log = logging.getLogger(__name__)

CHAT_PATH = "/chat/completions"
# Payload fields the backend sets itself; passing them as extra settings would silently fight it.
_RESERVED_EXTRA = frozenset(
    {"messages", "response_format", "seed", "stream", "n", "logprobs", "top_logprobs"}
)
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"})
_SCHEMA_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
# For the tokens-per-minute estimate: about four characters a text token, one token per 28-pixel patch.


class UnreadableImage(ValueError):
    """An input image Pillow cannot decode."""


def png_for_upload(image: bytes, max_side: int) -> bytes:
    """``image`` as PNG bytes no larger than ``max_side`` on its longer side (aspect ratio kept).

    A PNG that already fits is sent as is, byte for byte.
    """
    try:
        with Image.open(io.BytesIO(image)) as img:
            img.load()
            if img.format == "PNG" and max(img.size) <= max_side:
                return image
            picture = img if img.mode in _PNG_MODES else img.convert("RGB")
            picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            buffer = io.BytesIO()
            picture.save(buffer, format="PNG")
            return buffer.getvalue()
    except (OSError, ValueError, Image.DecompressionBombError) as err:
        raise UnreadableImage(f"{type(err).__name__}: {err}") from None


def image_parts(images: Sequence[bytes], limits: ImageLimits) -> list[dict[str, Any]]:
    """Chat content parts carrying ``images`` as data URLs of their own format: each image's own bytes
    when they fit ``limits``, else converted (``sciir.images.payload``); names the image that cannot be read."""
    parts = []
    for number, image in enumerate(images, start=1):
        try:
            sent = request_payload(image, limits, f"image {number} of {len(images)}")
        except UnreadableImageFile as err:
            raise UnreadableImage(str(err)) from None
        url = JSONText(f"data:{sent.mime_type};base64,".encode("ascii") + base64.b64encode(sent))
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


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


def _add_usage(total: dict[str, float], more: Mapping[str, float]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0.0) + value


@dataclass(frozen=True)
class Prices:
    """What a million prompt and completion tokens cost, in US dollars."""

    per_million_prompt: float = 0.0
    per_million_completion: float = 0.0

    @classmethod
    def configured(
        cls, per_million_prompt: float | None, per_million_completion: float | None
    ) -> Prices | None:
        """The prices when either is configured (the other then costs nothing); None when neither is."""
        if per_million_prompt is None and per_million_completion is None:
            return None
        return cls(per_million_prompt or 0.0, per_million_completion or 0.0)

    def cost_usd(self, usage: Mapping[str, float]) -> float:
        """The estimated cost of the tokens counted in ``usage``."""
        prompt = usage.get("prompt_tokens", 0.0) * self.per_million_prompt
        completion = usage.get("completion_tokens", 0.0) * self.per_million_completion
        return (prompt + completion) / 1_000_000


def estimated_tokens(payload: Mapping[str, Any], image_max_side: int) -> float:
    """A rough upper estimate of the tokens a chat request will consume, for the tokens-per-minute limit.

    Text at about four characters a token, each image as one token per 28-pixel patch at the largest
    upload size (Qwen-VL's patching; OpenAI bills less), plus the whole completion budget, as OpenAI's
    own limiter counts it. The server's reported usage corrects the estimate afterwards.
    """
    chars, images = 0, 0
    for message in payload["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        chars += sum(len(part.get("text", "")) for part in parts)
        images += sum(part.get("type") == "image_url" for part in parts)
    patches = image_tokens(image_max_side, image_max_side)
    return text_tokens(chars) + images * patches + payload.get("max_tokens", 0)


class OpenAICompatibleVLM(HTTPBackend[VLMRequest, VLMResult], VisionLanguageModel):
    """A vision-language model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Only settings that change what the model answers (model, server, decoding, image size, system
    prompt, extra payload fields) form the identity and so the cache key; concurrency, retries,
    timeouts, rate limits, prices and the proxy switch do not, and the API key is never part of it.
    ``extra`` settings (``top_p``, ``chat_template_kwargs`` ...) are sent as payload fields.

    Images are sent as their own bytes (PNG, JPEG, WebP) when they fit ``image_max_side`` and, when set,
    ``image_format`` (``png``, ``jpeg`` or ``webp``: the one format sent); any other image is converted
    to it (PNG by default) and resized. The judge's callers prepare images under the same limits
    (``image_limits``), once per image, so nothing is decoded here.

    Decoding is greedy by default (``temperature`` 0). With a higher temperature every request must
    carry a seed, so that its answer is reproducible and cached under that seed; a request without one
    fails without being sent.

    Each result's ``usage`` holds ``http_requests`` (attempts sent), ``prompt_tokens`` and
    ``completion_tokens`` as the server reported them, and ``cost_usd`` when prices are configured.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        concurrency: int = 8,
        max_retries: int = 4,
        timeout_s: float = 60,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        image_max_side: int = 1024,
        image_format: str | None = None,
        invalid_reply_retries: int = 1,
        system_prompt: str | None = None,
        retry_base_delay_s: float = 0.5,
        retry_max_delay_s: float = 30.0,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        price_per_million_prompt_tokens: float | None = None,
        price_per_million_completion_tokens: float | None = None,
        use_env_proxy: bool = False,
        **extra: Any,
    ) -> None:
        _check_settings(max_retries, invalid_reply_retries, image_max_side, temperature, extra)
        super().__init__(
            base_url=base_url.rstrip("/"),
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            image_max_side=image_max_side,
            # Only when set, so every other configuration keeps its identity and so its cached answers.
            **({"image_format": image_format} if image_format else {}),
            system_prompt=system_prompt,
            **extra,
        )
        self.image_limits = ImageLimits.from_config(self.config)
        self.model = model
        self.invalid_reply_retries = invalid_reply_retries
        self._extra = extra
        self.prices = Prices.configured(price_per_million_prompt_tokens, price_per_million_completion_tokens)
        self._transport = HTTPTransport.with_retries(
            max_retries=max_retries,
            retry_base_delay_s=retry_base_delay_s,
            retry_max_delay_s=retry_max_delay_s,
            base_url=base_url,
            api_key=api_key,
            concurrency=concurrency,
            timeout_s=timeout_s,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            use_env_proxy=use_env_proxy,
        )

    def build_payload(self, request: VLMRequest) -> dict[str, Any]:
        """The chat-completions body for ``request``: system prompt, then the prompt text and its images.

        A JSON schema is sent as ``response_format``; a request for first-token log-probabilities
        asks for one token with ``logprobs`` and ``top_logprobs`` instead.
        """
        user_content = [{"type": "text", "text": request.prompt}]
        user_content += image_parts(request.images, self.image_limits)
        system_prompt = self.config["system_prompt"]
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": user_content})
        payload = {
            **self._extra,
            "model": self.model,
            "messages": messages,
            "temperature": self.config["temperature"],
            "max_tokens": self.config["max_tokens"],
        }
        if request.top_logprobs is not None:
            # Only the first token's alternatives are read, so one token is all there is to pay for.
            payload |= {"max_tokens": 1, "logprobs": True, "top_logprobs": request.top_logprobs}
        if request.json_schema is not None:
            name = _SCHEMA_NAME_CHARS.sub("_", request.task)[:64] or "reply"
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": request.json_schema, "strict": True},
            }
        if request.seed is not None:
            payload["seed"] = request.seed
        return payload

    async def _call_one(self, session: HTTPSession, request: VLMRequest) -> VLMResult:
        """The result of one request: checked for a seed, its payload built, then asked."""
        if self.config["temperature"] > 0 and request.seed is None:
            reason = (
                f"task {request.task}: sampled decoding (temperature {self.config['temperature']:g}) needs "
                "a seed on the request, so that its answer can be reproduced and cached; none was given"
            )
            return self._failed(request, reason, None, {"http_requests": 0.0})
        if request.json_schema is not None:
            reply_validator(request.json_schema)  # a schema replies cannot be checked against fails unpaid
        # Decoding and downscaling images is CPU work; keep it off the event loop.
        payload = await asyncio.to_thread(self.build_payload, request)
        return await self._ask(session, request, payload)

    async def _ask(self, session: HTTPSession, request: VLMRequest, payload: dict[str, Any]) -> VLMResult:
        """Ask until the reply fits the schema, at most ``invalid_reply_retries`` extra times; usage adds up."""
        estimate = estimated_tokens(payload, self.config["image_max_side"])
        usage: dict[str, float] = {"http_requests": 0.0}
        for _ in range(self.invalid_reply_retries + 1):
            try:
                reply = await session.post(CHAT_PATH, payload, estimate)
            except CallFailed as err:
                usage["http_requests"] += err.attempts
                return self._failed(request, f"task {request.task}: {err}", None, usage)
            usage["http_requests"] += reply.attempts
            _add_usage(usage, usage_of(reply.body))
            try:
                output, text = reply_output(reply.body, request)
            except InvalidReply as err:
                last_error = err
                log.info("reply for task %s is invalid: %s", request.task, err)
                continue
            return VLMResult(output=output, raw=text, usage=self._priced(usage))
        reason = f"invalid reply for task {request.task}: {last_error}{self._cut_hint(request, reply)}"
        return self._failed(request, reason, last_error.raw, usage)

    def _priced(self, usage: dict[str, float]) -> dict[str, float]:
        """``usage`` with its estimated cost when prices are configured."""
        return {**usage, "cost_usd": self.prices.cost_usd(usage)} if self.prices else usage

    def _failed(
        self, request: VLMRequest, reason: str, raw: str | None, usage: dict[str, float]
    ) -> VLMResult:
        log.warning("%s request failed: %s", self.model, reason)
        return VLMResult(failure=reason, raw=raw, usage=self._priced(usage))

    def _cut_hint(self, request: VLMRequest, reply: Reply) -> str:
        """A note when the server stopped the reply at the token limit, the usual cause of broken JSON."""
        if request.top_logprobs is not None:
            return ""  # stopping after one token is what was asked for
        choices = reply.body.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(first, dict) and first.get("finish_reason") == "length":
            return f" (the reply was cut at max_tokens={self.config['max_tokens']})"
        return ""

    def _failure(self, request: VLMRequest, err: Exception) -> VLMResult:
        """The failure result for a request whose preparation raised (an unreadable image, a bug)."""
        if isinstance(err, UnreadableImage):
            reason = f"task {request.task}: {err}"
        elif isinstance(err, UnsupportedSchema):
            reason = f"task {request.task}: replies cannot be checked against its JSON schema: {err}"
        else:
            reason = f"task {request.task}: unexpected {type(err).__name__}: {err}"
        return self._failed(request, reason, None, {"http_requests": 0.0})


def _check_settings(
    max_retries: int,
    invalid_reply_retries: int,
    image_max_side: int,
    temperature: float,
    extra: dict[str, Any],
) -> None:
    """Reject settings that could only fail later, on every request."""
    if max_retries < 0 or invalid_reply_retries < 0:
        raise ValueError("max_retries and invalid_reply_retries must not be negative")
    if image_max_side < 1:
        raise ValueError(f"image_max_side must be positive, got {image_max_side}")
    if temperature < 0:
        raise ValueError(f"temperature must not be negative, got {temperature}")
    clashing = sorted(_RESERVED_EXTRA & extra.keys())
    if clashing:
        raise ValueError(f"extra settings {clashing} are set by the backend itself and cannot be overridden")
    try:
        json.dumps(extra)
    except TypeError as err:
        raise ValueError(f"extra settings must be JSON-serialisable payload fields: {err}") from None
