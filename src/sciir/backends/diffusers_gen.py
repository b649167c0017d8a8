"""``diffusers``: any local diffusers text-to-image pipeline, optionally with a LoRA adapter.

The pipeline is loaded on the first ``generate`` call (importing this module imports no torch).
Each request gets its own generator seeded with ``request.seed``, so an image depends only on
the request and the configuration; it is generated at ``resolution`` and resized to the
requested size. Up to ``batch_size`` prompts go through the pipeline in one call, each with its own
seeded generator (diffusers draws each sample's starting noise from its own generator), and the
pipeline batches classifier-free guidance's two passes itself; a batch that fails is retried one
request at a time, so a bad request fails alone. A prompt longer than a text encoder reads is cut at a word
boundary for that encoder (:mod:`sciir.backends.prompt_fit`; a pipeline's T5 encoder reads more than its
CLIP ones): one warning per pipeline folder in a process (a run makes a generator for each adapter and each
checkpoint it scores over the same base), and the image's meta says how many words were kept.
"""

from __future__ import annotations

import io
import json
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sciir.backends.base import GenerationRequest, GenerationResult, ImageGenerator
from sciir.backends.fingerprint import folder_fingerprint
from sciir.backends.prompt_fit import FittedPrompt, fit_prompts, pipeline_text_inputs

BACKEND_NAME = "diffusers"
# A prompt as each text encoder of the pipeline reads it, by call argument (prompt, prompt_2, ...).
Prompts = dict[str, FittedPrompt]
# An image drawn and not yet encoded: its request, its prompt as each text encoder read it, the PIL image.
Drawn = tuple[GenerationRequest, Prompts, Any]
logger = logging.getLogger(__name__)
# The pipeline folders and text-encoder limits whose prompt cuts this process has warned about.
_CUTS_SAID: set[tuple[str, str]] = set()
_CUTS_SAID_LOCK = threading.Lock()


