"""The model seam: one small generic interface, :class:`Model`, for vision-language models and image
generators alike.

``generate(requests)`` is the batch call: one result per request, in order. A result is either parsed
output or an explicit failure with its reason; a failure is never turned into a verdict, a score or a
default answer by anything downstream.

``stream(requests, on_result, window=None)`` is the one streaming method. It takes a lazy iterable of
requests of any length (a source with no request ready yet, because its next request needs an answer
still in flight, yields :data:`PENDING` and the stream waits for the next result before asking again; an
asynchronous stream asks again after a moment too, for a source fed from elsewhere), calls
``on_result(position, result)`` as each result exists (so a caller, such as
the response cache, keeps it before the stream ends) and returns nothing. At most ``window`` requests are
taken from the iterable ahead of their results, so memory is bounded by the window, whatever the number
of requests. By default a synchronous backend is handed one window of requests at a time (a backend that
finishes requests one by one reports each as it completes by overriding ``_answer_window``); an
asynchronous backend overrides ``stream`` so that each finished request frees its slot for the next one at
once (no waves: one slow reply holds back nobody else).

A model declares what its callers need as plain values: ``cache_file`` (the response cache's file, None
when uncached), ``stats`` (what it counted of its calls, empty when it counts nothing) and, for a
vision-language model, ``image_limits`` (the images it accepts).
"""

from __future__ import annotations

import hashlib
import json
import logging
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Final, Generic, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sciir.images.payload import ImageLimits

logger = logging.getLogger(__name__)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def image_sha256(image: bytes) -> str:
    """The sha256 of an image's bytes: an image payload (``sciir.images.payload.Payload``) carries it,
    hashed once when made, so every request of that image reuses it."""
    return getattr(image, "sha256", None) or sha256_hex(image)


RequestT = TypeVar("RequestT", bound=BaseModel)


class VLMRequest(BaseModel):
    """One call to a vision-language model.

    ``prompt`` is what a real model reads; ``context`` carries the same facts as
    structured fields (caption, checklist ...) for backends that do not read prose.
    ``images`` are encoded image files (PNG, JPEG or WebP; see ``sciir.images.payload``). ``top_logprobs`` asks, instead of a JSON object, for the first
    answer token's most likely alternatives with their log-probabilities (VQAScore reads P("yes")
    from them); a backend that cannot return them fails the request.
    """

    task: str
    prompt: str
    images: list[bytes] = Field(default_factory=list, repr=False)
    json_schema: dict[str, Any] | None = None
    context: dict[str, Any] = Field(default_factory=dict)
    template_version: str = "1"
    seed: int | None = None
    # OpenAI-compatible servers return at most 20 alternatives per token.
    top_logprobs: int | None = Field(default=None, ge=1, le=20)

    @model_validator(mode="after")
    def _one_kind_of_answer(self) -> VLMRequest:
        """A reply is either a JSON object or a token's log-probabilities; asking for both is a bug."""
        if self.json_schema is not None and self.top_logprobs is not None:
            raise ValueError(
                f"task {self.task}: a request asks for a JSON object (json_schema) or for first-token "
                "log-probabilities (top_logprobs), not both"
            )
        return self

    def with_images_later(
        self, digests: Sequence[str], read: Callable[[], list[bytes]]
    ) -> Deferred[VLMRequest]:
        """This request, made without images, for images known now by their sha256 ``digests`` and read
        (``read``) only when the request must be sent."""
        key = self.content_key() | {"images": list(digests)}
        return Deferred(key, lambda: self.model_copy(update={"images": read()}))

    def content_key(self) -> dict[str, Any]:
        """What identifies this request's content (images by hash)."""
        key: dict[str, Any] = {
            "task": self.task,
            "template_version": self.template_version,
            "prompt": self.prompt,
            "images": [image_sha256(img) for img in self.images],
            "json_schema": self.json_schema,
            "context": self.context,
            "seed": self.seed,
        }
        # Only when set, so every other request keeps its key and so its cached answer.
        if self.top_logprobs is not None:
            key["top_logprobs"] = self.top_logprobs
        return key


class Pending:
    """The type of :data:`PENDING`: a request source's "nothing ready yet, an answer in flight will make
    more" (a task that needs an earlier task's answer). A stream waits for its next result, then asks the
    source again; a source that yields it with nothing in flight would wait forever, so the stream raises.
    """

    def __repr__(self) -> str:
        return "PENDING"


