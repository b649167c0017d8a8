"""The ``openai`` backend: any OpenAI-compatible chat-completions server as a vision-language model.

Works with vLLM and SGLang (serving Qwen3-VL, InternVL ...), OpenAI, and Gemini's compatible endpoint.
Transport (event loop, shared client, concurrency, retries, timeouts) lives in
:mod:`sciir.backends.http_client`; this module builds payloads and parses replies.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any

from PIL import Image

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.http_client import CallFailed, HTTPSession, HTTPTransport, RetryPolicy

log = logging.getLogger(__name__)

CHAT_PATH = "/chat/completions"
# Payload fields the backend sets itself; passing them as extra settings would silently fight it.
_RESERVED_EXTRA = frozenset({"messages", "response_format", "seed", "stream", "n"})
_PNG_MODES = frozenset({"1", "L", "LA", "P", "RGB", "RGBA", "I", "I;16"})
_FENCED = re.compile(r"^```[\w-]*[ \t]*\n?(.*?)\n?```$", re.DOTALL)
# Reasoning models served without a reasoning parser put their thinking before the answer.
_THINKING = re.compile(r"^<think>.*?</think>", re.DOTALL)
_SCHEMA_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class UnreadableImage(ValueError):
    """An input image Pillow cannot decode."""


class InvalidReply(ValueError):
    """A reply that does not hold the JSON object asked for; ``raw`` is what came back."""

    def __init__(self, reason: str, raw: str | None) -> None:
        super().__init__(reason)
        self.raw = raw


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


def image_parts(images: Sequence[bytes], max_side: int) -> list[dict[str, Any]]:
    """Chat content parts carrying ``images`` as PNG data URLs; names the image that cannot be read."""
    parts = []
    for number, image in enumerate(images, start=1):
        try:
            png = png_for_upload(image, max_side)
        except UnreadableImage as err:
            raise UnreadableImage(f"image {number} of {len(images)} is not a readable image: {err}") from None
        url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def reply_text(body: dict[str, Any]) -> str:
    """The text of the first choice of a chat-completion reply (string or list-of-parts content)."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise InvalidReply("the reply has no choices", raw=json.dumps(body)[:2000])
    message = choices[0].get("message") or {}
    if message.get("refusal"):
        raise InvalidReply(f"the model refused: {message['refusal']}", raw=str(message["refusal"]))
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    if not isinstance(content, str) or not content.strip():
        finish = choices[0].get("finish_reason")
        raise InvalidReply(
            f"the reply has no text content (finish_reason {finish!r})", raw=json.dumps(body)[:2000]
        )
    return content


def strip_wrappers(text: str) -> str:
    """``text`` without a leading ``<think>`` block and without Markdown code fences around it."""
    cleaned = _THINKING.sub("", text.strip()).strip()
    fenced = _FENCED.match(cleaned)
    return fenced.group(1).strip() if fenced else cleaned


