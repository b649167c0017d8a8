"""Long lists in the log: a count and the first few items, the whole list in a file the log names.

A warning that lists 330 sample ids spreads over 60 log lines and hides everything around it; a user
needs to know how many, see a few, and find them all.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

SHOWN = 5
LIST_FOLDER = Path("data/08_reporting/lists")


def log_list(logger: logging.Logger, level: int, what: str, items: Sequence[str], file_stem: str) -> None:
    """Log ``<count> <what>``: every item when there are at most ``SHOWN``, else the first ``SHOWN`` and
    the path of a file (``data/08_reporting/lists/<file_stem>.txt``, one item per line) holding all."""
    if not items:
        return
    if len(items) <= SHOWN:
        logger.log(level, "%d %s: %s", len(items), what, ", ".join(items))
        return
    path = LIST_FOLDER / f"{file_stem}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{item}\n" for item in items), encoding="utf-8")
    logger.log(level, "%d %s: %s ... (all listed in %s)", len(items), what, ", ".join(items[:SHOWN]), path)
