"""Prompts fitted to a text encoder's token limit, cut at a word boundary.

CLIP text encoders read at most 77 tokens; diffusers cuts a longer prompt itself and logs a warning per
prompt (and the tokenizer another), so a benchmark of long Sci-RCoT prompts floods the console. Here a
prompt that does not fit is cut at the last whole word that fits every tokenizer of the pipeline, the
generator says so once, and the image's manifest records what was kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# Tokenizers without a real limit report a huge model_max_length (1e30); those are not fitted.
_NO_LIMIT = 100_000
_TOKENIZER_ATTRIBUTES = ("tokenizer", "tokenizer_2")


@dataclass(frozen=True)
class FittedPrompt:
    text: str
    words_kept: int
    words: int

    @property
    def cut(self) -> bool:
        return self.words_kept < self.words


def pipeline_tokenizers(pipeline: Any) -> list[Any]:
    """The pipeline's CLIP-style tokenizers that have a token limit."""
    found = (getattr(pipeline, name, None) for name in _TOKENIZER_ATTRIBUTES)
    return [
        tokenizer for tokenizer in found if tokenizer is not None and tokenizer.model_max_length < _NO_LIMIT
    ]


def _fits(text: str, tokenizers: Sequence[Any]) -> bool:
    # verbose=False: counting a long prompt must not log the tokenizer's own "too long" warning.
    return all(
        len(tokenizer(text, truncation=False, verbose=False)["input_ids"]) <= tokenizer.model_max_length
        for tokenizer in tokenizers
    )


def fit_prompt(prompt: str, tokenizers: Sequence[Any]) -> FittedPrompt:
    """``prompt`` as it is when it fits every tokenizer (special tokens counted), else its longest prefix
    of whole words that does (found by bisection)."""
    words = prompt.split()
    if not tokenizers or _fits(prompt, tokenizers):
        return FittedPrompt(prompt, len(words), len(words))
    low, high = 0, len(words)  # words[:low] fits; words[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if _fits(" ".join(words[:middle]), tokenizers):
            low = middle
        else:
            high = middle
    return FittedPrompt(" ".join(words[:low]), low, len(words))
