"""Loading a local ``transformers`` vision-language model, and the torch helpers its backend runs on.

The model and its processor are read from a local folder only, the weights loaded straight onto their
device, with the grammars its replies are decoded under (:mod:`sciir.backends.schema_grammar`). torch
and transformers are imported only inside these functions, so importing this module imports neither.

Without torchvision: Qwen-VL processors also hold a video processor, and every video processor class
needs torchvision, so ``AutoProcessor`` refuses to load them (transformers issue #43986) even for
image-only use. Then the model's processor class is loaded without its video processor, with the
Pillow image processor that ``AutoImageProcessor`` picks when torchvision is absent
(``Qwen2VLImageProcessorPil``); images are prepared exactly as the full processor prepares them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sciir.backends.schema_grammar import SchemaGrammars


@dataclass(frozen=True)
class LoadedModel:
    """A model ready to generate: weights on ``device``, its processor, and its tokenizer's grammars."""

    model: Any
    processor: Any
    device: str
    grammars: SchemaGrammars


def load_model(model_path: Path, device: str, dtype: str, max_string_chars: int | None) -> LoadedModel:
    """Model and processor from the local folder only, the weights loaded straight onto the device;
    the processor pads on the left for batching."""
    if not (model_path / "config.json").is_file():
        state = "does not exist" if not model_path.exists() else "has no config.json"
        raise FileNotFoundError(f"model folder {model_path} {state}")
    from transformers import AutoModelForImageTextToText

    device = resolved_device(device)
    processor = load_processor(model_path)
    processor.tokenizer.padding_side = "left"  # generation continues every row from its last token
    model = AutoModelForImageTextToText.from_pretrained(
        model_path, dtype=torch_dtype(dtype), device_map=device, local_files_only=True
    ).eval()
    vocab_size = model.get_output_embeddings().weight.shape[0]  # the logits' width, padding included
    stop_ids = eos_ids(model.generation_config.eos_token_id)
    grammars = SchemaGrammars(processor.tokenizer, vocab_size, stop_ids, max_string_chars)
    return LoadedModel(model, processor, device, grammars)


def load_processor(model_path: Path) -> Any:
    """The model's processor; without torchvision, its image-only variant (see the module docstring)."""
    from transformers import AutoConfig, AutoProcessor
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING
    from transformers.utils.import_utils import is_torchvision_available  # transformers.utils: no re-export

    config = AutoConfig.from_pretrained(model_path, local_files_only=True)
    # transformers types every auto mapping's value as the tokenizer mapping's (slow, fast) pair of classes;
    # the processor mapping's value is one class.
    processor_class: type[Any] | None = PROCESSOR_MAPPING.get(type(config), None)  # type: ignore[assignment]
    if (
        is_torchvision_available()
        or processor_class is None
        or "video_processor" not in processor_class.get_attributes()
    ):
        return AutoProcessor.from_pretrained(model_path, local_files_only=True)
    return _without_video_processor(processor_class).from_pretrained(model_path, local_files_only=True)


def _without_video_processor(processor_class: type[Any]) -> type[Any]:
    """A subclass of ``processor_class`` that loads and needs no video processor.

    ``ProcessorMixin`` takes the list of sub-processors to load and type-check from ``__init__``'s
    signature, so a signature without ``video_processor`` leaves it out.
    """

    class ImageOnlyProcessor(processor_class):  # type: ignore[misc]  # a class known at run time only
        def __init__(
            self, image_processor: Any = None, tokenizer: Any = None, chat_template: Any = None, **kwargs: Any
        ) -> None:
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


def top_alternatives(logprobs: Any, count: int, decode: Callable[[list[int]], str]) -> list[dict[str, Any]]:
    """The ``count`` most likely tokens of one row of log-probabilities, most likely first, as
    ``{"token": text, "logprob": value}`` (the entries an OpenAI-compatible server returns)."""
    values, token_ids = logprobs.topk(count)
    return [
        {"token": decode([token]), "logprob": float(value)}
        for value, token in zip(values.tolist(), token_ids.tolist(), strict=True)
    ]


def resolved_device(device: str) -> str:
    """``device``, with ``auto`` resolved to ``cuda`` when a GPU is visible and ``cpu`` otherwise."""
    import torch

    if device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def torch_dtype(name: str) -> Any:
    """The torch dtype named ``name`` (``auto`` is passed on: the checkpoint's own dtype)."""
    import torch

    if name == "auto":
        return name
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"dtype {name!r} is not a torch dtype name (float32, bfloat16, float16 ...) or auto")
    return dtype


def eos_ids(eos_token_id: int | list[int] | None) -> frozenset[int]:
    """The end-of-reply token ids of a generation config (one id, a list, or none)."""
    if eos_token_id is None:
        return frozenset()
    return frozenset([eos_token_id] if isinstance(eos_token_id, int) else eos_token_id)
