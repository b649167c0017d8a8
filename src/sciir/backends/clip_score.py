"""CLIPScore (Hessel et al. 2021) with a local CLIP model: ``2.5 * max(cos(image, text), 0)``.

The model folder holds a transformers ``CLIPModel`` with its tokenizer and image-processor
configuration. Images are prepared by the Pillow image processor (``CLIPImageProcessorPil``), so
torchvision is not needed. Texts longer than CLIP's context (77 tokens) are cut, as in the paper's
reference implementation. torch and transformers are imported on the first call only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sciir.backends.base import Backend

if TYPE_CHECKING:
    from PIL import Image

CLIPSCORE_WEIGHT = 2.5


def clip_score(cosine: float, weight: float = CLIPSCORE_WEIGHT) -> float:
    """Hessel et al.'s rescaled, clipped cosine similarity."""
    return weight * max(cosine, 0.0)


class CLIPScorer(Backend):
    """Scores (image, text) pairs with CLIPScore.

    Config: ``model_path`` (the local CLIP folder), ``device`` (default cpu), ``batch_size`` (pairs
    embedded together, default 16), ``text_prefix`` (prepended to every text with a space; Hessel et
    al. use "A photo depicts"; empty for none).
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "cpu",
        batch_size: int = 16,
        text_prefix: str = "A photo depicts",
    ) -> None:
        super().__init__(model_path=str(model_path), device=device, text_prefix=text_prefix)
        self.model_path = Path(model_path)
        self.device = device
        self.batch_size = batch_size
        self.text_prefix = text_prefix
        self._loaded: tuple[Any, Any, Any] | None = None

    def captions(self, texts: Sequence[str]) -> list[str]:
        """The texts as CLIP reads them (with the prefix)."""
        return [f"{self.text_prefix} {text}" if self.text_prefix else text for text in texts]

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> list[float]:
        """CLIPScore of each (image, text) pair, in order."""
        if len(images) != len(texts):
            raise ValueError(
                f"CLIPScore needs one text per image, got {len(images)} images and {len(texts)} texts"
            )
        scores: list[float] = []
        for start in range(0, len(images), self.batch_size):
            end = start + self.batch_size
            scores += [clip_score(c) for c in self.cosines(images[start:end], texts[start:end])]
        return scores

    def cosines(self, images: Sequence[Image.Image], texts: Sequence[str]) -> list[float]:
        """Cosine similarity of each pair's image and text embeddings (one batch)."""
        import torch

        model, tokenizer, image_processor = self.load()
        tokens = tokenizer(
            self.captions(texts),
            padding=True,
            truncation=True,
            max_length=model.config.text_config.max_position_embeddings,
            return_tensors="pt",
        )
        pixels = image_processor(images=[image.convert("RGB") for image in images], return_tensors="pt")
        with torch.inference_mode():
            text = model.get_text_features(**tokens.to(self.device)).pooler_output
            image = model.get_image_features(
                pixel_values=pixels["pixel_values"].to(self.device)
            ).pooler_output
        similarity = torch.nn.functional.cosine_similarity(image.float(), text.float(), dim=-1)
        return [float(value) for value in similarity.cpu()]

    def load(self) -> tuple[Any, Any, Any]:
        """Model, tokenizer and image processor, loaded once; FileNotFoundError for a missing folder."""
        if self._loaded is None:
            self._loaded = self._read_folder()
        return self._loaded

    def _read_folder(self) -> tuple[Any, Any, Any]:
        if not self.model_path.is_dir():
            raise FileNotFoundError(f"CLIPScore: no CLIP model folder at {self.model_path}")
        from transformers import AutoTokenizer, CLIPImageProcessorPil, CLIPModel

        # transformers types PreTrainedModel.to as the unbound torch.nn.Module.to it wraps (functools.wraps)
        model = CLIPModel.from_pretrained(self.model_path).to(self.device).eval()  # type: ignore[arg-type]
        tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        image_processor = CLIPImageProcessorPil.from_pretrained(self.model_path)
        return model, tokenizer, image_processor
