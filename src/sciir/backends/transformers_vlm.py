"""``transformers``: a local vision-language model (Qwen2.5-VL / Qwen3-VL style) from a local folder.

Any model that ``AutoModelForImageTextToText`` and ``AutoProcessor`` load from a folder works: the
processor's chat template places the images and the prompt, and requests are generated in batches of
``batch_size`` with left padding, on ``device`` (``auto``: the first GPU when there is one) in ``dtype``
(``auto``: the checkpoint's own). The model is loaded on the first call, straight onto its device
(:mod:`sciir.backends.transformers_runtime`; importing this module imports no torch).

Every reply is decoded under its request's JSON schema with xgrammar (:mod:`sciir.backends.schema_grammar`;
a request without a schema, under "any JSON object"), so whatever the model, a reply that ends is valid
JSON fitting its schema; each is still parsed and checked as every backend's is. A reply cut at
``max_new_tokens`` before its JSON closed fails with that reason. A request for first-token
log-probabilities (``top_logprobs``, VQAScore) generates one free token and returns its most likely
alternatives, with log-probabilities from the model's raw logits, as ``{"answer", "top_logprobs"}``.

Decoding is greedy by default. With ``temperature > 0`` each request is sampled on its own under its
``seed`` (a request without one fails, as with the ``openai`` backend). ``model.generate`` takes no
``torch.Generator``, so the global generator is seeded inside ``torch.random.fork_rng`` (the caller's
random stream is left as it was): a sample depends only on the request and the configuration, not on
the batch it came in.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sciir.backends.base import DEFAULT_STREAM_WINDOW, VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.fingerprint import folder_fingerprint
from sciir.backends.image_upload import UnreadableImage, png_for_upload
from sciir.backends.replies import InvalidReply, parse_reply
from sciir.backends.schema_grammar import UnsupportedGrammar
from sciir.backends.transformers_runtime import (
    LoadedModel,
    eos_ids,
    load_model,
    seeded_torch,
    top_alternatives,
)
from sciir.images.payload import ImageLimits

log = logging.getLogger(__name__)

# Generation arguments the backend sets itself; passing them as extra settings would silently fight it.
_RESERVED_GENERATE_ARGS = frozenset(
    {
        "max_new_tokens",
        "do_sample",
        "temperature",
        "generation_config",
        "logits_processor",
        "output_logits",
        "output_scores",
        "return_dict_in_generate",
    }
)
# How replies are decoded, in the identity: answers cached before constrained decoding are not reused.
GRAMMAR_DECODING = "JSON schema grammar (xgrammar), compact separators"


class UnseededSampling(ValueError):
    """A request to sample without a seed: its answer could be neither reproduced nor cached honestly."""


@dataclass(frozen=True)
class PreparedRequest:
    """One request ready for the processor: its position in the call, chat text, decoded images and the
    compiled grammar its reply is decoded under (None for a first-token request, decoded freely)."""

    index: int
    request: VLMRequest
    text: str
    images: list[Any]  # PIL images
    grammar: Any = None  # xgrammar.CompiledGrammar


def rgb_images(images: Sequence[bytes], max_side: int) -> list[Any]:
    """``images`` decoded as RGB PIL images no larger than ``max_side``; names the image that cannot be read."""
    from PIL import Image

    decoded = []
    for number, image in enumerate(images, start=1):
        try:
            png = png_for_upload(image, max_side)
        except UnreadableImage as err:
            raise UnreadableImage(f"image {number} of {len(images)} is not a readable image: {err}") from None
        with Image.open(io.BytesIO(png)) as opened:
            decoded.append(opened.convert("RGB"))
    return decoded


def chat_messages(request: VLMRequest) -> list[dict[str, Any]]:
    """One user turn: the request's images, then its prompt (the order Qwen-VL models are trained on)."""
    content: list[dict[str, Any]] = [{"type": "image"} for _ in request.images]
    content.append({"type": "text", "text": request.prompt})
    return [{"role": "user", "content": content}]


