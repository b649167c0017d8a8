"""``transformers``: a local vision-language model (Qwen2.5-VL / Qwen3-VL style) from a local folder.

Any model that ``AutoModelForImageTextToText`` and ``AutoProcessor`` load from a folder works: the
processor's chat template places the images and the prompt, requests are generated in batches with
left padding, and each reply is parsed as JSON and checked against the request's JSON schema.
The model is loaded on the first ``generate`` call (importing this module imports no torch).

Decoding is greedy by default. With ``temperature > 0`` each request is sampled on its own under its
``seed`` (a request without one fails, as with the ``openai`` backend). ``model.generate`` takes no
``torch.Generator``, so the global generator is seeded inside ``torch.random.fork_rng`` (the caller's
random stream is left as it was): a sample depends only on the request and the configuration, not on
the batch it came in.

Without torchvision: Qwen-VL processors also hold a video processor, and every video processor class
needs torchvision, so ``AutoProcessor`` refuses to load them (transformers issue #43986) even for
image-only use. Then the model's processor class is loaded without its video processor, with the
Pillow image processor that ``AutoImageProcessor`` picks when torchvision is absent
(``Qwen2VLImageProcessorPil``); images are prepared exactly as the full processor prepares them.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sciir.backends.base import VisionLanguageModel, VLMRequest, VLMResult
from sciir.backends.fingerprint import folder_fingerprint
from sciir.backends.openai_compat import UnreadableImage, png_for_upload
from sciir.backends.replies import InvalidReply, parse_reply

log = logging.getLogger(__name__)

# Generation arguments the backend sets itself; passing them as extra settings would silently fight it.
_RESERVED_GENERATE_ARGS = frozenset({"max_new_tokens", "do_sample", "temperature", "generation_config"})


class UnseededSampling(ValueError):
    """A request to sample without a seed: its answer could be neither reproduced nor cached honestly."""


@dataclass(frozen=True)
class PreparedRequest:
    """One request ready for the processor: its position in the call, chat text and decoded images."""

    index: int
    request: VLMRequest
    text: str
    images: list[Any]  # PIL images


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


def load_processor(model_path: Path) -> Any:
    """The model's processor; without torchvision, its image-only variant (see the module docstring)."""
    from transformers import AutoConfig, AutoProcessor
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING
    from transformers.utils import is_torchvision_available

    config = AutoConfig.from_pretrained(model_path, local_files_only=True)
    processor_class = PROCESSOR_MAPPING.get(type(config), None)
    if (
        is_torchvision_available()
        or processor_class is None
        or "video_processor" not in processor_class.get_attributes()
    ):
        return AutoProcessor.from_pretrained(model_path, local_files_only=True)
    return _without_video_processor(processor_class).from_pretrained(model_path, local_files_only=True)


def _without_video_processor(processor_class: type) -> type:
    """A subclass of ``processor_class`` that loads and needs no video processor.

    ``ProcessorMixin`` takes the list of sub-processors to load and type-check from ``__init__``'s
    signature, so a signature without ``video_processor`` leaves it out.
    """

    class ImageOnlyProcessor(processor_class):  # type: ignore[misc,valid-type]
        def __init__(
            self, image_processor: Any = None, tokenizer: Any = None, chat_template: Any = None, **kwargs
        ):
            super().__init__(
                image_processor=image_processor,
                tokenizer=tokenizer,
                video_processor=None,
                chat_template=chat_template,
                **kwargs,
            )

    ImageOnlyProcessor.__name__ = ImageOnlyProcessor.__qualname__ = f"ImageOnly{processor_class.__name__}"
    return ImageOnlyProcessor


@contextlib.contextmanager
def seeded_torch(seed: int | None, device: str) -> Iterator[None]:
    """Seed torch's global generators for the block, restoring the caller's state afterwards."""
    import torch

    if seed is None:
        yield
        return
    kind = torch.device(device).type
    devices = [] if kind == "cpu" else [torch.device(device).index or 0]
    with torch.random.fork_rng(devices=devices, device_type=kind):
        torch.manual_seed(seed)
        yield