class DiffusersGenerator(ImageGenerator):
    """Generates with the diffusers pipeline saved in ``pipeline_path`` (plus the LoRA in ``lora_path``).

    Args:
        pipeline_path: a local folder saved with ``save_pretrained`` (``model_index.json`` at its top).
        lora_path: a folder or file that ``load_lora_weights`` accepts, or None for the base model.
        steps: denoising steps per image.
        guidance_scale: classifier-free guidance (1.0 turns it off).
        device: torch device the pipeline runs on.
        dtype: torch dtype name for the weights, e.g. ``float32`` or ``bfloat16``.
        resolution: side in pixels the pipeline generates at; None uses the pipeline's own default.
        batch_size: prompts per pipeline call (1: one at a time).
        extra: further keyword arguments for every pipeline call (e.g. ``negative_prompt``).
    """

    def __init__(
        self,
        *,
        pipeline_path: str,
        lora_path: str | None = None,
        steps: int = 4,
        guidance_scale: float = 1.0,
        device: str = "cpu",
        dtype: str = "float32",
        resolution: int | None = None,
        batch_size: int = 1,
        **extra: Any,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"diffusers generator: batch_size must be at least 1, got {batch_size}")
        super().__init__(
            pipeline_path=pipeline_path,
            lora_path=lora_path,
            steps=steps,
            guidance_scale=guidance_scale,
            device=device,
            dtype=dtype,
            resolution=resolution,
            batch_size=batch_size,
            **extra,
        )
        self.pipeline_path = Path(pipeline_path)
        self.lora_path = Path(lora_path) if lora_path else None
        self.steps = steps
        self.guidance_scale = guidance_scale
        self.device = device
        self.dtype = dtype
        self.resolution = resolution
        self.batch_size = batch_size
        self.call_kwargs = extra
        self._pipeline: Any = None

    def identity(self) -> dict[str, Any]:
        """The configuration plus fingerprints of the weight folders (retrained weights are a new model)."""
        weights = {"pipeline": folder_fingerprint(self.pipeline_path)}
        if self.lora_path is not None:
            weights["lora"] = folder_fingerprint(self.lora_path)
        return {**super().identity(), "weights": weights}

    def generate(self, requests: Sequence[GenerationRequest]) -> list[GenerationResult]:
        """One result per request, in order; a load error fails every request, a generation error only its own.
        A batch's images are encoded to PNG on other threads while the next batch is drawn (an encoding of
        a 1024-pixel image takes about 0.4 s of CPU, time the pipeline's device would otherwise wait)."""
        try:
            pipeline = self._loaded_pipeline()
        except Exception as error:  # any load error (missing file, bad config) is this batch's failure
            reason = f"could not load the diffusers pipeline: {type(error).__name__}: {error}"
            return [GenerationResult(sample_id=r.sample_id, failure=reason) for r in requests]
        outcomes: list[Future[GenerationResult] | GenerationResult] = []
        with ThreadPoolExecutor(
            max_workers=_encoding_threads(), thread_name_prefix="diffusers-png"
        ) as encoder:
            for start in range(0, len(requests), self.batch_size):
                for drawn in self._generate_batch(pipeline, requests[start : start + self.batch_size]):
                    outcomes.append(
                        drawn
                        if isinstance(drawn, GenerationResult)
                        else encoder.submit(self._encoded, *drawn)
                    )
            return [outcome.result() if isinstance(outcome, Future) else outcome for outcome in outcomes]

    def _loaded_pipeline(self) -> Any:
        if self._pipeline is None:
            self._pipeline = self._load_pipeline()
        return self._pipeline

    def _load_pipeline(self) -> Any:
        """Load the pipeline (and LoRA) from local folders only."""
        if not (self.pipeline_path / "model_index.json").is_file():
            raise FileNotFoundError(
                f"{self.pipeline_path} is not a diffusers pipeline folder (no model_index.json there)"
            )
        if self.lora_path is not None and not self.lora_path.exists():
            raise FileNotFoundError(f"LoRA adapter {self.lora_path} does not exist")
        import torch
        from diffusers import DiffusionPipeline

        torch_dtype = getattr(torch, self.dtype, None)
        if not isinstance(torch_dtype, torch.dtype):
            raise ValueError(f"dtype {self.dtype!r} is not a torch dtype name")
        pipeline = DiffusionPipeline.from_pretrained(
            self.pipeline_path, dtype=torch_dtype, local_files_only=True
        )
        if self.lora_path is not None:
            with _text_encoders_warning_dropped(adapter_is_denoiser_only(self.lora_path)):
                pipeline.load_lora_weights(self.lora_path)
        pipeline.set_progress_bar_config(disable=True)
        return pipeline.to(self.device)

    def _generate_batch(
        self, pipeline: Any, batch: Sequence[GenerationRequest]
    ) -> list[Drawn | GenerationResult]:
        """Each request's image from one pipeline call (with its request and prompt, to encode), or its
        failure; when that call fails, from one call per request."""
        prompts = [self._fitted(pipeline, request.prompt) for request in batch]
        if len(batch) > 1:
            try:
                images = self._render(pipeline, batch, prompts)
            except Exception as error:  # retried one by one below, so only a bad request fails
                logger.info(
                    "a batch of %d failed (%s); generating its requests one at a time", len(batch), error
                )
            else:
                return list(zip(batch, prompts, images, strict=True))
        return [
            self._generate_one(pipeline, request, prompt)
            for request, prompt in zip(batch, prompts, strict=True)
        ]

    def _generate_one(
        self, pipeline: Any, request: GenerationRequest, prompt: Prompts
    ) -> Drawn | GenerationResult:
        try:
            (image,) = self._render(pipeline, [request], [prompt])
        except Exception as error:  # one bad request must not stop the others
            reason = (
                f"diffusers generation failed for sample {request.sample_id}: {type(error).__name__}: {error}"
            )
            return GenerationResult(sample_id=request.sample_id, failure=reason)
        return request, prompt, image

    def _encoded(self, request: GenerationRequest, prompt: Prompts, image: Any) -> GenerationResult:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        meta = {"backend": BACKEND_NAME, "lora": self.lora_path is not None, "steps": self.steps}
        meta |= prompt_meta(prompt)
        return GenerationResult(sample_id=request.sample_id, image=buffer.getvalue(), meta=meta)

    def _fitted(self, pipeline: Any, prompt: str) -> Prompts:
        """The prompt within each text encoder's limit; the first cut is said once for the pipeline folder."""
        inputs = pipeline_text_inputs(pipeline, self.call_kwargs)
        fitted = fit_prompts(prompt, inputs)
        if any(text.cut for text in fitted.values()):
            limits = ", ".join(f"{i.argument} {i.limit}" for i in inputs if i.limit is not None)
            if _cut_not_said_yet((str(self.pipeline_path), limits)):
                logger.warning(
                    "%s: prompts longer than a text encoder reads (tokens: %s) are cut at the last whole word "
                    "that fits it; each image's meta (prompt_words_kept of prompt_words) says how much of its "
                    "prompt the model read",
                    self.pipeline_path,
                    limits,
                )
        return fitted

    def _render(
        self, pipeline: Any, requests: Sequence[GenerationRequest], prompts: list[Prompts]
    ) -> list[Any]:
        """One PIL image per request from one pipeline call, each from its own seed, at its requested size;
        each text encoder gets its own fitted prompts."""
        import torch
        from PIL import Image

        size = {"height": self.resolution, "width": self.resolution} if self.resolution else {}
        per_encoder = {argument: [prompt[argument].text for prompt in prompts] for argument in prompts[0]}
        output = pipeline(
            per_encoder.pop("prompt"),
            **per_encoder,
            num_inference_steps=self.steps,
            guidance_scale=self.guidance_scale,
            generator=[torch.Generator(device=self.device).manual_seed(r.seed) for r in requests],
            **size,
            **self.call_kwargs,
        )
        images = []
        for request, image in zip(requests, output.images, strict=True):
            image = image.convert("RGB")
            if image.size != (request.width, request.height):
                image = image.resize((request.width, request.height), Image.Resampling.LANCZOS)
            images.append(image)
        return images


