"""``openai_images``: any OpenAI-compatible images API (``POST /images/generations``) as an image generator.

Transport (event loop, shared session, concurrency, retries with backoff and Retry-After, timeouts)
lives in :mod:`sciir.backends.http.client`, as for the ``openai`` chat backend; this module builds the
payload and turns the reply into a verified PNG of the requested size.

OpenAI's ``gpt-image`` models always answer in base64 and accept neither ``response_format`` nor
``seed``: set ``send_response_format: false`` and ``send_seed: false`` for them. Servers that take a
seed (self-hosted ones) get the request's seed, so a rerun asks for the same image.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from PIL import Image, UnidentifiedImageError

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator
from sciir.backends.http.client import TRANSPORT_DEFAULTS, HTTPBackend
from sciir.backends.http.session import CallFailed, HTTPSession
from sciir.images.colour import to_srgb
from sciir.images.decode import UnreadableImageError

log = logging.getLogger(__name__)

BACKEND_NAME = "openai_images"
IMAGES_PATH = "/images/generations"
_SIZE = re.compile(r"^[1-9][0-9]*x[1-9][0-9]*$")
# The transport settings this backend takes; any other setting is an extra payload field.
_TRANSPORT_SETTINGS = (
    "api_key",
    "concurrency",
    "timeout_s",
    "max_retries",
    "retry_base_delay_s",
    "retry_max_delay_s",
    "requests_per_minute",
)


class UnusableImage(ValueError):
    """An images reply that holds no image Pillow can decode; the message says what is wrong."""


def size_text(width: int, height: int) -> str:
    """A size as the images API writes it: ``"1024x768"`` (width first)."""
    return f"{width}x{height}"


def reply_image(body: Mapping[str, Any]) -> bytes:
    """The decoded bytes of the first image in an images reply (its ``b64_json``)."""
    data = body.get("data")
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        raise UnusableImage("the reply has no 'data' items")
    encoded = data[0].get("b64_json")
    if not isinstance(encoded, str) or not encoded:
        hint = " (it holds a URL: the server ignored response_format b64_json)" if data[0].get("url") else ""
        raise UnusableImage(f"the reply's first item has no 'b64_json'{hint}")
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as err:
        raise UnusableImage(f"'b64_json' is not base64: {err}") from None


def fitted_png(image: bytes, width: int, height: int) -> tuple[bytes, tuple[int, int]]:
    """``image`` verified and decoded by Pillow, as an sRGB PNG of ``width`` x ``height``, and the size
    the server sent (the image is resized when that differs). A served PNG that is already that (8-bit
    RGB, no colour profile or gamma to apply, the size asked for) is kept as its own bytes: encoding it
    again would cost about 20 ms a megapixel for the same pixels."""
    try:
        with Image.open(io.BytesIO(image)) as probe:
            probe.verify()  # catches truncated and corrupt files that a lazy open would accept
        with Image.open(io.BytesIO(image)) as opened:
            opened.load()
            served = opened.size
            if served == (width, height) and _plain_srgb_png(opened):
                return image, served
            picture = to_srgb(opened)
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, Image.DecompressionBombError) as err:
        raise UnusableImage(f"the image is not readable ({type(err).__name__}: {err})") from None
    except UnreadableImageError as err:
        raise UnusableImage(str(err)) from None
    if served != (width, height):
        picture = picture.resize((width, height), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue(), served


def _plain_srgb_png(image: Image.Image) -> bool:
    """An 8-bit RGB PNG whose pixels are sRGB as they are (nothing to convert, composite or correct)."""
    adjusting = ("icc_profile", "gamma", "transparency", "chromaticity", "srgb_intent")
    return image.format == "PNG" and image.mode == "RGB" and not any(key in image.info for key in adjusting)


def image_usage(body: Mapping[str, Any]) -> dict[str, float]:
    """Tokens the server reports (``gpt-image`` style ``input_tokens``/``output_tokens``), under the
    names the chat backend uses; absent counts are left out."""
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        return {}
    names = {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens"}
    return {
        ours: float(usage[theirs])
        for theirs, ours in names.items()
        if isinstance(usage.get(theirs), int | float)
    }


class OpenAIImagesGenerator(HTTPBackend[GenerationRequest, GenerationResult], ImageGenerator):
    """Generates with a model behind an OpenAI-compatible ``/images/generations`` endpoint.

    Args (the transport's among them, from ``api_key`` to ``requests_per_minute``, are taken out of
    ``settings`` by :meth:`~sciir.backends.http.client.HTTPBackend.split_settings`):
        base_url: the API root, e.g. ``https://api.openai.com/v1``, or a list of the roots of replicas of
            one model (each request to the least busy, a retry to another).
        model: the model name the server knows.
        api_key: sent as a bearer token; never logged and never part of the identity.
        concurrency: requests in flight at once.
        max_retries: repeats of a request after 408/409/429/5xx, a timeout, a dropped connection or a
            body that is not JSON.
        timeout_s: the limit for one request (image generation is slow).
        retry_base_delay_s, retry_max_delay_s: exponential backoff bounds when the server sends no Retry-After.
        requests_per_minute: an optional client-side rate limit.
        server_size: ask the server for this size (``"1024x1024"``) instead of each request's own, for
            servers that accept only a few sizes; the image is resized to the requested size.
        send_seed: send the request's seed (servers that do not know the field reject it).
        send_response_format: send ``response_format: b64_json`` (``gpt-image`` models reject it).
        price_per_image_usd: when set, each answered request's usage carries its ``cost_usd``.
        any other setting: a further payload field (``quality``, ``style`` ...), sent with every request.

    Only what changes the image (server, model, size, seed use, extra fields) forms the identity and so
    the cache key; concurrency, retries, timeouts, limits and prices do not.
    """

    reserved_fields: ClassVar[frozenset[str]] = frozenset(
        {"model", "prompt", "size", "n", "response_format", "seed"}
    )
    # Image generation is slow: fewer requests at once, each given longer.
    transport_defaults: ClassVar[Mapping[str, Any]] = {
        **{name: TRANSPORT_DEFAULTS[name] for name in _TRANSPORT_SETTINGS},
        "concurrency": 4,
        "timeout_s": 300.0,
    }

    def __init__(
        self,
        *,
        base_url: str | Sequence[str],
        model: str,
        server_size: str | None = None,
        send_seed: bool = True,
        send_response_format: bool = True,
        price_per_image_usd: float | None = None,
        **settings: Any,
    ) -> None:
        transport, extra = self.split_settings(settings)
        _check_settings(transport["max_retries"], server_size)
        super().__init__(
            base_url=base_url,
            model=model,
            transport=transport,
            extra=extra,
            server_size=server_size,
            send_seed=send_seed,
        )
        self.server_size = server_size
        self.send_seed = send_seed
        self.send_response_format = send_response_format
        self.price_per_image_usd = price_per_image_usd

    def build_payload(self, request: GenerationRequest) -> dict[str, Any]:
        """The images-API body for ``request``: one image of the requested (or configured) size."""
        payload = {
            **self._extra,
            "model": self.model,
            "prompt": request.prompt,
            "size": self.server_size or size_text(request.width, request.height),
            "n": 1,
        }
        if self.send_response_format:
            payload["response_format"] = "b64_json"
        if self.send_seed:
            payload["seed"] = request.seed
        return payload

    async def _call_one(self, session: HTTPSession, request: GenerationRequest) -> GenerationResult:
        """Ask for one image, then verify and size it (off the event loop: decoding is CPU work)."""
        try:
            reply = await session.post(IMAGES_PATH, self.build_payload(request))
        except CallFailed as err:
            return self._failed(request, str(err), {"http_requests": float(err.attempts)})
        usage = {"http_requests": float(reply.attempts), **image_usage(reply.body), **self._cost()}
        try:
            image = reply_image(reply.body)
            png, served = await asyncio.to_thread(fitted_png, image, request.width, request.height)
        except UnusableImage as err:
            return self._failed(request, f"the server's reply holds no usable image: {err}", usage)
        meta = {
            "backend": BACKEND_NAME,
            "model": self.model,
            "served_size": size_text(*served),
            "resized": served != (request.width, request.height),
        }
        revised = reply.body["data"][0].get("revised_prompt")
        if isinstance(revised, str):
            meta["revised_prompt"] = revised
        return GenerationResult(sample_id=request.sample_id, image=png, meta=meta, usage=usage)

    def _cost(self) -> dict[str, float]:
        """The estimated cost of one answered request, when a price is configured."""
        return {"cost_usd": self.price_per_image_usd} if self.price_per_image_usd is not None else {}

    def _failed(self, request: GenerationRequest, reason: str, usage: dict[str, float]) -> GenerationResult:
        reason = f"sample {request.sample_id}: {reason}"
        log.warning("%s generation failed: %s", self.model, reason)
        meta = {"backend": BACKEND_NAME, "model": self.model}
        return GenerationResult(sample_id=request.sample_id, failure=reason, meta=meta, usage=usage)

    def _failure(self, request: GenerationRequest, err: Exception) -> GenerationResult:
        """The failure result for a request whose handling raised unexpectedly (a bug, not the server)."""
        return self._failed(request, f"unexpected {type(err).__name__}: {err}", {"http_requests": 0.0})


def _check_settings(max_retries: int, server_size: str | None) -> None:
    """Reject settings that could only fail later, on every request."""
    if max_retries < 0:
        raise ValueError(f"max_retries must not be negative, got {max_retries}")
    if server_size is not None and not _SIZE.match(server_size):
        raise ValueError(f"server_size must look like '1024x1024' (width x height), got {server_size!r}")
