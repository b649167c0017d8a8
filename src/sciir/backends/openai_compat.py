"""The ``openai`` backend: any OpenAI-compatible chat-completions server as a vision-language model.

Works with vLLM and SGLang (serving Qwen3-VL, InternVL ...), OpenAI, and Gemini's compatible endpoint.
Transport (event loop, shared session, concurrency, retries, timeouts, rate limits) lives in
:mod:`sciir.backends.http.client`, images become content parts in :mod:`sciir.backends.image_upload` and
replies are read in :mod:`sciir.backends.openai_replies`; this module builds payloads, asks again when a
reply does not fit the request's JSON schema, and accounts tokens and cost.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.http.client import HTTPBackend
from sciir.backends.http.session import CallFailed, HTTPSession, Reply
from sciir.backends.image_upload import UnreadableImage, image_parts
from sciir.backends.openai_replies import reply_output, usage_of
from sciir.backends.replies import InvalidReply, UnsupportedSchema, reply_validator
from sciir.backends.token_estimates import image_tokens, text_tokens
from sciir.images.payload import ImageLimits

log = logging.getLogger(__name__)

CHAT_PATH = "/chat/completions"
_SCHEMA_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


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
    completion: float = payload.get("max_tokens", 0)
    return text_tokens(chars) + images * patches + completion


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

    reserved_fields: ClassVar[frozenset[str]] = frozenset(
        {"messages", "response_format", "seed", "stream", "n", "logprobs", "top_logprobs"}
    )

    def __init__(
        self,
        *,
        base_url: str | Sequence[str],
        model: str,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        image_max_side: int = 1024,
        image_format: str | None = None,
        invalid_reply_retries: int = 1,
        system_prompt: str | None = None,
        price_per_million_prompt_tokens: float | None = None,
        price_per_million_completion_tokens: float | None = None,
        **settings: Any,
    ) -> None:
        """``settings``: the transport's (``api_key``, ``concurrency`` 8, ``timeout_s`` 60, ``max_retries``,
        ``retry_base_delay_s``, ``retry_max_delay_s``, ``requests_per_minute``, ``tokens_per_minute``,
        ``use_env_proxy``: :data:`~sciir.backends.http.client.TRANSPORT_DEFAULTS`), the rest extra payload
        fields."""
        transport, extra = self.split_settings(settings)
        _check_settings(transport["max_retries"], invalid_reply_retries, image_max_side, temperature)
        super().__init__(
            base_url=base_url,
            model=model,
            transport=transport,
            extra=extra,
            temperature=temperature,
            max_tokens=max_tokens,
            image_max_side=image_max_side,
            # Only when set, so every other configuration keeps its identity and so its cached answers.
            **({"image_format": image_format} if image_format else {}),
            system_prompt=system_prompt,
        )
        self._image_limits = ImageLimits.from_config(self.config)
        self.invalid_reply_retries = invalid_reply_retries
        self.prices = Prices.configured(price_per_million_prompt_tokens, price_per_million_completion_tokens)

    @property
    def image_limits(self) -> ImageLimits:
        return self._image_limits

    def build_payload(self, request: VLMRequest) -> dict[str, Any]:
        """The chat-completions body for ``request``: system prompt, then the prompt text and its images.

        A JSON schema is sent as ``response_format``; a request for first-token log-probabilities
        asks for one token with ``logprobs`` and ``top_logprobs`` instead.
        """
        user_content = [{"type": "text", "text": request.prompt}]
        user_content += image_parts(request.images, self._image_limits)
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
    max_retries: int, invalid_reply_retries: int, image_max_side: int, temperature: float
) -> None:
    """Reject settings that could only fail later, on every request."""
    if max_retries < 0 or invalid_reply_retries < 0:
        raise ValueError("max_retries and invalid_reply_retries must not be negative")
    if image_max_side < 1:
        raise ValueError(f"image_max_side must be positive, got {image_max_side}")
    if temperature < 0:
        raise ValueError(f"temperature must not be negative, got {temperature}")