def prompt_meta(prompt: Prompts) -> dict[str, Any]:
    """What an image's meta says of a cut prompt: the most words any text encoder read of all, and each
    encoder's count when they differ (nothing when no encoder cut it)."""
    if not any(text.cut for text in prompt.values()):
        return {}
    kept = {argument: text.words_kept for argument, text in prompt.items()}
    meta: dict[str, Any] = {
        "prompt_words_kept": max(kept.values()),
        "prompt_words": next(iter(prompt.values())).words,
    }
    if len(set(kept.values())) > 1:
        meta["prompt_words_kept_per_encoder"] = kept
    return meta


def _cut_not_said_yet(cut: tuple[str, str]) -> bool:
    """Whether this process has not yet warned about prompts cut for ``cut`` (pipeline folder, limits)."""
    with _CUTS_SAID_LOCK:
        if cut in _CUTS_SAID:
            return False
        _CUTS_SAID.add(cut)
        return True


def _encoding_threads() -> int:
    """Threads encoding PNGs (Pillow's zlib encoder runs outside the GIL): up to four, never more than the cores."""
    return max(1, min(4, os.cpu_count() or 1))


# The file diffusers' ``save_lora_weights`` writes and ``load_lora_weights(folder)`` reads (its ``weight_name``).
ADAPTER_FILE = "pytorch_lora_weights.safetensors"
# The prefixes of a diffusers LoRA file's keys for the denoiser (UNet families, DiT families).
_DENOISER_PREFIXES = ("unet.", "transformer.")
# What diffusers' LoRA loader logs for each text encoder that gets no weights from the adapter.
_NO_TEXT_ENCODER_KEYS = "No LoRA keys associated to"
_DIFFUSERS_LORA_LOGGER = "diffusers.loaders.lora_base"


def adapter_is_denoiser_only(lora_path: Path) -> bool:
    """Whether the adapter (a safetensors file, or a folder holding diffusers' file) holds weights for the
    denoiser alone, as SciIR's fine-tuning saves it; False where that cannot be told from its header."""
    path = lora_path / ADAPTER_FILE if lora_path.is_dir() else lora_path
    try:
        with path.open("rb") as file:
            size = int.from_bytes(file.read(8), "little")
            header = json.loads(file.read(size))
    except (OSError, ValueError):
        return False
    keys = [key for key in header if key != "__metadata__"] if isinstance(header, dict) else []
    return bool(keys) and all(key.startswith(_DENOISER_PREFIXES) for key in keys)


class _DropTextEncoderWarning(logging.Filter):
    """Drops diffusers' warning that a text encoder got no LoRA keys, logged by one thread."""

    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread or not record.getMessage().startswith(_NO_TEXT_ENCODER_KEYS)


@contextmanager
def _text_encoders_warning_dropped(active: bool) -> Iterator[None]:
    """While this thread loads an adapter with no text-encoder weights at all (``active``), diffusers' warning
    for each text encoder (that it got no LoRA keys) only repeats what the file shows, and its own text calls
    it safe to ignore then: it is dropped. Kept for any other adapter, such as one whose text-encoder
    weights carry names the loader does not know."""
    if not active:
        yield
        return
    loader_logger = logging.getLogger(_DIFFUSERS_LORA_LOGGER)
    drop = _DropTextEncoderWarning(threading.get_ident())
    loader_logger.addFilter(drop)
    try:
        yield
    finally:
        loader_logger.removeFilter(drop)