def parse_json_object(text: str, required: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON object in ``text`` (fences stripped), checked to hold every ``required`` key."""
    try:
        value = json.loads(strip_wrappers(text))
    except json.JSONDecodeError as err:
        raise InvalidReply(str(err), raw=text) from None
    if not isinstance(value, dict):
        raise InvalidReply(f"expected a JSON object, got {type(value).__name__}", raw=text)
    missing = [key for key in required if key not in value]
    if missing:
        raise InvalidReply(f"missing required keys {missing}", raw=text)
    return value


def usage_of(body: dict[str, Any]) -> dict[str, float]:
    """Prompt and completion token counts reported by the server (absent counts are left out)."""
    usage = body.get("usage") or {}
    return {
        name: float(usage[name])
        for name in ("prompt_tokens", "completion_tokens")
        if isinstance(usage.get(name), int | float)
    }


def _add_usage(total: dict[str, float], more: dict[str, float]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0.0) + value


class OpenAICompatibleVLM(VisionLanguageModel):
    """A vision-language model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    Only settings that change what the model answers (model, server, decoding, image size, system
    prompt, extra payload fields) form the identity and so the cache key; concurrency, retries and
    timeouts do not, and the API key is never part of it. ``extra`` settings (``top_p``,
    ``chat_template_kwargs`` ...) are sent as payload fields.
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
        invalid_reply_retries: int = 1,
        system_prompt: str | None = None,
        retry_base_delay_s: float = 0.5,
        retry_max_delay_s: float = 30.0,
        **extra: Any,
    ) -> None:
        _check_settings(max_retries, invalid_reply_retries, image_max_side, extra)
        super().__init__(
            base_url=base_url.rstrip("/"),
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            image_max_side=image_max_side,
            system_prompt=system_prompt,
            **extra,
        )
        self.model = model
        self.invalid_reply_retries = invalid_reply_retries
        self._extra = extra
        retry = RetryPolicy(
            max_retries=max_retries, base_delay_s=retry_base_delay_s, max_delay_s=retry_max_delay_s
        )
        self._transport = HTTPTransport(
            base_url=base_url, api_key=api_key, concurrency=concurrency, timeout_s=timeout_s, retry=retry
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self._transport.base_url!r})"

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        """One result per request, in order; transport and parse problems become failures with a reason."""
        return self._transport.run_batch(requests, self._complete, self._failure)

    def build_payload(self, request: VLMRequest) -> dict[str, Any]:
        """The chat-completions body for ``request``: system prompt, then the prompt text and its images."""
        user_content = [{"type": "text", "text": request.prompt}]
        user_content += image_parts(request.images, self.config["image_max_side"])
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
        if request.json_schema is not None:
            name = _SCHEMA_NAME_CHARS.sub("_", request.task)[:64] or "reply"
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": request.json_schema, "strict": True},
            }
        if request.seed is not None:
            payload["seed"] = request.seed
        return payload

    async def _complete(self, session: HTTPSession, request: VLMRequest) -> VLMResult:
        """Ask until the reply parses, at most ``invalid_reply_retries`` extra times; tokens add up."""
        # Decoding and downscaling images is CPU work; keep it off the event loop.
        payload = await asyncio.to_thread(self.build_payload, request)
        required = (request.json_schema or {}).get("required", [])
        usage: dict[str, float] = {}
        for _ in range(self.invalid_reply_retries + 1):
            body = await session.post_json(CHAT_PATH, payload)
            _add_usage(usage, usage_of(body))
            try:
                text = reply_text(body)
                return VLMResult(output=parse_json_object(text, required), raw=text, usage=usage)
            except InvalidReply as err:
                last_error = err
                log.info("reply for task %s is not valid JSON: %s", request.task, err)
        reason = f"reply is not valid JSON for task {request.task}: {last_error}{self._cut_hint(body)}"
        return VLMResult(failure=reason, raw=last_error.raw, usage=usage)

    def _cut_hint(self, body: dict[str, Any]) -> str:
        """A note when the server stopped the reply at the token limit, the usual cause of broken JSON."""
        choices = body.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(first, dict) and first.get("finish_reason") == "length":
            return f" (the reply was cut at max_tokens={self.config['max_tokens']})"
        return ""

    def _failure(self, request: VLMRequest, err: Exception) -> VLMResult:
        """The failure result for a request whose call raised."""
        if isinstance(err, CallFailed | UnreadableImage):
            reason = f"task {request.task}: {err}"
        else:
            reason = f"task {request.task}: unexpected {type(err).__name__}: {err}"
        log.warning("%s request failed: %s", self.model, reason)
        return VLMResult.failed(reason)


def _check_settings(
    max_retries: int, invalid_reply_retries: int, image_max_side: int, extra: dict[str, Any]
) -> None:
    """Reject settings that could only fail later, on every request."""
    if max_retries < 0 or invalid_reply_retries < 0:
        raise ValueError("max_retries and invalid_reply_retries must not be negative")
    if image_max_side < 1:
        raise ValueError(f"image_max_side must be positive, got {image_max_side}")
    clashing = sorted(_RESERVED_EXTRA & extra.keys())
    if clashing:
        raise ValueError(f"extra settings {clashing} are set by the backend itself and cannot be overridden")
    try:
        json.dumps(extra)
    except TypeError as err:
        raise ValueError(f"extra settings must be JSON-serialisable payload fields: {err}") from None