def completion_length(tokens: Sequence[int], eos_ids: frozenset[int]) -> tuple[int, bool]:
    """Generated tokens up to and including the first end token, and whether one was reached.

    ``generate`` pads rows that finished early; the padding is not part of the reply.
    """
    for position, token in enumerate(tokens):
        if token in eos_ids:
            return position + 1, True
    return len(tokens), False


def reply_result(request: VLMRequest, text: str, usage: dict[str, float], cut_at: int | None) -> VLMResult:
    """The JSON object in ``text`` checked against the request's JSON schema (as the ``openai`` backend
    checks it), or a failure that keeps ``text``. ``cut_at`` is the token limit when generation stopped there."""
    try:
        return VLMResult(output=parse_reply(text, request.json_schema), raw=text, usage=usage)
    except InvalidReply as err:
        hint = f" (the reply was cut at max_new_tokens={cut_at})" if cut_at is not None else ""
        reason = f"invalid reply for task {request.task}: {err}{hint}"
        return VLMResult(failure=reason, raw=text, usage=usage)


class TransformersVLM(VisionLanguageModel):
    """A vision-language model loaded with ``transformers`` from the local folder ``model_path``.

    Args:
        model_path: a folder saved with ``save_pretrained`` (model, tokenizer, image processor, chat template).
        device: torch device to run on (``cpu``, ``cuda``, ``cuda:1`` ...); ``auto``: ``cuda`` when a GPU
            is visible, else ``cpu``.
        dtype: torch dtype name for the weights, e.g. ``float32`` or ``bfloat16``; ``auto``: the
            checkpoint's own.
        batch_size: requests generated together (greedy decoding only; sampling goes one by one).
        max_new_tokens: the longest reply, in tokens.
        temperature: 0 decodes greedily; above 0 samples, seeded by each request's ``seed``.
        image_max_side: images are downscaled to at most this many pixels on their longer side first.
        max_string_chars: free-text strings of a reply (those its schema leaves unbounded) get at most
            this many characters, so a reply under a schema with bounded arrays always ends within
            ``max_new_tokens`` (a small, random or rambling model); None leaves them to the model.
        extra: further ``model.generate`` arguments (``repetition_penalty``, ``top_p`` ...).

    The identity (the cache key) holds the path, a fingerprint of the folder's files, the dtype and the
    decoding settings; device and batch size are left out, as they change speed, not answers.
    """

    def __init__(
        self,
        *,
        model_path: str,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = 4,
        max_new_tokens: int = 1024,
        temperature: float = 0.0,
        image_max_side: int = 1024,
        max_string_chars: int | None = None,
        **extra: Any,
    ) -> None:
        _check_settings(batch_size, max_new_tokens, temperature, image_max_side, extra)
        if max_string_chars is not None and max_string_chars < 1:
            raise ValueError(f"max_string_chars must be positive or null, got {max_string_chars}")
        super().__init__(
            model_path=model_path,
            dtype=dtype,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            image_max_side=image_max_side,
            max_string_chars=max_string_chars,
            **extra,
        )
        self.model_path = Path(model_path)
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.image_max_side = image_max_side
        self.max_string_chars = max_string_chars
        self.generate_kwargs = extra
        self._loaded: LoadedModel | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_path={str(self.model_path)!r}, device={self.device!r})"

    @property
    def sampling(self) -> bool:
        return self.temperature > 0

    @property
    def stream_window(self) -> int:
        """The default window rounded up to whole batches, so a window's requests fill every batch."""
        return -(-DEFAULT_STREAM_WINDOW // self.batch_size) * self.batch_size

    def identity(self) -> dict[str, Any]:
        """The configuration, a fingerprint of the model folder (changed weights are a new model) and the
        way replies are decoded."""
        return {
            **super().identity(),
            "weights": folder_fingerprint(self.model_path),
            "decoding": GRAMMAR_DECODING,
        }

    @property
    def image_limits(self) -> ImageLimits:
        """Any format: images are decoded here, downscaled to ``image_max_side``."""
        return ImageLimits(self.image_max_side)

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        """One result per request, in order; a load error fails every request, other errors only their own."""
        return self._run(requests, on_result=None)

    def _answer_window(
        self, requests: Sequence[VLMRequest], on_result: Callable[[int, VLMResult], None]
    ) -> list[VLMResult]:
        """As :meth:`generate`, calling ``on_result(index, result)`` as each batch of requests completes."""
        return self._run(requests, on_result)

    def _run(
        self, requests: Sequence[VLMRequest], on_result: Callable[[int, VLMResult], None] | None
    ) -> list[VLMResult]:
        results: dict[int, VLMResult] = {}

        def keep(index: int, result: VLMResult) -> None:
            results[index] = result
            if on_result is not None:
                on_result(index, result)

        try:
            loaded = self._loaded_model()
        except Exception as err:  # any load error (missing folder, bad config) is this batch's failure
            reason = (
                f"could not load the transformers model from {self.model_path}: {type(err).__name__}: {err}"
            )
            log.warning("%s", reason)
            for index, request in enumerate(requests):
                keep(index, VLMResult.failed(f"task {request.task}: {reason}"))
            return [results[index] for index in range(len(requests))]
        # Requests are prepared one batch at a time, so only one batch's decoded images are held at once.
        chunk_size = 1 if self.sampling else self.batch_size
        for start in range(0, len(requests), chunk_size):
            chunk = []
            for index in range(start, min(start + chunk_size, len(requests))):
                try:
                    chunk.append(self._prepare(loaded, index, requests[index]))
                except Exception as err:  # one unreadable request must not stop the batch
                    keep(index, self._failure(requests[index], err))
            if chunk:
                for item, result in zip(chunk, self._generate_chunk(loaded, chunk), strict=True):
                    keep(item.index, result)
        return [results[index] for index in range(len(requests))]

    def _loaded_model(self) -> LoadedModel:
        if self._loaded is None:
            self._loaded = load_model(self.model_path, self.device, self.dtype, self.max_string_chars)
        return self._loaded

    def _prepare(self, loaded: LoadedModel, index: int, request: VLMRequest) -> PreparedRequest:
        """Chat text, decoded images and the reply's grammar for one request."""
        if self.sampling and request.seed is None:
            raise UnseededSampling(
                f"sampled decoding (temperature {self.temperature:g}) needs a seed on the request, so that "
                "its answer can be reproduced and cached; none was given"
            )
        grammar = None if request.top_logprobs is not None else loaded.grammars.grammar(request.json_schema)
        images = rgb_images(request.images, self.image_max_side)
        text = loaded.processor.apply_chat_template(
            chat_messages(request), add_generation_prompt=True, tokenize=False
        )
        return PreparedRequest(index, request, text, images, grammar)

    def _generate_chunk(self, loaded: LoadedModel, chunk: list[PreparedRequest]) -> list[VLMResult]:
        """Results for one batch; when the batch fails as a whole, each request is tried alone."""
        try:
            return self._generate_batch(loaded, chunk)
        except Exception as err:
            if len(chunk) == 1:
                return [self._failure(chunk[0].request, err)]
            log.info(
                "batch of %d failed (%s: %s); generating one by one", len(chunk), type(err).__name__, err
            )
            return [result for item in chunk for result in self._generate_chunk(loaded, [item])]

    def _generate_batch(self, loaded: LoadedModel, batch: list[PreparedRequest]) -> list[VLMResult]:
        """Results for ``batch``: its first-token requests generated together, then its replies."""
        first_token = [item for item in batch if item.request.top_logprobs is not None]
        replies = [item for item in batch if item.request.top_logprobs is None]
        results: dict[int, VLMResult] = {}
        for group, generate in ((first_token, self._first_tokens), (replies, self._replies)):
            if group:
                results.update(zip([item.index for item in group], generate(loaded, group), strict=True))
        return [results[item.index] for item in batch]

    def _replies(self, loaded: LoadedModel, batch: list[PreparedRequest]) -> list[VLMResult]:
        """Generate the replies of ``batch`` together, each under its grammar, and parse each."""
        constraint = loaded.grammars.constraint([item.grammar for item in batch])
        inputs, output = self._generate(loaded, batch, logits_processor=[constraint])
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = loaded.processor.batch_decode(new_tokens, skip_special_tokens=True)
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        stop_ids = eos_ids(loaded.model.generation_config.eos_token_id)
        results = []
        for item, text, prompt_length, row in zip(
            batch, texts, prompt_tokens, new_tokens.tolist(), strict=True
        ):
            length, finished = completion_length(row, stop_ids)
            usage = {"prompt_tokens": float(prompt_length), "completion_tokens": float(length)}
            cut_at = None if finished else self.max_new_tokens
            results.append(reply_result(item.request, text, usage, cut_at))
        return results

    def _first_tokens(self, loaded: LoadedModel, batch: list[PreparedRequest]) -> list[VLMResult]:
        """For each request of ``batch``, its first answer token and that token's most likely
        alternatives with their log-probabilities (from the raw logits, before any decoding setting)."""
        import torch

        inputs, output = self._generate(
            loaded, batch, max_new_tokens=1, output_logits=True, return_dict_in_generate=True
        )
        logprobs = torch.log_softmax(output.logits[0].float(), dim=-1)
        tokenizer = loaded.processor.tokenizer
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        results = []
        for item, row, token, prompt_length in zip(
            batch, logprobs, output.sequences[:, -1].tolist(), prompt_tokens, strict=True
        ):
            answer = tokenizer.decode([token], skip_special_tokens=True)
            alternatives = top_alternatives(row, item.request.top_logprobs or 1, tokenizer.decode)
            usage = {"prompt_tokens": float(prompt_length), "completion_tokens": 1.0}
            first_token = {"answer": answer, "top_logprobs": alternatives}
            results.append(VLMResult(output=first_token, raw=answer, usage=usage))
        return results

    def _generate(
        self, loaded: LoadedModel, batch: list[PreparedRequest], **settings: Any
    ) -> tuple[Any, Any]:
        """The processor's inputs for ``batch`` and ``model.generate``'s output under ``settings``."""
        import torch

        images = [image for item in batch for image in item.images]
        inputs = loaded.processor(
            text=[item.text for item in batch], images=images or None, padding=True, return_tensors="pt"
        ).to(loaded.device, dtype=loaded.model.dtype)
        seed = batch[0].request.seed if self.sampling else None
        with seeded_torch(seed, loaded.device), torch.inference_mode():
            output = loaded.model.generate(**inputs, **(self._decoding() | settings))
        return inputs, output

    def _decoding(self) -> dict[str, Any]:
        """``model.generate`` arguments: greedy, or sampling at the configured temperature."""
        sampling = (
            {"do_sample": True, "temperature": self.temperature} if self.sampling else {"do_sample": False}
        )
        return {**self.generate_kwargs, "max_new_tokens": self.max_new_tokens, **sampling}

    def _failure(self, request: VLMRequest, err: Exception) -> VLMResult:
        """The failure result for a request whose preparation or generation raised."""
        if isinstance(err, UnreadableImage | UnseededSampling | UnsupportedGrammar):
            reason = f"task {request.task}: {err}"
        else:
            reason = f"task {request.task}: generation failed: {type(err).__name__}: {err}"
        log.warning("%s request failed: %s", self.model_path, reason)
        return VLMResult.failed(reason)


def _check_settings(
    batch_size: int, max_new_tokens: int, temperature: float, image_max_side: int, extra: dict[str, Any]
) -> None:
    """Reject settings that could only fail later, on every request."""
    if batch_size < 1 or max_new_tokens < 1 or image_max_side < 1:
        raise ValueError(
            f"batch_size, max_new_tokens and image_max_side must be positive, got "
            f"{batch_size}, {max_new_tokens} and {image_max_side}"
        )
    if temperature < 0:
        raise ValueError(f"temperature must not be negative, got {temperature}")
    clashing = sorted(_RESERVED_GENERATE_ARGS & extra.keys())
    if clashing:
        raise ValueError(f"extra settings {clashing} are set by the backend itself and cannot be overridden")