PENDING: Final = Pending()


def no_request_in_flight() -> RuntimeError:
    """The error of a source that waits (:data:`PENDING`) for answers when none is awaited."""
    return RuntimeError("the request source waits for an answer (PENDING) but no request is in flight")


class Deferred(Generic[RequestT]):
    """A request whose content key is known before the request is made: ``key`` is exactly what
    ``make().content_key()`` gives. The response cache makes it only on a miss, so a cached answer never
    reads the request's images (a warm rerun reads no image file). ``make`` raises OSError or ValueError,
    naming the input, when the request cannot be made; that request then fails with the reason.

    Only a caching wrapper takes these: a request sent every time gains nothing from a key known early.
    """

    def __init__(self, key: dict[str, Any], make: Callable[[], RequestT]) -> None:
        self.key, self.make = key, make

    def content_key(self) -> dict[str, Any]:
        return self.key


class VLMResult(BaseModel):
    """Parsed output, or a failure with its reason (and the raw text when there was one)."""

    output: dict[str, Any] | None = None
    failure: str | None = None
    raw: str | None = None
    usage: dict[str, float] = Field(default_factory=dict)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None and self.output is not None

    @classmethod
    def failed(cls, reason: str, raw: str | None = None) -> VLMResult:
        return cls(failure=reason, raw=raw)


class GenerationRequest(BaseModel):
    """One image to generate: what every contestant generator receives, the prompt, a seed and a size.

    Nothing derived from the annotation (labels, relations, a plan) can be attached: unknown fields
    are rejected, so a contestant cannot be handed the answer key by mistake.
    """

    model_config = ConfigDict(extra="forbid")

    sample_id: str
    prompt: str
    seed: int = 0
    width: int = 1024
    height: int = 1024

    def content_key(self) -> dict[str, Any]:
        return self.model_dump()


class PlanRequest(GenerationRequest):
    """A request for a *reference* renderer only: the prompt plus the annotation's structured plan
    (``{"labels": [...], "edges": [[src, dst], ...]}``). The generate pipeline builds these only
    for generators whose role is ``reference``."""

    plan: dict[str, Any]


class GenerationResult(BaseModel):
    """PNG bytes, or a failure with its reason. ``meta`` records what the generator did.

    ``usage`` holds what a paid call consumed (``http_requests``, tokens, ``cost_usd``), as in
    :class:`VLMResult`; empty for local generators.
    """

    sample_id: str
    image: bytes | None = Field(default=None, repr=False)
    failure: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    usage: dict[str, float] = Field(default_factory=dict)
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.failure is None and self.image is not None


class Backend:
    """Common identity of every backend: what goes into the cache key besides the request."""

    def __init__(self, **config: Any) -> None:
        self.config = config

    def identity(self) -> dict[str, Any]:
        """Backend name, model and decoding settings; never secrets."""
        public = {
            k: v for k, v in self.config.items() if "key" not in k.lower() and "secret" not in k.lower()
        }
        return {"backend": type(self).__name__, "config": public}

    def identity_hash(self) -> str:
        return sha256_hex(json.dumps(self.identity(), sort_keys=True, default=str).encode())


Req = TypeVar("Req", VLMRequest, GenerationRequest)
Res = TypeVar("Res", VLMResult, GenerationResult)

# Requests a synchronous backend is handed per call when streaming, unless it knows better.
DEFAULT_STREAM_WINDOW = 16


_RENAMED_WINDOWS_WARNED: set[str] = set()


def window_setting(section: str, window: int | None, batch_size: int | None) -> int | None:
    """A stage's stream window from its parameters: ``window``, else the former ``batch_size`` (still read,
    with a warning once per process, so an old configuration keeps working); None leaves it to the
    backend."""
    if batch_size is not None and section not in _RENAMED_WINDOWS_WARNED:
        _RENAMED_WINDOWS_WARNED.add(section)
        logger.warning(
            "%s.batch_size is read as %s.window (requests taken ahead of the replies): requests stream "
            "through a window now, never in batches; rename the key",
            section,
            section,
        )
    return window if window is not None else batch_size


