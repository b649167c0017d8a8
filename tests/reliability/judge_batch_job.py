"""An evaluation-like batch for the kill-and-resume test, run in its own process.

Judges ``--count`` synthetic figures through the cached ``openai`` backend and, once done, prints one
JSON line per request: its index and its output (or failure). Usage:
    python judge_batch_job.py BASE_URL CACHE_PATH --count N --concurrency C
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Sequence

from PIL import Image

from sciir.backends.base import VLMRequest
from sciir.backends.cache import CachedVLM, ResponseCache
from sciir.backends.openai_compat import OpenAICompatibleVLM
from sciir.tasks.judge import build_judge_request


def figure_png(number: int) -> bytes:
    """A small image that differs per figure, so every request has its own cache key."""
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (number % 256, (number // 256) % 256, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def judge_requests(count: int) -> list[VLMRequest]:
    """``count`` judge requests with a two-question checklist each."""
    return [
        build_judge_request(
            f"figure {n}",
            [
                {
                    "id": f"s{n}-q{q}",
                    "question": f"Is part {q} drawn?",
                    "layer": 2,
                    "track": "entity",
                    "expected_text": None,
                }
                for q in range(2)
            ],
            figure_png(n),
        )
        for n in range(count)
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("cache_path")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    args = parser.parse_args(argv)
    judge = OpenAICompatibleVLM(base_url=args.base_url, model="judge", concurrency=args.concurrency)
    results = CachedVLM(judge, ResponseCache(args.cache_path)).generate(judge_requests(args.count))
    for index, result in enumerate(results):
        print(json.dumps({"index": index, "output": result.output, "failure": result.failure}))


if __name__ == "__main__":
    main()
