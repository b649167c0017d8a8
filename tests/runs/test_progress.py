"""Progress of model-calling nodes: a bar only on a terminal, the figures logged once at the end."""

from __future__ import annotations

import io
import logging

from sciir.backends.base import VLMResult
from sciir.runs.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _results() -> list[VLMResult]:
    return [
        VLMResult(output={"a": 1}),
        VLMResult(output={"a": 1}, cached=True),
        VLMResult.failed("scripted"),
    ]


def test_the_figures_are_logged_once_at_the_end_and_nothing_is_drawn_off_a_terminal(caplog):
    stream = io.StringIO()
    with caplog.at_level(logging.INFO, logger="sciir.runs.progress"):
        with Progress("judge_generations", 5, stream=stream) as progress:
            for result in _results():
                progress.add(result)
            progress.skip(1)
            progress.not_needed(1)
        progress.close()  # closing twice logs once
    [record] = [r for r in caplog.records if r.name == "sciir.runs.progress"]
    assert record.levelno == logging.INFO
    assert record.getMessage().startswith("judge_generations: 4/4 requests in ")
    assert record.getMessage().endswith("2 failed, 1 from the cache")
    assert "requests/s" in record.getMessage()
    assert stream.getvalue() == ""


def test_a_terminal_gets_a_bar_with_rate_failures_and_cache_hits():
    terminal = Terminal()
    with Progress("annotate", 3, stream=terminal) as progress:
        for result in _results():
            progress.add(result)
    drawn = terminal.getvalue()
    assert "annotate" in drawn and "3/3" in drawn
    assert "failed=1" in drawn and "cached=1" in drawn