class Model(Backend, Generic[Req, Res]):
    """A model behind the seam: the batch call and the one streaming method (see the module docstring)."""

    # What the model counted of the calls it was given: a response cache's hits, misses and failures, and
    # the usage of the calls it sent (``sciir.backends.cache``); empty for a model that counts nothing.
    stats: Mapping[str, float] = MappingProxyType({})

    @abstractmethod
    def generate(self, requests: Sequence[Req]) -> list[Res]:
        """One result per request, in order; never raises for a single bad request."""

    @property
    def stream_window(self) -> int:
        """The requests :meth:`stream` takes ahead of their results unless told otherwise."""
        return DEFAULT_STREAM_WINDOW

    @property
    def cache_file(self) -> Path | None:
        """The file of the response cache that keeps this model's answers; None when it has none."""
        return None

    def stream(
        self,
        requests: Iterable[Req | Pending],
        on_result: Callable[[int, Res], None],
        window: int | None = None,
    ) -> None:
        """``on_result(position, result)`` once for every request of a lazy stream, as each completes.

        At most ``window`` (default :attr:`stream_window`) requests are taken ahead of their results: each
        window is taken from the iterable only when the previous one has been answered
        (:meth:`_answer_window`); a :data:`PENDING` from the iterable ends the window early, so the answers
        it waits for arrive. An exception raised by ``on_result`` or by the iterable stops the stream.
        """
        size = window or self.stream_window
        if size < 1:
            raise ValueError(f"a stream's window must be at least 1, got {size}")
        offset: int  # declared: the default of `shifted` below reads it before mypy infers it
        iterator, offset = iter(requests), 0
        while True:
            chunk, waiting = _take_window(iterator, size)
            if not chunk:
                if waiting:
                    raise no_request_in_flight()
                return
            reported = 0

            def shifted(index: int, result: Res, start: int = offset) -> None:
                nonlocal reported
                reported += 1
                on_result(start + index, result)

            results = self._answer_window(chunk, shifted)
            if len(results) != len(chunk) or reported != len(chunk):
                raise RuntimeError(
                    f"the backend returned {len(results)} results and reported {reported} "
                    f"for {len(chunk)} requests"
                )
            offset += len(chunk)

    def _answer_window(self, requests: Sequence[Req], on_result: Callable[[int, Res], None]) -> list[Res]:
        """One window of a stream: :meth:`generate`, then ``on_result(index, result)`` for each result. A
        backend that finishes requests one by one overrides it to report each as it completes."""
        results = self.generate(requests)
        for index, result in enumerate(results):
            on_result(index, result)
        return results


def streamed(model: Model[Req, Res], requests: Sequence[Req], window: int | None = None) -> list[Res]:
    """``model.stream`` over a batch, the results in request order: the ``generate`` of a model whose
    work is its stream."""
    results: list[Res | None] = [None] * len(requests)
    model.stream(requests, results.__setitem__, window)
    if any(result is None for result in results):
        raise RuntimeError(f"{type(model).__name__} left requests of the batch without a result")
    return cast(list[Res], results)


def _take_window(iterator: Iterator[Req | Pending], size: int) -> tuple[list[Req], bool]:
    """Up to ``size`` requests from ``iterator``, and whether it stopped early to wait (:data:`PENDING`)."""
    chunk: list[Req] = []
    for item in iterator:
        if isinstance(item, Pending):
            return chunk, True
        chunk.append(item)
        if len(chunk) == size:
            break
    return chunk, False


class VisionLanguageModel(Model[VLMRequest, VLMResult]):
    """A model that answers a prompt about images."""

    @property
    def image_limits(self) -> ImageLimits:
        """The images this model accepts (longest side, formats): callers prepare each image under them
        once. Any image by default."""
        return ImageLimits()


GeneratorRole = Literal["contestant", "reference"]
GENERATOR_ROLES: tuple[GeneratorRole, ...] = ("contestant", "reference")
CONTESTANT: GeneratorRole = GENERATOR_ROLES[0]  # ranked; a reference never is
REFERENCE: GeneratorRole = GENERATOR_ROLES[1]


class ImageGenerator(Model[GenerationRequest, GenerationResult]):
    """A text-to-image backend.

    ``role`` says what its images are for: a ``contestant`` is ranked and receives only
    :class:`GenerationRequest` (prompt, seed, size); a ``reference`` (e.g. a renderer of the
    annotation's plan, for calibrating the judge) receives :class:`PlanRequest` and is never ranked.
    A class with ``reads_annotation`` needs the plan, so it can only ever be a reference.
    """

    role: GeneratorRole = "contestant"
    reads_annotation: ClassVar[bool] = False