class TransformersVLM(VisionLanguageModel):
    """A vision-language model loaded with ``transformers`` from the local folder ``model_path``.

    Args:
        model_path: a folder saved with ``save_pretrained`` (model, tokenizer, image processor, chat template).
        device: torch device to run on (``cpu``, ``cuda``, ``cuda:1`` ...).
        dtype: torch dtype name for the weights, e.g. ``float32`` or ``bfloat16``.
        batch_size: requests generated together (greedy decoding only; sampling goes one by one).
        max_new_tokens: the longest reply, in tokens.
        temperature: 0 decodes greedily; above 0 samples, seeded by each request's ``seed``.
        image_max_side: images are downscaled to at most this many pixels on their longer side first.
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
        **extra: Any,
    ) -> None:
        _check_settings(batch_size, max_new_tokens, temperature, image_max_side, extra)
        super().__init__(
            model_path=model_path,
            dtype=dtype,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            image_max_side=image_max_side,
            **extra,
        )
        self.model_path = Path(model_path)
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.image_max_side = image_max_side
        self.generate_kwargs = extra
        self._loaded: tuple[Any, Any] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_path={str(self.model_path)!r}, device={self.device!r})"

    @property
    def sampling(self) -> bool:
        return self.temperature > 0

    def identity(self) -> dict[str, Any]:
        """The configuration plus a fingerprint of the model folder (changed weights are a new model)."""
        return {**super().identity(), "weights": folder_fingerprint(self.model_path)}

    def generate(self, requests: Sequence[VLMRequest]) -> list[VLMResult]:
        """One result per request, in order; a load error fails every request, other errors only their own."""
        return self._run(requests, on_result=None)

    def generate_streaming(
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
            model, processor = self._model_and_processor()
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
                    chunk.append(self._prepare(processor, index, requests[index]))
                except Exception as err:  # one unreadable request must not stop the batch
                    keep(index, self._failure(requests[index], err))
            if chunk:
                for item, result in zip(chunk, self._generate_chunk(model, processor, chunk), strict=True):
                    keep(item.index, result)
        return [results[index] for index in range(len(requests))]

    def _model_and_processor(self) -> tuple[Any, Any]:
        if self._loaded is None:
            self._loaded = self._load()
        return self._loaded

    def _load(self) -> tuple[Any, Any]:
        """Model and processor from the local folder only; the processor pads on the left for batching."""
        if not (self.model_path / "config.json").is_file():
            state = "does not exist" if not self.model_path.exists() else "has no config.json"
            raise FileNotFoundError(f"model folder {self.model_path} {state}")
        import torch
        from transformers import AutoModelForImageTextToText

        torch_dtype = getattr(torch, self.dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise ValueError(f"dtype {self.dtype!r} is not a torch dtype name")
        processor = load_processor(self.model_path)
        processor.tokenizer.padding_side = "left"  # generation continues every row from its last token
        model = AutoModelForImageTextToText.from_pretrained(
            self.model_path, dtype=torch_dtype, local_files_only=True
        )
        return model.to(self.device).eval(), processor

    def _prepare(self, processor: Any, index: int, request: VLMRequest) -> PreparedRequest:
        """Chat text and decoded images for one request."""
        if self.sampling and request.seed is None:
            raise UnseededSampling(
                f"sampled decoding (temperature {self.temperature:g}) needs a seed on the request, so that "
                "its answer can be reproduced and cached; none was given"
            )
        images = rgb_images(request.images, self.image_max_side)
        text = processor.apply_chat_template(
            chat_messages(request), add_generation_prompt=True, tokenize=False
        )
        return PreparedRequest(index, request, text, images)

    def _generate_chunk(self, model: Any, processor: Any, chunk: list[PreparedRequest]) -> list[VLMResult]:
        """Results for one batch; when the batch fails as a whole, each request is tried alone."""
        try:
            return self._generate_batch(model, processor, chunk)
        except Exception as err:
            if len(chunk) == 1:
                return [self._failure(chunk[0].request, err)]
            log.info(
                "batch of %d failed (%s: %s); generating one by one", len(chunk), type(err).__name__, err
            )
            return [result for item in chunk for result in self._generate_chunk(model, processor, [item])]

    def _generate_batch(self, model: Any, processor: Any, batch: list[PreparedRequest]) -> list[VLMResult]:
        """Generate the replies of ``batch`` together and parse each."""
        import torch

        images = [image for item in batch for image in item.images]
        inputs = processor(
            text=[item.text for item in batch], images=images or None, padding=True, return_tensors="pt"
        ).to(self.device, dtype=model.dtype)
        seed = batch[0].request.seed if self.sampling else None
        with seeded_torch(seed, self.device), torch.inference_mode():
            output = model.generate(**inputs, **self._decoding())
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = processor.batch_decode(new_tokens, skip_special_tokens=True)
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        eos_ids = _eos_ids(model.generation_config.eos_token_id)
        results = []
        for item, text, prompt_length, row in zip(
            batch, texts, prompt_tokens, new_tokens.tolist(), strict=True
        ):
            length, finished = completion_length(row, eos_ids)
            usage = {"prompt_tokens": float(prompt_length), "completion_tokens": float(length)}
            cut_at = None if finished else self.max_new_tokens
            results.append(reply_result(item.request, text, usage, cut_at))
        return results

    def _decoding(self) -> dict[str, Any]:
        """``model.generate`` arguments: greedy, or sampling at the configured temperature."""
        sampling = (
            {"do_sample": True, "temperature": self.temperature} if self.sampling else {"do_sample": False}
        )
        return {**self.generate_kwargs, "max_new_tokens": self.max_new_tokens, **sampling}

    def _failure(self, request: VLMRequest, err: Exception) -> VLMResult:
        """The failure result for a request whose preparation or generation raised."""
        if isinstance(err, UnreadableImage | UnseededSampling):
            reason = f"task {request.task}: {err}"
        else:
            reason = f"task {request.task}: generation failed: {type(err).__name__}: {err}"
        log.warning("%s request failed: %s", self.model_path, reason)
        return VLMResult.failed(reason)


def _eos_ids(eos_token_id: int | list[int] | None) -> frozenset[int]:
    """The end-of-reply token ids of a generation config (one id, a list, or none)."""
    if eos_token_id is None:
        return frozenset()
    return frozenset([eos_token_id] if isinstance(eos_token_id, int) else eos_token_id)


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
