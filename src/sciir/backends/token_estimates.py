"""Rough token counts of a request before it is sent (a rate limiter's budget, a dry run's estimate).

Text at about four characters a token; an image at one token per 28x28-pixel patch, as Qwen2.5-VL and
Qwen3-VL count (other models' counts are of the same order: OpenAI bills less). A server's reported
usage is the measurement; these are estimates.
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 4
IMAGE_PATCH_PX = 28


def text_tokens(chars: int) -> float:
    return chars / CHARS_PER_TOKEN


def image_tokens(width: float, height: float) -> int:
    return math.ceil(width / IMAGE_PATCH_PX) * math.ceil(height / IMAGE_PATCH_PX)
