"""Prompts fitted to each text encoder's token limit, cut at a word boundary.

CLIP text encoders read at most 77 tokens; diffusers cuts a longer prompt itself and logs a warning per
prompt (and the tokenizer another), so a benchmark of long Sci-RCoT prompts floods the console. Here a
prompt that does not fit is cut at the last whole word that fits, the generator says so once, and the
image's manifest records what was kept. A pipeline with several text encoders takes one prompt argument
per encoder (``prompt``, ``prompt_2``, ``prompt_3``), and each gets the prompt fitted to its own limit: a
Flux or SD3 pipeline's T5 encoder reads up to the pipeline's ``max_sequence_length`` (512 and 256 tokens
by default) where its CLIP encoders stop at 77, so a long plan reaches T5 whole rather than cut to CLIP's
length.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

# Tokenizers without a real limit report a huge model_max_length (1e30); those are not fitted.
_NO_LIMIT = 100_000
# Each text encoder's tokenizer attribute on a pipeline and the call argument its prompt goes in.
_TEXT_INPUTS = (("tokenizer", "prompt"), ("tokenizer_2", "prompt_2"), ("tokenizer_3", "prompt_3"))
# The call argument that sets how many tokens a pipeline's T5 encoder reads.
_SEQUENCE_ARGUMENT = "max_sequence_length"


@dataclass(frozen=True)
class FittedPrompt:
    text: str
    words_kept: int
    words: int

    @property
    def cut(self) -> bool:
        return self.words_kept < self.words


@dataclass(frozen=True)
class TextInput:
    """One text encoder's prompt argument, its tokenizer and the tokens it reads (None: no limit)."""

    argument: str
    tokenizer: Any
    limit: int | None


def _call_parameters(pipeline: Any) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(pipeline.__call__).parameters)
    except (TypeError, ValueError):
        return {}


def _token_limit(tokenizer: Any, sequence_limit: int | None) -> int | None:
    """The tokens ``tokenizer``'s encoder reads: its own limit, and for T5 the pipeline's sequence length."""
    limit = tokenizer.model_max_length if tokenizer.model_max_length < _NO_LIMIT else None
    if sequence_limit is not None and type(tokenizer).__name__.startswith("T5"):
        limit = sequence_limit if limit is None else min(limit, sequence_limit)
    return limit


def pipeline_text_inputs(pipeline: Any, call_kwargs: dict[str, Any] | None = None) -> list[TextInput]:
    """The pipeline's text encoders' inputs: ``prompt`` for its first tokenizer, ``prompt_2`` and
    ``prompt_3`` for the others its call takes; a T5 encoder reads ``max_sequence_length`` tokens (the
    call's ``call_kwargs`` value, else its default)."""
    parameters = _call_parameters(pipeline)
    sequence = (call_kwargs or {}).get(_SEQUENCE_ARGUMENT)
    if sequence is None and _SEQUENCE_ARGUMENT in parameters:
        default = parameters[_SEQUENCE_ARGUMENT].default
        sequence = default if isinstance(default, int) else None
    inputs = []
    for attribute, argument in _TEXT_INPUTS:
        tokenizer = getattr(pipeline, attribute, None)
        if tokenizer is None or (argument != "prompt" and argument not in parameters):
            continue
        inputs.append(TextInput(argument, tokenizer, _token_limit(tokenizer, sequence)))
    return inputs


def _fits(text: str, tokenizer: Any, limit: int) -> bool:
    # verbose=False: counting a long prompt must not log the tokenizer's own "too long" warning.
    return len(tokenizer(text, truncation=False, verbose=False)["input_ids"]) <= limit


def fit_prompt(prompt: str, tokenizer: Any, limit: int | None) -> FittedPrompt:
    """``prompt`` as it is when it fits ``limit`` tokens of ``tokenizer`` (special tokens counted; None: no
    limit), else its longest prefix of whole words that does (found by bisection)."""
    words = prompt.split()
    if limit is None or _fits(prompt, tokenizer, limit):
        return FittedPrompt(prompt, len(words), len(words))
    low, high = 0, len(words)  # words[:low] fits; words[:high] does not
    while high - low > 1:
        middle = (low + high) // 2
        if _fits(" ".join(words[:middle]), tokenizer, limit):
            low = middle
        else:
            high = middle
    return FittedPrompt(" ".join(words[:low]), low, len(words))


def fit_prompts(prompt: str, inputs: list[TextInput]) -> dict[str, FittedPrompt]:
    """``prompt`` fitted to each text input, by its call argument (``prompt`` alone for no tokenizer)."""
    if not inputs:
        return {"prompt": fit_prompt(prompt, None, None)}
    return {
        text_input.argument: fit_prompt(prompt, text_input.tokenizer, text_input.limit)
        for text_input in inputs
    }
